/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Queue pairs: the send and receive rings the provider produces into and
 * the kernel consumes from, and the work request encoders.
 *
 * Posting never enters the kernel except for the send doorbell: at most one
 * write() of IB_USER_VERBS_CMD_POST_SEND with no work requests per
 * ibv_post_send() call or per wr_complete(), after the producer index
 * covering every new WQE has been published, and none while the kernel's
 * requester says it will read that index anyway (send_doorbell()). The
 * doorbell goes through a per-QP function pointer so the unit tests can
 * count it without a kernel.
 */
#ifndef SROCE_QP_H
#define SROCE_QP_H

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

static_assert(SROCE_SEND_FENCE == IBV_SEND_FENCE);
static_assert(SROCE_SEND_SIGNALED == IBV_SEND_SIGNALED);
static_assert(SROCE_SEND_SOLICITED == IBV_SEND_SOLICITED);
static_assert(SROCE_SEND_INLINE == IBV_SEND_INLINE);
/* The ring uses the verbs numbering; compare across the two enums. */
template <typename A, typename B> constexpr bool same_value(A a, B b) noexcept
{
	return static_cast<long>(a) == static_cast<long>(b);
}
static_assert(same_value(SROCE_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE));
static_assert(same_value(SROCE_WR_RDMA_WRITE_WITH_IMM,
			 IBV_WR_RDMA_WRITE_WITH_IMM));
static_assert(same_value(SROCE_WR_SEND, IBV_WR_SEND));
static_assert(same_value(SROCE_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM));
static_assert(same_value(SROCE_WR_RDMA_READ, IBV_WR_RDMA_READ));
static_assert(same_value(SROCE_WR_ATOMIC_CMP_AND_SWP,
			 IBV_WR_ATOMIC_CMP_AND_SWP));
static_assert(same_value(SROCE_WR_ATOMIC_FETCH_AND_ADD,
			 IBV_WR_ATOMIC_FETCH_AND_ADD));
static_assert(same_value(SROCE_WR_LOCAL_INV, IBV_WR_LOCAL_INV));
static_assert(same_value(SROCE_WR_BIND_MW, IBV_WR_BIND_MW));
static_assert(same_value(SROCE_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV));

/* The send flags a WQE may carry. */
inline constexpr unsigned int send_flags_mask =
	SROCE_SEND_FENCE | SROCE_SEND_SIGNALED | SROCE_SEND_SOLICITED |
	SROCE_SEND_INLINE;

/* Work request opcodes (as a bit per ibv_wr_opcode) a QP type may post. */
constexpr uint32_t op_bit(enum ibv_wr_opcode op) noexcept
{
	return 1U << static_cast<unsigned>(op);
}
uint32_t allowed_opcodes(enum ibv_qp_type type) noexcept;
/* The same as IBV_QP_EX_WITH_* bits, for create_qp_ex's send_ops_flags. */
uint64_t allowed_send_ops(enum ibv_qp_type type) noexcept;
/* Opcodes whose payload may be inline, and the atomics (the ABI's table). */
inline constexpr uint32_t inline_opcodes =
	static_cast<uint32_t>(SROCE_WR_INLINE_OPS);
inline constexpr uint32_t atomic_opcodes =
	static_cast<uint32_t>(SROCE_WR_ATOMIC_OPS);
static_assert(inline_opcodes == SROCE_WR_INLINE_OPS &&
	      atomic_opcodes == SROCE_WR_ATOMIC_OPS);
static_assert(inline_opcodes ==
	      (op_bit(IBV_WR_SEND) | op_bit(IBV_WR_SEND_WITH_IMM) |
	       op_bit(IBV_WR_SEND_WITH_INV) | op_bit(IBV_WR_RDMA_WRITE) |
	       op_bit(IBV_WR_RDMA_WRITE_WITH_IMM)));
/* The local buffer of an atomic holds the 8-byte original value. */
inline constexpr uint32_t atomic_len = 8;

/*
 * A BIND_MW WQE (include/sroce-abi.h): imm_or_inv = the window's new R_Key,
 * rkey = the MR's lkey, remote_addr/compare_add = start/length, swap = the
 * IBV_ACCESS_REMOTE_* rights.
 */
/*
 * May a BIND_MW of this context bind mw with the new rkey as b says? (The
 * kernel checks the rest: the MR's rights and bounds, the window's state.)
 */
