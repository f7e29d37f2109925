/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared receive queues: a receive ring like a QP's RQ (same WQE format,
 * same syscall-free posting), consumed by the responders of every QP
 * attached to it. The kernel moves the posted WQEs to a new ring on a
 * resize (ibv_modify_srq with IBV_SRQ_MAX_WR) and tells us where it is;
 * the SRQ's lock is held across that whole command so that no post can
 * land in the old ring after the kernel copied it.
 *
 * The commands go through a table of function pointers so the unit tests
 * can stand in for the kernel (kernel_srq_cmds holds libibverbs' own).
 */
#ifndef SROCE_SRQ_H
#define SROCE_SRQ_H

#include "abi.h"
#include "qp.h"
#include "verbs_private.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sroce
{

struct srq {
	struct verbs_srq vsrq {
	};
	/* The ring, its lock and max_sge; no ring: unusable (failed remap). */
	recv_queue rq;
	uint32_t srq_num = 0; /* sroce_create_srq_resp.srq_num */
};

static_assert(std::is_standard_layout_v<srq> && offsetof(srq, vsrq) == 0);

inline srq *to_srq(struct ibv_srq *ibsrq) noexcept
{
	/* ibv_srq is first in verbs_srq, which is first in srq. */
	return reinterpret_cast<srq *>(ibsrq);
}

/* ibv_cmd_modify_srq's command: the core request, then sroce's tail. */
struct modify_srq_cmd {
	struct ibv_modify_srq ibv;
	struct sroce_modify_srq_cmd drv;
};
static_assert(std::is_standard_layout_v<modify_srq_cmd>);
static_assert(offsetof(modify_srq_cmd, drv) == sizeof(struct ibv_modify_srq),
	      "driver udata must directly follow the core request");
static_assert(sizeof(modify_srq_cmd) == 32);

using create_srq_resp =
	uverbs_resp<ib_uverbs_create_srq_resp, sroce_create_srq_resp>;
static_assert(offsetof(create_srq_resp, drv) ==
		      sizeof(ib_uverbs_create_srq_resp),
	      "driver udata must directly follow the core response");
static_assert(sizeof(create_srq_resp) == 40);

/* The commands create/modify/destroy issue: libibverbs' or the tests'. */
struct srq_cmds {
	int (*create)(struct ibv_pd *pd, struct ibv_srq *srq,
		      struct ibv_srq_init_attr *attr,
		      struct ibv_create_srq *cmd, size_t cmd_size,
		      struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
	int (*modify)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		      int attr_mask, struct ibv_modify_srq *cmd,
		      size_t cmd_size);
	int (*destroy)(struct ibv_srq *srq);
};
extern const srq_cmds kernel_srq_cmds;

/*
 * Map the ring the kernel described (sroce_create_srq_resp.mi, or a resize's
 * sroce_mmap_info) and bind s to it, replacing and unmapping any previous
 * ring only on success. Returns an errno. Basic and XRC SRQs alike.
 */
int map_ring(srq &s, int cmd_fd, const sroce_mmap_info &mi, uint32_t max_wr,
	     uint32_t max_sge) noexcept;

struct ibv_srq *create_srq_using(const srq_cmds &cmds, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr) noexcept;
int modify_srq_using(const srq_cmds &cmds, struct ibv_srq *ibsrq,
		     struct ibv_srq_attr *attr, int attr_mask) noexcept;
int destroy_srq_using(const srq_cmds &cmds, struct ibv_srq *ibsrq) noexcept;

} // namespace sroce

#endif /* SROCE_SRQ_H */
