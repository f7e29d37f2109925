// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC domains, XRC SRQs, XRC target QPs (created or opened), and the
 * ATOMIC_WRITE work request encoder. See xrc.h for what the kernel is
 * asked and what it answers.
 */
#include "xrc.h"
#include "log.h"
#include "provider.h"
#include "util.h"

#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <utility>

namespace sroce
{

namespace
{

const void *user_ptr(uint64_t addr) noexcept
{
	// NOLINTNEXTLINE(performance-no-int-to-ptr): a verbs address is a VA
	return reinterpret_cast<const void *>(static_cast<uintptr_t>(addr));
}

/*
 * What libibverbs' ibv_create_srq() does around the provider's create_srq
 * and ibv_create_srq_ex() does not: a basic SRQ made through create_srq_ex
 * must look the same to the rest of libibverbs (events, ibv_destroy_srq).
 */
void init_srq_like_libibverbs(struct ibv_srq *srq, struct ibv_pd *pd,
			      void *srq_context) noexcept
{
	srq->context = pd->context;
	srq->srq_context = srq_context;
	srq->pd = pd;
	srq->events_completed = 0;
	pthread_mutex_init(&srq->mutex, nullptr);
	pthread_cond_init(&srq->cond, nullptr);
}

struct ibv_srq *create_basic_srq(const xrc_cmds &cmds,
				 struct ibv_srq_init_attr_ex *attr) noexcept
{
	struct ibv_srq_init_attr a = {};

	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	struct ibv_srq *ibsrq = create_srq_using(*cmds.srq, attr->pd, &a);
	if (!ibsrq)
		return nullptr;
	attr->attr = a.attr; /* what the kernel granted */
	init_srq_like_libibverbs(ibsrq, attr->pd, attr->srq_context);
	srq *s = to_srq(ibsrq);
	s->vsrq.srq_type = IBV_SRQT_BASIC;
	return ibsrq;
}

using create_xsrq_resp = create_srq_resp; /* same driver data as basic */

struct ibv_srq *create_xrc_srq(const xrc_cmds &cmds, struct ibv_context *ibctx,
			       struct ibv_srq_init_attr_ex *attr) noexcept
{
	constexpr uint32_t needed = IBV_SRQ_INIT_ATTR_PD |
				    IBV_SRQ_INIT_ATTR_XRCD |
				    IBV_SRQ_INIT_ATTR_CQ;