bool bind_ok(const struct ibv_context *ctx, const struct ibv_mw *mw,
	     uint32_t rkey, const struct ibv_mw_bind_info &b) noexcept;
void encode_bind(sroce_send_wqe &h, uint32_t rkey,
		 const struct ibv_mw_bind_info &b) noexcept;

/* Rings the send doorbell for qp; returns 0 or an errno. */
using doorbell_fn = int (*)(struct ibv_qp *qp) noexcept;

/* The real one: ibv_cmd_post_send() with no work requests. */
int kernel_doorbell(struct ibv_qp *qp) noexcept;

struct send_queue {
	spinlock lock;
	mapping map;
	std::optional<ring_producer> ring; /* empty: the QP has no SQ */
	uint32_t max_sge = 0;		   /* SGEs that fit a WQE slot */
	uint32_t max_inline = 0;	   /* inline bytes that fit a slot */

	/*
	 * ibv_qp_ex builder state, from wr_start() to wr_complete() or
	 * wr_abort(), all under the lock: the WQEs written so far (not yet
	 * published), the one being built, and the first error.
	 */
	uint32_t wr_count = 0;
	uint32_t wr_free = 0;
	int wr_err = 0;
	sroce_send_wqe *wr_cur = nullptr;
	uint64_t wr_cur_len = 0; /* bytes the current WQE moves */
	bool wr_cur_needs_ud = false;

	bool attach(void *base, size_t len,
		    const struct ibv_qp_cap &cap) noexcept;
};

/* A QP's receive queue, and the ring of a shared receive queue (srq.h). */
struct recv_queue {
	spinlock lock;
	mapping map;
	std::optional<ring_producer> ring; /* empty: SRQ or no RQ */
	uint32_t max_sge = 0;

	bool attach(void *base, size_t len,
		    const struct ibv_qp_cap &cap) noexcept;
	/*
	 * Bind to the ring at base (len bytes), replacing any previous one,
	 * if it holds max_wr WQEs of max_sge SGEs; false (and unchanged) if
	 * the header the kernel wrote does not.
	 */
	bool attach(void *base, size_t len, uint32_t max_wr,
		    uint32_t max_sge) noexcept;
};

struct qp {
	struct verbs_qp vqp {
	};
	doorbell_fn doorbell = kernel_doorbell;
	send_queue sq;
	recv_queue rq;
};

static_assert(std::is_standard_layout_v<qp> && offsetof(qp, vqp) == 0);

/*
 * After WQEs were published to q's send queue: ring its doorbell unless the
 * kernel's requester will look anyway (ring_producer::needs_doorbell()).
 * Returns 0 or the doorbell's errno.
 */
int send_doorbell(qp &q) noexcept;

inline qp *to_qp(struct ibv_qp *ibqp) noexcept
{
	return reinterpret_cast<qp *>(ibqp);
}

inline qp *to_qp(struct ibv_qp_ex *ibqp) noexcept
{
	return reinterpret_cast<qp *>(ibqp);
}

/*
 * Encode one work request into a slot of slot_size bytes: the 64-byte
 * header, then the SGEs or the inline bytes. Checks everything the QP's
 * type and capabilities allow; returns 0 or EINVAL (nothing is written on
 * EINVAL that a later WQE would not overwrite).
 */
int encode_send_wqe(const qp &q, const struct ibv_send_wr &wr,
		    void *slot) noexcept;
int encode_recv_wqe(const recv_queue &rq, const struct ibv_recv_wr &wr,
		    void *slot) noexcept;

/*
 * Encode the chain at wr into rq's ring (lock held, ring present) and
 * publish what fit with one release store. Returns 0, ENOMEM (full) or
 * EINVAL, with wr left at the first work request not posted; *posted is
 * how many were.
 */
int produce_recv(recv_queue &rq, struct ibv_recv_wr *&wr,
		 uint32_t &posted) noexcept;

/* create_qp_ex: EOPNOTSUPP for what this provider cannot do. */
int check_qp_init_attr(const struct ibv_qp_init_attr_ex &attr) noexcept;

/* Install the ibv_qp_ex wr_* callbacks for the send_ops_flags asked for. */
void set_qp_ex_ops(qp &q, uint64_t send_ops_flags) noexcept;

} // namespace sroce

#endif /* SROCE_QP_H */
