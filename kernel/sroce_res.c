// SPDX-License-Identifier: GPL-2.0
/*
 * "rdma res show qp -dd": a QP's transport state as driver attributes, the
 * way mlx5 and rxe show theirs. A snapshot taken under the locks that
 * guard each part (sq_lock: requester and completer; resp_lock: responder),
 * one part at a time, so it is consistent within a part only.
 *
 *   sq_psn       next PSN the requester sends (a rewind moves it back)
 *   sq_psn_max   next PSN never sent before
 *   una_psn      oldest PSN not yet acknowledged
 *   sq_wqes      WQEs fetched from the send queue and not yet completed
 *   rd_atomic    READ/atomic requests outstanding
 *   window       PSNs the requester may have in flight (go-back-N window)
 *   retry_left   transport retries left for the oldest WQE (retry_cnt)
 *   rnr_left     RNR retries left (7: infinite)
 *   backoff      ACK timeout doublings since the last progress
 *   rnr_wait     1 while waiting out an RNR NAK's timer (or the hold after
 *                a packet that could not be allocated)
 *   epsn         the responder's expected PSN
 *   msn          the responder's message sequence number
 * then the DCQCN state (sroce_cc_fill_res_qp()).
 */

#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>

#include "sroce.h"
#include "sroce_qp.h"
#include "sroce_cc.h"

struct sroce_res_qp {
	u32 sq_psn, sq_psn_max, una_psn, sq_wqes, rd_atomic, window;
	u32 retry_left, rnr_left, backoff, rnr_wait, epsn, msn;
};

static void sroce_res_qp_snapshot(struct sroce_qp *qp, struct sroce_res_qp *r)
{
	spin_lock_bh(&qp->sq_lock);
	r->sq_psn = qp->req.psn;
	r->sq_psn_max = qp->req.psn_hi;
	r->una_psn = qp->comp.psn;
	r->sq_wqes = qp->req.fetched - qp->comp.idx;
	r->rd_atomic = qp->req.rd_atomic;
	r->window = qp->comp.window;
	r->retry_left = qp->comp.retry_cnt;
	r->rnr_left = qp->comp.rnr_retry;
	r->backoff = qp->comp.backoff;
	r->rnr_wait = qp->comp.rnr_wait;
	spin_unlock_bh(&qp->sq_lock);

	spin_lock_bh(&qp->resp_lock);
	r->epsn = qp->resp.epsn;
	r->msn = qp->resp.msn;
	spin_unlock_bh(&qp->resp_lock);
}

int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_res_qp r;
	struct nlattr *table;

	sroce_res_qp_snapshot(qp, &r);
	table = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32_hex(msg, "sq_psn", r.sq_psn) ||
	    rdma_nl_put_driver_u32_hex(msg, "sq_psn_max", r.sq_psn_max) ||
	    rdma_nl_put_driver_u32_hex(msg, "una_psn", r.una_psn) ||
	    rdma_nl_put_driver_u32(msg, "sq_wqes", r.sq_wqes) ||
	    rdma_nl_put_driver_u32(msg, "rd_atomic", r.rd_atomic) ||
	    rdma_nl_put_driver_u32(msg, "window", r.window) ||
	    rdma_nl_put_driver_u32(msg, "retry_left", r.retry_left) ||
	    rdma_nl_put_driver_u32(msg, "rnr_left", r.rnr_left) ||
	    rdma_nl_put_driver_u32(msg, "backoff", r.backoff) ||
	    rdma_nl_put_driver_u32(msg, "rnr_wait", r.rnr_wait) ||
	    rdma_nl_put_driver_u32_hex(msg, "epsn", r.epsn) ||
	    rdma_nl_put_driver_u32(msg, "msn", r.msn) ||
	    sroce_cc_fill_res_qp(msg, qp)) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}