	if ((attr->comp_mask & needed) != needed || !attr->pd || !attr->xrcd ||
	    !attr->cq) {
		errno = EINVAL;
		return nullptr;
	}
	auto s = c_new<srq>();
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_xsrq cmd = {};
	create_xsrq_resp resp = {};
	int ret = cmds.create_srq_ex(ibctx, &s->vsrq, attr, &cmd, sizeof(cmd),
				     resp.ibv(), sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	/* attr->attr.max_wr and max_sge now hold what the kernel granted. */
	ret = map_ring(*s, ibctx->cmd_fd, resp.drv.mi, attr->attr.max_wr,
		       attr->attr.max_sge);
	if (ret) {
		(void)cmds.srq->destroy(&s->vsrq.srq);
		errno = ret;
		return nullptr;
	}
	s->srq_num = resp.drv.srq_num;
	/* libibverbs set the rest; these it may leave to the provider. */
	s->vsrq.srq.srq_context = attr->srq_context;
	s->vsrq.srq.pd = attr->pd;
	return &s.release()->vsrq.srq;
}

} // namespace

/* ---- ATOMIC_WRITE --------------------------------------------------- */

void set_atomic_write(sroce_send_wqe &h, uint32_t rkey, uint64_t remote_addr,
		      const void *value) noexcept
{
	h.opcode = SROCE_WR_ATOMIC_WRITE;
	h.rkey = rkey;
	h.remote_addr = remote_addr;
	/* The bytes as they are in memory: the kernel sends them unchanged. */
	memcpy(&h.compare_add, value, atomic_write_len);
	h.num_sge = 0;
	h.inline_len = 0;
	h.flags &= static_cast<__u8>(~SROCE_SEND_INLINE);
}

int encode_atomic_write_wqe(const qp &q, const struct ibv_send_wr &wr,
			    void *slot, bool enabled) noexcept
{
	const enum ibv_qp_type type = q.vqp.qp.qp_type;

	if (!enabled)
		return EOPNOTSUPP;
	if (type != IBV_QPT_RC && type != IBV_QPT_XRC_SEND)
		return EINVAL;
	if ((wr.send_flags & ~send_flags_mask) ||
	    (wr.send_flags & IBV_SEND_INLINE))
		return EINVAL;
	if (wr.num_sge < 0 || (wr.num_sge > 0 && !wr.sg_list))
		return EINVAL;

	/* Gather the value from the scatter list: exactly 8 bytes. */
	unsigned char value[atomic_write_len] = {};
	uint64_t len = 0;
	for (int i = 0; i < wr.num_sge; i++) {
		const uint32_t n = wr.sg_list[i].length;
		if (n > atomic_write_len - len)
			return EINVAL;
		if (n)
			memcpy(value + len, user_ptr(wr.sg_list[i].addr), n);
		len += n;
	}
	if (len != atomic_write_len)
		return EINVAL;

	sroce_send_wqe h = {};
	h.wr_id = wr.wr_id;
	h.flags = static_cast<__u8>(wr.send_flags);
	set_atomic_write(h, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr, value);
	if (type == IBV_QPT_XRC_SEND)
		h.remote_qpn = wr.qp_type.xrc.remote_srqn;
	memcpy(slot, &h, sizeof(h));
	return 0;
}

/* ---- XRC domains ---------------------------------------------------- */

constinit const xrc_cmds kernel_xrc_cmds = {
	.open_xrcd = ibv_cmd_open_xrcd,
	.close_xrcd = ibv_cmd_close_xrcd,
	.create_srq_ex = ibv_cmd_create_srq_ex,
	.create_qp_ex2 = sroce_cmd_create_qp_ex2,
	.open_qp = ibv_cmd_open_qp,
	.srq = &kernel_srq_cmds,
};

struct ibv_xrcd *open_xrcd_using(const xrc_cmds &cmds,
				 struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr) noexcept
{
	auto x = c_zalloc<verbs_xrcd>();
	if (!x) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_open_xrcd cmd = {};
	struct ib_uverbs_open_xrcd_resp resp = {};
	/* No driver data either way: an XRCD is a kernel-only object. */
	const int ret = cmds.open_xrcd(ibctx, x.get(), sizeof(*x), attr, &cmd,
				       sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	return &x.release()->xrcd;
}

int close_xrcd_using(const xrc_cmds &cmds, struct ibv_xrcd *ibxrcd) noexcept
{
	// ibv_xrcd is the first member of verbs_xrcd.
	auto *x = reinterpret_cast<verbs_xrcd *>(ibxrcd);
	const int ret = cmds.close_xrcd(x);

	/* On failure the XRCD still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	c_ptr<verbs_xrcd> owned(x);
	return 0;
}

/* ---- SRQs of either type ------------------------------------------- */

struct ibv_srq *create_srq_ex_using(const xrc_cmds &cmds,
				    struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr) noexcept
{
	constexpr uint32_t supported =
		IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;

	if (attr->comp_mask & ~supported) {
		errno = EOPNOTSUPP; /* tag matching, ... */
		return nullptr;
	}
	const enum ibv_srq_type type =
		(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type
							   : IBV_SRQT_BASIC;
	switch (type) {
	case IBV_SRQT_BASIC:
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
		    attr->pd->context != ibctx) {
			errno = EINVAL;
			return nullptr;
		}
		return create_basic_srq(cmds, attr);
	case IBV_SRQT_XRC:
		return create_xrc_srq(cmds, ibctx, attr);
	default:
		errno = EOPNOTSUPP;
		return nullptr;
	}
}

/* ---- XRC target QPs ------------------------------------------------- */

struct ibv_qp *
create_xrc_recv_qp_using(const xrc_cmds &cmds, struct ibv_context *ibctx,
			 struct ibv_qp_init_attr_ex *attr) noexcept
{
	constexpr uint32_t supported = IBV_QP_INIT_ATTR_PD |
				       IBV_QP_INIT_ATTR_XRCD |
				       IBV_QP_INIT_ATTR_CREATE_FLAGS;

	if (attr->qp_type != IBV_QPT_XRC_RECV ||
	    (attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return nullptr;
	}
	auto q = c_new<qp>();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}

	/* No rings, no driver data: the core response only. */
	struct ibv_create_qp_ex cmd = {};
	uverbs_core<ib_uverbs_ex_create_qp_resp> resp = {};
	const int ret = cmds.create_qp_ex2(
		ibctx, &q->vqp, attr, &cmd, sizeof(cmd),
		reinterpret_cast<ib_uverbs_ex_create_qp_resp *>(resp.bytes),
		sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	/* sq and rq stay without a ring: post_send/post_recv are EINVAL. */
	return &q.release()->vqp.qp;
}

struct ibv_qp *open_qp_using(const xrc_cmds &cmds, struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr) noexcept
{
	/* Only XRC target QPs can be shared (IBV_QPT_XRC_RECV). */
	if ((attr->comp_mask & IBV_QP_OPEN_ATTR_TYPE) &&
	    attr->qp_type != IBV_QPT_XRC_RECV) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	auto q = c_new<qp>();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_open_qp cmd = {};
	uverbs_core<ib_uverbs_create_qp_resp> resp = {};
	const int ret = cmds.open_qp(
		ibctx, &q->vqp, sizeof(q->vqp), attr, &cmd, sizeof(cmd),
		reinterpret_cast<ib_uverbs_create_qp_resp *>(resp.bytes),
		sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	return &q.release()->vqp.qp;
}

/* ---- context ops ---------------------------------------------------- */

struct ibv_xrcd *open_xrcd(struct ibv_context *ibctx,
			   struct ibv_xrcd_init_attr *attr) noexcept
{
	return open_xrcd_using(kernel_xrc_cmds, ibctx, attr);
}

int close_xrcd(struct ibv_xrcd *ibxrcd) noexcept
{
	return close_xrcd_using(kernel_xrc_cmds, ibxrcd);
}

struct ibv_srq *create_srq_ex(struct ibv_context *ibctx,
			      struct ibv_srq_init_attr_ex *attr) noexcept
{
	return create_srq_ex_using(kernel_xrc_cmds, ibctx, attr);
}

int get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num) noexcept
{
	*srq_num = to_srq(ibsrq)->srq_num;
	return 0;
}

struct ibv_qp *open_qp(struct ibv_context *ibctx,
		       struct ibv_qp_open_attr *attr) noexcept
{
	return open_qp_using(kernel_xrc_cmds, ibctx, attr);
}

struct ibv_qp *create_xrc_recv_qp(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr) noexcept
{
	return create_xrc_recv_qp_using(kernel_xrc_cmds, ibctx, attr);
}

} // namespace sroce
