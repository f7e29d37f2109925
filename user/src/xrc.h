/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * XRC (eXtended Reliable Connected transport) and RC ATOMIC_WRITE on the
 * provider side.
 *
 * XRC objects and the kernel commands they use:
 *  - XRC domain: ibv_cmd_open_xrcd / ibv_cmd_close_xrcd, no driver data;
 *  - XRC SRQ: ibv_cmd_create_srq_ex (CREATE_XSRQ) with the XRCD and CQ; the
 *    kernel answers with struct sroce_create_srq_resp exactly as for a basic
 *    SRQ, and the ring is mapped and posted to the same way (srq.h);
 *  - XRC INI QP (IBV_QPT_XRC_SEND): an RC-like QP with only a send queue,
 *    created by create_qp_ex (qp.cpp); the kernel answers with struct
 *    sroce_create_qp_resp whose rq_mi.size is 0. Each send WQE names the
 *    remote XRC SRQ in sroce_send_wqe.remote_qpn;
 *  - XRC TGT QP (IBV_QPT_XRC_RECV): created with ibv_cmd_create_qp_ex2 and
 *    the XRCD, or opened by number with ibv_cmd_open_qp; it has no rings and
 *    the kernel returns no driver data for it, so post_send and post_recv on
 *    it fail with EINVAL.
 *
 * The commands go through a table so the unit tests can stand in for the
 * kernel; kernel_xrc_cmds holds libibverbs' own.
 */
#ifndef SROCE_XRC_H
#define SROCE_XRC_H

#include "abi.h"
#include "qp.h"
#include "srq.h"
#include "verbs_private.h"

#include <cstddef>
#include <cstdint>

/*
 * libibverbs 44's private commands for XRC domains and opened QPs, which
 * verbs_private.h does not declare (they are IBVERBS_PRIVATE_34 symbols like
 * the others; prototypes as in rdma-core 44's driver.h).
 */
extern "C" {

struct ibv_open_xrcd {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_open_xrcd> core;
};
struct ibv_open_qp {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_open_qp> core;
};

int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);

} /* extern "C" */

SROCE_ASSERT_SIZE(ibv_open_xrcd, 24);
SROCE_ASSERT_SIZE(ibv_open_qp, 40);
SROCE_ASSERT_SIZE(ib_uverbs_open_xrcd_resp, 4);

namespace sroce
{

/*
 * RC ATOMIC_WRITE (IBTA 1.5, IBV_WR_ATOMIC_WRITE): everything is built and
 * unit-tested, but create_qp_ex refuses IBV_QP_EX_WITH_ATOMIC_WRITE and
 * post_send refuses the opcode with EOPNOTSUPP until sroce.ko executes it;
 * then flip this, and the kernel advertises IBV_DEVICE_ATOMIC_WRITE.
 */
inline constexpr bool kAtomicWriteSupported = true;
static_assert(same_value(SROCE_WR_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE));
/* ATOMIC_WRITE moves exactly one 64-bit value. */
inline constexpr uint32_t atomic_write_len = 8;

/*
 * Encode an ATOMIC_WRITE work request (IBV_WR_ATOMIC_WRITE through
 * ibv_post_send: the value is the 8 bytes its scatter list names) into the
 * slot: rkey/remote_addr from wr.wr.rdma, the 8 bytes copied as they are in
 * memory into compare_add, no SGEs, no inline data. EINVAL unless the list
 * holds exactly 8 bytes; EOPNOTSUPP while !kAtomicWriteSupported unless
 * enabled (for the tests) is true.
 */
int encode_atomic_write_wqe(const qp &q, const struct ibv_send_wr &wr,
			    void *slot,
			    bool enabled = kAtomicWriteSupported) noexcept;
/* The header fields of an ATOMIC_WRITE WQE (also used by wr_atomic_write). */
void set_atomic_write(sroce_send_wqe &h, uint32_t rkey, uint64_t remote_addr,
		      const void *value) noexcept;

/* The commands the XRC verbs issue: libibverbs' or the tests'. */
struct xrc_cmds {
	int (*open_xrcd)(struct ibv_context *context, struct verbs_xrcd *xrcd,
			 int vxrcd_size, struct ibv_xrcd_init_attr *attr,
			 struct ibv_open_xrcd *cmd, size_t cmd_size,
			 struct ib_uverbs_open_xrcd_resp *resp,
			 size_t resp_size);
	int (*close_xrcd)(struct verbs_xrcd *xrcd);
	int (*create_srq_ex)(struct ibv_context *context, struct verbs_srq *srq,
			     struct ibv_srq_init_attr_ex *attr_ex,
			     struct ibv_create_xsrq *cmd, size_t cmd_size,
			     struct ib_uverbs_create_srq_resp *resp,
			     size_t resp_size);
	int (*create_qp_ex2)(struct ibv_context *context, struct verbs_qp *qp,
			     struct ibv_qp_init_attr_ex *qp_attr,
			     struct ibv_create_qp_ex *cmd, size_t cmd_size,
			     struct ib_uverbs_ex_create_qp_resp *resp,
			     size_t resp_size);
	int (*open_qp)(struct ibv_context *context, struct verbs_qp *qp,
		       int vqp_sz, struct ibv_qp_open_attr *attr,
		       struct ibv_open_qp *cmd, size_t cmd_size,
		       struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
	/* Basic SRQs (create_srq_ex of IBV_SRQT_BASIC) and SRQ destroy. */
	const srq_cmds *srq;
};
extern const xrc_cmds kernel_xrc_cmds;

struct ibv_xrcd *open_xrcd_using(const xrc_cmds &cmds,
				 struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr) noexcept;
int close_xrcd_using(const xrc_cmds &cmds, struct ibv_xrcd *ibxrcd) noexcept;
struct ibv_srq *create_srq_ex_using(const xrc_cmds &cmds,
				    struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr) noexcept;
struct ibv_qp *
create_xrc_recv_qp_using(const xrc_cmds &cmds, struct ibv_context *ibctx,
			 struct ibv_qp_init_attr_ex *attr) noexcept;
struct ibv_qp *open_qp_using(const xrc_cmds &cmds, struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr) noexcept;

/* The context ops. */
struct ibv_xrcd *open_xrcd(struct ibv_context *ibctx,
			   struct ibv_xrcd_init_attr *attr) noexcept;
int close_xrcd(struct ibv_xrcd *ibxrcd) noexcept;
struct ibv_srq *create_srq_ex(struct ibv_context *ibctx,
			      struct ibv_srq_init_attr_ex *attr) noexcept;
int get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num) noexcept;
struct ibv_qp *open_qp(struct ibv_context *ibctx,
		       struct ibv_qp_open_attr *attr) noexcept;
/* create_qp_ex of IBV_QPT_XRC_RECV (qp.cpp hands it over). */
struct ibv_qp *create_xrc_recv_qp(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr) noexcept;

} // namespace sroce

#endif /* SROCE_XRC_H */
