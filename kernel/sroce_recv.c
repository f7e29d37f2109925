// SPDX-License-Identifier: GPL-2.0
/*
 * sroce receive WQEs: where a request's receive comes from (the QP's RQ,
 * its SRQ, or an XRC target's per-request SRQ), taking one, placing data
 * in it, completing it, and the receive queue's flush. The responder
 * (sroce_resp.c) and UD (sroce_ud.c) use them, under the QP's resp_lock.
 */

#include "sroce.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_qp.h"
#include "sroce_resp.h"
#include "sroce_srq.h"
#include "sroce_transport.h"

/*
 * The copy of the receive WQE a request is placed in, one RQ (or SRQ)
 * slot: at create, once the RQ exists. Charged to the creator.
 */
int sroce_recv_alloc(struct sroce_qp *qp)
{
	qp->resp.rwqe = kmalloc(sroce_queue_slot_size(&qp->rq), SROCE_GFP_USER);
	return qp->resp.rwqe ? 0 : -ENOMEM;
}

/* Part of sroce_resp_free(). */
void sroce_recv_free(struct sroce_qp *qp)
{
	kfree(qp->resp.rwqe);
	qp->resp.rwqe = NULL;
}

/*
 * The receive side a request uses: the QP's own, or for an XRC target the
 * SRQ its XRCETH names, with that SRQ's CQ and PD (IBTA 9.8.5.2).
 */
static struct sroce_srq *sroce_recv_srq(const struct sroce_qp *qp)
{
	return qp->srq ? qp->srq : qp->resp.xsrq;
}

struct ib_pd *sroce_recv_pd(const struct sroce_qp *qp)
{
	return qp->resp.xsrq ? qp->resp.xsrq->ibsrq.pd : qp->ibqp.pd;
}

static struct sroce_cq *sroce_recv_cq(const struct sroce_qp *qp)
{
	return qp->resp.xsrq ? to_scq(qp->resp.xsrq->ibsrq.ext.cq) : qp->rcq;
}

/* Post @cqe for the current receive WQE and free it. resp_lock held. */
void sroce_recv_post_cqe(struct sroce_qp *qp, struct sroce_cqe *cqe,
			 bool solicited)
{
	struct sroce_cq *cq = sroce_recv_cq(qp);

	cqe->wr_id = ((struct sroce_recv_wqe *)qp->resp.rwqe)->wr_id;
	if (sroce_qp_has_rq(qp)) {
		qp->rq.kidx++;
		sroce_queue_publish_consumer(&qp->rq);
	}
	qp->resp.rwqe_held = false;
	qp->resp.in_send = false;
	/* An XRC target's WQE whose SRQ went away completes nowhere. */
	if (cq)
		sroce_cq_post(cq, cqe, &qp->ibqp, solicited);
}

/* Post a receive completion and free the receive WQE. resp_lock held. */
void sroce_recv_complete(struct sroce_qp *qp, int status,
			 u32 opcode, u32 byte_len, u32 wc_flags,
				     u32 imm_or_inv, bool solicited)
{
	struct sroce_cqe cqe = {
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.imm_or_inv = imm_or_inv,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->attr.dest_qp_num,
		.wc_flags = wc_flags,
		.port_num = 1,
		.network_hdr_type = qp->av.p.ipv6 ? RDMA_NETWORK_IPV6 :
						    RDMA_NETWORK_IPV4,
	};

	sroce_recv_post_cqe(qp, &cqe, solicited);
}

/*
 * Take the next receive WQE into resp.rwqe. Returns 1 if one was taken,
 * 0 if the RQ is empty (RNR), -EIO if the ring is corrupt or the WQE
 * invalid.
 */
