// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pair lifetime: create (map and check the SQ and RQ rings the kernel
 * sized), modify, query, destroy. Posting lives in post.cpp and wr_api.cpp.
 */
#include "qp.h"
#include "cq.h"
#include "log.h"
#include "provider.h"
#include "util.h"
#include "xrc.h"

#include <cerrno>
#include <mutex>
#include <utility>

namespace sroce
{

namespace
{

using create_qp_resp =
	uverbs_resp<ib_uverbs_create_qp_resp, sroce_create_qp_resp>;
using create_qp_ex_resp =
	uverbs_resp<ib_uverbs_ex_create_qp_resp, sroce_create_qp_resp>;
static_assert(offsetof(create_qp_resp, drv) ==
	      sizeof(ib_uverbs_create_qp_resp));
static_assert(offsetof(create_qp_ex_resp, drv) ==
	      sizeof(ib_uverbs_ex_create_qp_resp));

/* Map one ring (size 0: the kernel made none) and check its geometry. */
template <typename Queue>
int map_queue(Queue &queue, const char *what, int cmd_fd,
	      const sroce_mmap_info &mi, const struct ibv_qp_cap &cap) noexcept
{
	if (mi.size == 0)
		return 0;
	mapping m = mapping::map(cmd_fd, mi.offset, mi.size);
	if (!m)
		return errno ? errno : ENOMEM;
	if (!queue.attach(m.get(), m.size(), cap)) {
		log(log_level::err,
		    "%s ring does not fit the QP caps (size %u, wr %u/%u, "
		    "sge %u/%u, inline %u)",
		    what, mi.size, cap.max_send_wr, cap.max_recv_wr,
		    cap.max_send_sge, cap.max_recv_sge, cap.max_inline_data);
		return EPROTO;
	}
	queue.map = std::move(m);
	return 0;
}

/* After ibv_cmd_create_qp*: map the rings or undo the kernel object. */
struct ibv_qp *finish_create(obj_ptr<qp> q, int cmd_fd,
			     const sroce_create_qp_resp &resp,
			     const struct ibv_qp_cap &cap,
			     bool has_srq) noexcept
{
	int ret = map_queue(q->sq, "SQ", cmd_fd, resp.sq_mi, cap);
	if (!ret && !has_srq)
		ret = map_queue(q->rq, "RQ", cmd_fd, resp.rq_mi, cap);
	if (ret) {
		(void)ibv_cmd_destroy_qp(&q->vqp.qp);
		q.reset();
		errno = ret;
		return nullptr;
	}
	return &q.release()->vqp.qp;
}

} // namespace

int check_qp_init_attr(const struct ibv_qp_init_attr_ex &attr) noexcept
{
	constexpr uint32_t supported = IBV_QP_INIT_ATTR_PD |
				       IBV_QP_INIT_ATTR_CREATE_FLAGS |
				       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

	if (attr.comp_mask & ~supported)
		return EOPNOTSUPP;
	if ((attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr.create_flags)
		return EOPNOTSUPP;
	if (!allowed_opcodes(attr.qp_type))
		return EOPNOTSUPP;
	if ((attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr.send_ops_flags & ~allowed_send_ops(attr.qp_type)))
		return EOPNOTSUPP;
	return 0;
}

struct ibv_qp *create_qp(struct ibv_pd *pd,
			 struct ibv_qp_init_attr *attr) noexcept
{
	auto q = c_new<qp>();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_qp cmd = {};
	create_qp_resp resp = {};
	const int ret =
		ibv_cmd_create_qp(pd, &q->vqp.qp, attr, &cmd, sizeof(cmd),
				  resp.ibv(), sizeof(resp));
	if (ret) {
		q.reset();
		errno = ret;
		return nullptr;
	}
	/* attr->cap now holds what the kernel granted. */
	return finish_create(std::move(q), pd->context->cmd_fd, resp.drv,
			     attr->cap, attr->srq != nullptr);
}

struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr) noexcept
{
	/* XRC TGT: no rings, no driver data (xrc.cpp). */
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return create_xrc_recv_qp(ibctx, attr);

	int ret = check_qp_init_attr(*attr);
	if (ret) {
		errno = ret;
		return nullptr;
	}

	auto q = c_new<qp>();
	if (!q) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_qp_ex cmd = {};
	create_qp_ex_resp resp = {};
	ret = sroce_cmd_create_qp_ex2(ibctx, &q->vqp, attr, &cmd, sizeof(cmd),
				      resp.ibv(), sizeof(resp));
	if (ret) {
		q.reset();
		errno = ret;
		return nullptr;
	}
	/* ibv_cmd_create_qp_ex2 reset comp_mask; ibv_qp_to_qp_ex reads it. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		set_qp_ex_ops(*q, attr->send_ops_flags);
		q->vqp.comp_mask |= VERBS_QP_EX;
	}
	return finish_create(std::move(q), ibctx->cmd_fd, resp.drv, attr->cap,
			     attr->srq != nullptr);
}

int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr) noexcept
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
	      int attr_mask) noexcept
{
	struct ibv_modify_qp cmd = {};
	const int ret =
		ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));

	/*
	 * RESET empties the QP: the kernel zeroes the ring indices, so the
	 * producer positions cached here start over too (a QP taken from
	 * ERR through RESET back to RTS posts again from slot 0).
	 */
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET) {
		qp *q = to_qp(ibqp);
		{
			const std::lock_guard<spinlock> gs(q->sq.lock);
			const std::lock_guard<spinlock> gr(q->rq.lock);

			if (q->sq.ring)
				q->sq.ring->resync();
			if (q->rq.ring)
				q->rq.ring->resync();
		}
		for (struct ibv_cq *c : {ibqp->send_cq, ibqp->recv_cq})
			if (c)
				cq_clean(*to_cq(c), ibqp->qp_num);
	}
	return ret;
}

int destroy_qp(struct ibv_qp *ibqp) noexcept
{
	const int ret = ibv_cmd_destroy_qp(ibqp);

	/* On failure the QP still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	obj_ptr<qp> q(to_qp(ibqp));
	return 0;
}

} // namespace sroce
