/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Completion queues: the kernel produces struct sroce_cqe into a mapped
 * ring, the provider consumes them without a syscall (poll_cq and the
 * ibv_cq_ex start_poll/next_poll/end_poll iterator) and hands the slots
 * back by publishing its consumer index with a release store.
 *
 * The CQE already uses ibv_wc numbering for status, opcode and wc_flags,
 * so decoding is a field-by-field copy; the immediate (network order) or
 * the invalidated rkey share one word, exactly like ibv_wc's union.
 */
#ifndef SROCE_CQ_H
#define SROCE_CQ_H

#include "abi.h"
#include "lock.h"
#include "mapping.h"
#include "ring.h"
#include "verbs_private.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace sroce
{

/* What create_cq_ex can report: exactly the IBV_WC_STANDARD_FLAGS set. */
inline constexpr uint64_t cq_supported_wc_flags =
	IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
	IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
	IBV_WC_EX_WITH_DLID_PATH_BITS;
static_assert(cq_supported_wc_flags == IBV_WC_STANDARD_FLAGS);

/* The completion flags a CQE may carry; they are IBV_WC_* values. */
inline constexpr unsigned int cqe_wc_flags_mask =
	SROCE_WC_F_GRH | SROCE_WC_F_WITH_IMM | SROCE_WC_F_IP_CSUM_OK |
	SROCE_WC_F_WITH_INV;
static_assert(SROCE_WC_F_GRH == IBV_WC_GRH);
static_assert(SROCE_WC_F_WITH_IMM == IBV_WC_WITH_IMM);
static_assert(SROCE_WC_F_IP_CSUM_OK == IBV_WC_IP_CSUM_OK);
static_assert(SROCE_WC_F_WITH_INV == IBV_WC_WITH_INV);

struct cq {
	struct verbs_cq vcq {
	};
	spinlock lock;
	mapping map;
	std::optional<ring_consumer> ring; /* empty: unusable (failed remap) */

	/*
	 * ibv_cq_ex iteration, valid between start_poll and end_poll with
	 * the lock held: a private copy of the current entry and how many
	 * entries past the published consumer index this batch has used.
	 */
	sroce_cqe cur{};
	uint32_t batch = 0;
	bool have_cur = false;

	/*
	 * Bind to the ring at base (len bytes), replacing any previous one.
	 * Checks the header the kernel wrote; false if it is unusable.
	 */
	bool attach(void *base, size_t len) noexcept;
};

static_assert(std::is_standard_layout_v<cq> && offsetof(cq, vcq) == 0);

inline cq *to_cq(struct ibv_cq *ibcq) noexcept
{
	return reinterpret_cast<cq *>(ibcq);
}

inline cq *to_cq(struct ibv_cq_ex *ibcq) noexcept
{
	return reinterpret_cast<cq *>(ibcq);
}

/* One kernel completion entry as libibverbs reports it. */
void cqe_to_wc(const sroce_cqe &cqe, struct ibv_wc &wc) noexcept;

/*
 * 0 if create_cq_ex can honour attr, else EOPNOTSUPP, or EINVAL for an
 * IBV_CQ_INIT_ATTR_MASK_PD that names no parent domain.
 */
int check_cq_ex_attr(const struct ibv_cq_init_attr_ex &attr) noexcept;

/*
 * Drop the completions of QP qpn that were not polled yet: a QP moved to
 * RESET starts with no completions in its CQs (as mlx5 does; the rdma-core
 * tests take a QP from ERR through RESET back to RTS and expect none of
 * its flushed WQEs to come back afterwards).
 */
void cq_clean(cq &c, uint32_t qpn) noexcept;

/* Install the ibv_cq_ex iterator and the read_* callbacks for wc_flags. */
void set_cq_ex_ops(cq &c, uint64_t wc_flags) noexcept;

} // namespace sroce

#endif /* SROCE_CQ_H */