int sroce_recv_take(struct sroce_qp *qp)
{
	struct sroce_recv_wqe *rw = (void *)qp->resp.rwqe;
	const struct sroce_recv_wqe *src;
	u32 slot = sroce_queue_slot_size(&qp->rq);
	int n;

	/* A WQE taken by a message that was abandoned (UC) is reused. */
	if (qp->resp.rwqe_held) {
		qp->resp.rwqe_offset = 0;
		return 1;
	}
	if (sroce_recv_srq(qp)) {
		n = sroce_srq_take(sroce_recv_srq(qp), rw);
		if (n > 0) {
			qp->resp.rwqe_held = true;
			qp->resp.rwqe_offset = 0;
		}
		return n;
	}
	n = sroce_queue_count_produced(&qp->rq);
	if (n < 0)
		return -EIO;
	if (!n)
		return 0;
	src = sroce_queue_slot(&qp->rq, qp->rq.kidx);
	memcpy(rw, src, sizeof(*rw));
	if (rw->num_sge > qp->max_recv_sge ||
	    sizeof(*rw) + rw->num_sge * sizeof(struct sroce_sge) > slot)
		return -EIO;
	memcpy(rw + 1, src + 1, rw->num_sge * sizeof(struct sroce_sge));
	qp->resp.rwqe_offset = 0;
	qp->resp.rwqe_held = true;
	return 1;
}

/*
 * Place @len bytes of SEND payload at byte @off of the receive WQE's
 * buffers, adding what was placed to *@copied (if not NULL).
 */
int sroce_recv_place_at(struct sroce_qp *qp, u32 off, const u8 *data,
			u32 len, u32 *copied)
{
	struct sroce_recv_wqe *rw = (void *)qp->resp.rwqe;

	return sroce_sge_copy(qp->sdev, sroce_recv_pd(qp), (const void *)(rw + 1),
			      rw->num_sge, off, (void *)data, len, SROCE_TO_MR,
			      IB_ACCESS_LOCAL_WRITE, copied);
}

/* Place SEND payload into the receive WQE's buffers, after what is there. */
int sroce_recv_place(struct sroce_qp *qp, const u8 *data, u32 len)
{
	return sroce_recv_place_at(qp, qp->resp.rwqe_offset, data, len,
				   &qp->resp.rwqe_offset);
}

/* Bytes the current receive WQE's gather list can hold. */
u64 sroce_recv_room(const struct sroce_qp *qp)
{
	const struct sroce_recv_wqe *rw = (const void *)qp->resp.rwqe;
	const struct sroce_sge *sge = (const void *)(rw + 1);
	u64 room = 0;
	u32 i;

	for (i = 0; i < rw->num_sge; i++)
		room += sge[i].length;
	return room;
}

/*
 * Flush posted receive WQEs, if the QP is in ERR: read again under the
 * receive lock, as sroce_sq_flush() does (a caller that saw ERR may come
 * after a move to RESET and on).
 */
void sroce_recv_flush(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->resp_lock);
	if (READ_ONCE(qp->state) != IB_QPS_ERR) {
		spin_unlock_bh(&qp->resp_lock);
		return;
	}
	if (!sroce_qp_has_rq(qp)) {
		/* Only the WQE this QP took; the rest belong to the SRQ. */
		if (qp->resp.rwqe_held)
			sroce_recv_complete(qp, IB_WC_WR_FLUSH_ERR,
					    IB_WC_RECV, 0, 0, 0, false);
		qp->resp.in_send = false;
		qp->resp.in_write = false;
	} else if (qp->rq.hdr) {
		int n = sroce_queue_count_produced(&qp->rq);

		while (n-- > 0) {
			if (sroce_recv_take(qp) <= 0)
				break;
			sroce_recv_complete(qp, IB_WC_WR_FLUSH_ERR,
					    IB_WC_RECV, 0, 0, 0, false);
		}
		qp->resp.in_send = false;
		qp->resp.in_write = false;
	}
	qp->resp.stream = NULL;
	qp->resp.busy = false;
	sroce_read_backlog_purge(qp);
	spin_unlock_bh(&qp->resp_lock);
}

/* Back to RESET: the receive ring empty. Locks held by the caller. */
void sroce_recv_reset(struct sroce_qp *qp)
{
	qp->rq.kidx = 0;
	qp->rq.hdr->producer = 0;
	qp->rq.hdr->consumer = 0;
}
