// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC completer: turns ACKs, NAKs, READ responses and atomic
 * acknowledgements into completions (the rules: proto/sroce_completer.h),
 * posts completions in order, and recovers from loss by going back N to
 * the oldest unacknowledged PSN (proto/sroce_gbn.h); its timers (the ACK
 * timeout, tail loss probes, the RNR wait) are sroce_comp_timer.c. The
 * requester (sroce_req.c) sends; this file decides what was received and
 * what must be sent again.
 */

#include <linux/jiffies.h>
#include <linux/timer.h>

#include "sroce.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_completer.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_psn.h"

/* proto/sroce_completer.h's statuses are the kernel's. */
#define SROCE_SAME_WC(st) static_assert((int)IB_WC_##st == (int)SROCE_WC_##st)
SROCE_SAME_WC(SUCCESS);
SROCE_SAME_WC(REM_INV_REQ_ERR);
SROCE_SAME_WC(REM_ACCESS_ERR);
SROCE_SAME_WC(REM_OP_ERR);
SROCE_SAME_WC(RETRY_EXC_ERR);
SROCE_SAME_WC(RNR_RETRY_EXC_ERR);

static enum ib_wc_opcode sroce_comp_wc_opcode(u8 op)
{
	switch (op) {
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case SROCE_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case SROCE_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case SROCE_WR_REG_MR:
		return IB_WC_REG_MR;
	case SROCE_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_WC_ATOMIC_WRITE;
	default:
		return IB_WC_SEND;
	}
}

/*
 * Post completions for WQEs that are done, in order, and free their ring
 * slots. Called with sq_lock held. Returns true if an error completion
 * was posted (the QP must go to the error state).
 */
bool sroce_comp_retire(struct sroce_qp *qp)
{
	bool err = false;

	while (qp->comp.idx != qp->req.fetched) {
		struct sroce_wqe_st *st = sroce_wst(qp, qp->comp.idx);
		struct sroce_send_wqe *w = sroce_sq_shadow(qp, qp->comp.idx);

		bool signaled;

		if (st->state != SROCE_WQE_DONE)
			break;
		if (st->status != IB_WC_SUCCESS && st->status != IB_WC_WR_FLUSH_ERR)
			err = true;
		if (sroce_wqe_is_rd_atomic(w->opcode) && qp->req.rd_atomic &&
		    st->status == IB_WC_SUCCESS)
			qp->req.rd_atomic--;
		signaled = st->status != IB_WC_SUCCESS || qp->sq_sig_all ||
			   (w->flags & SROCE_SEND_SIGNALED);
		qp->comp.idx++;
		/*
		 * The ring slot is free (the kernel works from its shadow copy)
		 * before the completion can be seen: a process that posts as
		 * soon as it polls a CQE must find the room (IBTA: a completed
		 * WQE's slot may be reused). The shadow stays valid: fetching
		 * into it needs sq_lock, which the caller holds.
		 */
		smp_store_release(&qp->sq.hdr->consumer, qp->comp.idx);
		if (signaled) {
			struct sroce_cqe cqe = {
				.wr_id = w->wr_id,
				.status = st->status,
				.opcode = sroce_comp_wc_opcode(w->opcode),
				.byte_len = st->status == IB_WC_SUCCESS ?
					    st->len : 0,
				.qp_num = qp->ibqp.qp_num,
				.port_num = 1,
			};

			sroce_cq_post(qp->scq, &cqe, &qp->ibqp, false);
		}
	}
	/* WQEs failed at fetch can complete before the requester passed them. */
	if ((s32)(qp->comp.idx - qp->req.cur) > 0) {
		qp->req.cur = qp->comp.idx;
		qp->req.offset = 0;
	}
	/* The consumer the process sees is what is completed, not fetched. */
	smp_store_release(&qp->sq.hdr->consumer, qp->comp.idx);
	return err;
}

/*
 * Go back to the oldest unacknowledged PSN (sroce_sendq_rewind). What is
 * sent again times no round trip (Karn). sq_lock held.
 */
void sroce_comp_rewind(struct sroce_qp *qp)
{
	struct sroce_sendq q = sroce_qp_sendq(qp);
	struct sroce_sendq_resume r;

	qp->comp.rtt_on = false;
	qp->req.rd_atomic = 0;
	r = sroce_sendq_rewind(&q, qp->comp.psn, qp->mtu);
	qp->req.cur = r.cur;
	qp->req.psn = r.psn;
	qp->req.offset = r.offset;
}

/*
 * The peer acknowledged something new: the retry budgets are for failures
 * in a row, the ACK timeout is the IBTA one again, and a window shrunk by a
 * timeout opens up (sroce_gbn.h). sq_lock held.
 */
static void sroce_comp_progress(struct sroce_qp *qp)
{
	qp->comp.retry_cnt = qp->attr.retry_cnt;
	qp->comp.rnr_retry = qp->attr.rnr_retry;
	qp->comp.backoff = 0;
	qp->comp.probes = 0;
	qp->comp.nak_rewound = false;
	qp->comp.progressed = true;
	qp->comp.window = sroce_gbn_window_grow(qp->comp.window);
}

/* Complete SEND/WRITE WQEs wholly acknowledged by an ACK of @psn. */
static bool sroce_comp_ack_upto(struct sroce_qp *qp, u32 psn, bool inclusive)
{
	struct sroce_sendq q = sroce_qp_sendq(qp);
	u32 next = sroce_ack_next(psn, inclusive);

	if (!sroce_ack_valid(next, qp->comp.psn, qp->req.psn_hi, inclusive))
		return false;
	/*
	 * Everything before @next reached the peer, including what the
	 * requester sent before a rewind and has not sent again yet: a WQE
	 * completes once its last PSN is acknowledged, whichever pass sent it
	 * (its PSNs never change), and the requester skips what is
	 * acknowledged (below).
	 */
	next = sroce_sendq_ack(&q, next);
	if (sroce_psn_after(next, qp->comp.psn)) {
		qp->comp.psn = next;
		sroce_comp_progress(qp);
		/*
		 * Going back N after a timeout or NAK, and the peer had more
		 * than the requester thought: resend from here, not the rest
		 * of what it already has.
		 */
		if (sroce_psn_after(next, qp->req.psn))
			sroce_comp_rewind(qp);
	}
	return true;
}

/* The oldest unfinished WQE, which responses must belong to. */
static struct sroce_wqe_st *sroce_comp_head(struct sroce_qp *qp, u32 *idxp)
{
	u32 idx;

	for (idx = qp->comp.idx; idx != qp->req.fetched; idx++) {
		struct sroce_wqe_st *st = sroce_wst(qp, idx);

		if (st->state == SROCE_WQE_DONE)
			continue;
		*idxp = idx;
		return st->state == SROCE_WQE_SENT ? st : NULL;
	}
	return NULL;
}

/*
 * The READ that responses must belong to: the oldest unfinished WQE, sent,
 * or rewound and waiting to be asked for again (its PSNs are its own: a
 * response of the old stream still carries its data). NULL if none.
 */
static struct sroce_wqe_st *sroce_comp_read_head(struct sroce_qp *qp,
						 u32 *idxp)
{
	u32 idx;

	for (idx = qp->comp.idx; idx != qp->req.fetched; idx++) {
		struct sroce_wqe_st *st = sroce_wst(qp, idx);
		struct sroce_send_wqe *w = sroce_sq_shadow(qp, idx);

		if (st->state == SROCE_WQE_DONE)
			continue;
		if (w->opcode != SROCE_WR_RDMA_READ || !st->psn_valid)
			return NULL;
		*idxp = idx;
		return st;
	}
	return NULL;
}

/* Place a READ response's @len bytes at byte @off of the READ. */
static int sroce_comp_read_place(struct sroce_qp *qp,
				 struct sroce_send_wqe *w, u32 off,
				 const u8 *payload, u32 len)
{
	return sroce_wqe_data(qp, w, off, (void *)payload, len, SROCE_TO_MR,
			      IB_ACCESS_LOCAL_WRITE);
}

/*
 * A READ response other than the awaited one (PSN @expect, byte @off of the
 * READ @w): a later one says the awaited one was lost (an implied NAK, once
 * per hole; the READ's last response may ask again), and one that fits
 * where it belongs is placed now (sroce_read_track_ahead()). sq_lock held.
 */
static enum sroce_comp_verdict
sroce_comp_read_ahead(struct sroce_qp *qp, const struct sroce_pkt *pkt,
		      const u8 *payload, struct sroce_wqe_st *st,
		      struct sroce_send_wqe *w, u32 expect, u32 off)
{
	enum sroce_comp_verdict v = SROCE_COMP_OK;
	struct sroce_read_ahead ra;
	int status;

	ra = sroce_read_track_ahead(&qp->comp.rr, pkt->bth.psn, pkt->info->pos,
				    pkt->payload_len, expect, st->last_psn,
				    st->resid, qp->mtu, qp->req.psn_hi,
				    st->state == SROCE_WQE_SENT);
	if (ra.ask) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_IMPLIED_NAK);
		v = SROCE_COMP_RETRY;
	}
	if (!ra.place) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		return v;
	}
	status = sroce_comp_read_place(qp, w, off + ra.d * qp->mtu,
				       payload, pkt->payload_len);
	if (status) {
		st->state = SROCE_WQE_DONE;
		st->status = status;
		return SROCE_COMP_FATAL;
	}
	sroce_read_track_placed(&qp->comp.rr, ra.d);
	return v;
}

static enum sroce_comp_verdict sroce_comp_read_resp(struct sroce_qp *qp,
						    const struct sroce_pkt *pkt,
						    const u8 *payload)
{
	struct sroce_wqe_st *st;
	struct sroce_send_wqe *w;
	u32 idx, expect, off, k;
	bool reposted;
	int status;

	/*
	 * A first/only response also acknowledges every request before it
	 * (the responder executes in PSN order): SENDs and WRITEs before the
	 * READ complete even when their own ACK was lost.
	 */
	if (pkt->info->pos == SROCE_POS_FIRST ||
	    pkt->info->pos == SROCE_POS_ONLY)
		sroce_comp_ack_upto(qp, pkt->bth.psn, false);
	st = sroce_comp_read_head(qp, &idx);
	if (!st)
		goto drop;
	w = sroce_sq_shadow(qp, idx);
	sroce_read_track_at(&qp->comp.rr, idx);
	off = st->len - st->resid;
	expect = sroce_read_resp_psn(st->first_psn, off, qp->mtu);
	if (pkt->bth.psn != expect)
		return sroce_comp_read_ahead(qp, pkt, payload, st, w, expect,
					     off);
	if (!sroce_read_resp_len_ok(pkt->info->pos, pkt->payload_len,
				    st->resid, qp->mtu))
		goto drop;

	status = sroce_comp_read_place(qp, w, off, payload, pkt->payload_len);
	if (status)
		goto fail;
	st->resid -= pkt->payload_len;
	/* The ones after it that were in place already. */
	for (k = sroce_read_track_took(&qp->comp.rr); k; k--)
		st->resid -= min(st->resid, qp->mtu);
	sroce_comp_progress(qp);
	/*
	 * Rewound and not asked for again yet: ask from the new first
	 * missing byte, or not at all if nothing is missing.
	 */
	reposted = st->state == SROCE_WQE_POSTED && qp->req.cur == idx;
	if (!st->resid) {
		st->state = SROCE_WQE_DONE;
		st->status = IB_WC_SUCCESS;
		qp->comp.psn = sroce_psn_add(st->last_psn, 1);
		sroce_read_track_done(&qp->comp.rr);
	}
	if (reposted)
		sroce_comp_rewind(qp);
	return SROCE_COMP_OK;
fail:
	st->state = SROCE_WQE_DONE;
	st->status = status;
	return SROCE_COMP_FATAL;
drop:
	sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
	return SROCE_COMP_OK;
}

static enum sroce_comp_verdict sroce_comp_atomic_ack(struct sroce_qp *qp,
						     const struct sroce_pkt *pkt)
{
	struct sroce_wqe_st *st;
	struct sroce_send_wqe *w;
	u64 orig = pkt->atomic_orig;
	u32 idx;
	int status;

	st = sroce_comp_head(qp, &idx);
	if (!st)
		goto drop;
	w = sroce_sq_shadow(qp, idx);
	if (!sroce_wqe_is_atomic(w->opcode) || pkt->bth.psn != st->first_psn)
		goto drop;
	sroce_comp_ack_upto(qp, st->first_psn, false);
	status = sroce_wqe_data(qp, w, 0, &orig, sizeof(orig), SROCE_TO_MR,
				IB_ACCESS_LOCAL_WRITE);
	st->state = SROCE_WQE_DONE;
	st->status = status ? status : IB_WC_SUCCESS;
	if (status)
		return SROCE_COMP_FATAL;
	qp->comp.psn = sroce_psn_add(st->first_psn, 1);
	sroce_comp_progress(qp);
	return SROCE_COMP_OK;
drop:
	sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
	return SROCE_COMP_OK;
}

/* Fail the WQE that holds @psn with @status (a fatal NAK). */
void sroce_comp_fail_psn(struct sroce_qp *qp, u32 psn, int status)
{
	u32 idx;

	for (idx = qp->comp.idx; idx != qp->req.fetched; idx++) {
		struct sroce_wqe_st *st = sroce_wst(qp, idx);

		if (st->state == SROCE_WQE_DONE)
			continue;
		st->state = SROCE_WQE_DONE;
		st->status = status;
		return;
	}
}

/*
 * Go back for a sequence NAK, unless it repeats the one gone back for
 * already (sroce_nak_repeats()): then it changes nothing and is dropped.
 * An ACK past a READ or atomic is not such a NAK: the responder answers
 * every duplicate with one (C9-105), so a repeat after the resend says the
 * resent response was lost again.
 */
static enum sroce_comp_verdict sroce_comp_nak_retry(struct sroce_qp *qp)
{
	if (sroce_nak_repeats(qp->comp.nak_rewound, qp->comp.nak_psn,
			      qp->comp.psn)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		return SROCE_COMP_OK;
	}
	qp->comp.nak_rewound = true;
	qp->comp.nak_psn = qp->comp.psn;
	return SROCE_COMP_RETRY;
}

static enum sroce_comp_verdict sroce_comp_aeth(struct sroce_qp *qp,
					       const struct sroce_pkt *pkt)
{
	u8 syn = pkt->aeth.syndrome;
	enum sroce_ack_fate fate = sroce_ack_classify(syn);
	u32 psn = pkt->bth.psn;

	if (fate == SROCE_ACK_BAD ||
	    !sroce_comp_ack_upto(qp, psn, fate == SROCE_ACK_PROGRESS)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		return SROCE_COMP_OK;
	}
	if (trace_sroce_nak_rcvd_enabled() && fate != SROCE_ACK_PROGRESS)
		trace_sroce_nak_rcvd(qp, psn, syn);
	if (sroce_ack_fatal(fate)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_NAK_RCVD);
		sroce_comp_fail_psn(qp, psn, sroce_ack_status(fate));
		return SROCE_COMP_FATAL;
	}
	switch (fate) {
	case SROCE_ACK_PROGRESS:
		if (sroce_ack_implies_nak(psn, qp->comp.psn)) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_IMPLIED_NAK);
			return SROCE_COMP_RETRY;
		}
		break;
	case SROCE_ACK_RNR:
		sroce_stat_inc(qp->sdev, SROCE_CNT_RNR_NAK_RCVD);
		if (!sroce_rnr_retry_take(&qp->comp.rnr_retry)) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_RNR_RETRY_EXCEEDED);
			sroce_comp_fail_psn(qp, psn, IB_WC_RNR_RETRY_EXC_ERR);
			return SROCE_COMP_FATAL;
		}
		qp->comp.rnr_wait = true;
		/*
		 * The responder turned the oldest PSN away, so it has no gap
		 * to have NAKed once any more: a sequence NAK of that PSN
		 * after this one is a new one, gone back for.
		 */
		qp->comp.nak_rewound = false;
		sroce_comp_rewind(qp);
		if (!test_bit(SROCE_QPF_DYING, &qp->flags)) {
			u32 us = sroce_rnr_timer_usec(sroce_aeth_value(syn));

			mod_timer(&qp->comp.rnr_timer,
				  jiffies + usecs_to_jiffies(us) + 1);
		}
		break;
	case SROCE_ACK_SEQ:
		sroce_stat_inc(qp->sdev, SROCE_CNT_SEQ_NAK_RCVD);
		return sroce_comp_nak_retry(qp);
	default:	/* the errors, above; BAD is dropped before */
		break;
	}
	return SROCE_COMP_OK;
}

/*
 * Whether IB_EVENT_SQ_DRAINED may be due: the QP is in SQD, the consumer
 * asked for the event and it has not gone out for this entry to SQD. A
 * cheap test for the data path (sq_lock held); sroce_comp_sqd_check()
 * decides.
 */
bool sroce_comp_sqd_pending(struct sroce_qp *qp)
{
	return READ_ONCE(qp->state) == IB_QPS_SQD &&
	       qp->attr.en_sqd_async_notify && !qp->comp.sqd_notified;
}

/*
 * SQD: true once (per entry to SQD) when nothing is outstanding any more
 * and the consumer asked for IB_EVENT_SQ_DRAINED. Without
 * acknowledgements (UC, UD) a WQE is done when its last packet is sent,
 * and the PSNs say nothing more: a UD QP's completer never moves
 * comp.psn. state_lock and sq_lock held.
 */
static bool sroce_comp_sqd_drained(struct sroce_qp *qp)
{
	bool acked = qp->ibqp.qp_type != IB_QPT_UC && !sroce_qp_is_ud(qp);
	struct sroce_sendq q = sroce_qp_sendq(qp);

	if (!sroce_comp_sqd_pending(qp) || qp->req.offset ||
	    qp->comp.idx != qp->req.cur ||
	    (acked && qp->comp.psn != qp->req.psn) ||
	    sroce_sendq_outstanding(&q))
		return false;
	qp->comp.sqd_notified = true;
	return true;
}

/*
 * Send IB_EVENT_SQ_DRAINED if it is due (see sroce_comp_sqd_drained()).
 * The decision and the delivery are both under state_lock, which every
 * state change takes, so the event never reaches the consumer after the
 * QP has left SQD: decided under sq_lock alone and sent after unlocking,
 * it could arrive after a move to RTS, posts and a new entry to SQD, and
 * report that entry drained before it was. The consumer's handler runs
 * with state_lock held (BH off), as it would from a softirq; on
 * modify_qp's path modify_lock is held too.
 * Lock order: state_lock, then sq_lock; not called with either held.
 */
void sroce_comp_sqd_check(struct sroce_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = IB_EVENT_SQ_DRAINED,
	};
	bool drained;

	spin_lock_bh(&qp->state_lock);
	spin_lock(&qp->sq_lock);
	drained = sroce_comp_sqd_drained(qp);
	spin_unlock(&qp->sq_lock);
	if (drained && qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	spin_unlock_bh(&qp->state_lock);
}

/* What a response means, by its kind. sq_lock held. */
static enum sroce_comp_verdict sroce_comp_dispatch(struct sroce_qp *qp,
						   const struct sroce_pkt *pkt,
						   const u8 *payload)
{
	switch (pkt->info->kind) {
	case SROCE_KIND_ACK:
		return sroce_comp_aeth(qp, pkt);
	case SROCE_KIND_READ_RESP:
		if (pkt->info->hdrs & SROCE_HDR_AETH &&
		    sroce_aeth_type(pkt->aeth.syndrome) != SROCE_AETH_ACK) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
			break;
		}
		return sroce_comp_read_resp(qp, pkt, payload);
	case SROCE_KIND_ATOMIC_ACK:
		if (sroce_aeth_type(pkt->aeth.syndrome) != SROCE_AETH_ACK)
			return sroce_comp_aeth(qp, pkt);
		return sroce_comp_atomic_ack(qp, pkt);
	default:
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		break;
	}
	return SROCE_COMP_OK;
}

/*
 * sroce_comp_rcv - handle a response packet (softirq)
 */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt, const u8 *payload)
{
	enum sroce_comp_verdict v;
	bool err, kick, sqd, timed, idle;
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state != IB_QPS_RTS && state != IB_QPS_SQD) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}

	spin_lock_bh(&qp->sq_lock);
	/* The first answer at or after the timed PSN may end its round trip. */
	timed = qp->comp.rtt_on &&
		!sroce_psn_before(pkt->bth.psn, qp->comp.rtt_psn) &&
		sroce_psn_before(pkt->bth.psn, qp->req.psn_hi);
	qp->comp.progressed = false;
	v = sroce_comp_dispatch(qp, pkt, payload);
	/* ... if it was a valid one that acknowledged something. */
	if (timed && qp->comp.progressed) {
		sroce_rtt_sample(&qp->comp.rtt,
				 (u32)min_t(u64, div_u64(ktime_get_ns() -
							 qp->comp.rtt_ns,
							 NSEC_PER_USEC),
					    U32_MAX));
		qp->comp.rtt_on = false;
	}
	if (v == SROCE_COMP_RETRY)
		sroce_comp_rewind(qp);
	err = sroce_comp_retire(qp) || v == SROCE_COMP_FATAL;
	idle = sroce_comp_idle(qp);
	sroce_comp_heard(qp, idle, v == SROCE_COMP_FATAL);
	/*
	 * Wake the requester only if it has something to send: a needless
	 * work item can hold the requester bit when the next doorbell comes,
	 * and the doorbell then waits for that worker to be scheduled.
	 */
	kick = qp->req.cur != qp->req.fetched ||
	       READ_ONCE(qp->sq.hdr->producer) != qp->sq.kidx;
	sqd = !err && sroce_comp_sqd_pending(qp);
	spin_unlock_bh(&qp->sq_lock);

	if (err)
		sroce_qp_error(qp);
	else if (kick)
		sroce_req_kick(qp, false);
	if (sqd)
		sroce_comp_sqd_check(qp);
}

/* The completer's part of a new QP: its timers, the full window. */
void sroce_comp_init(struct sroce_qp *qp)
{
	sroce_comp_timers_init(qp);
	qp->comp.window = SROCE_GBN_MAX_WINDOW;
	qp->comp.sent_j = jiffies;
}

/* Back to RESET: nothing outstanding, no timer. Locks held by the caller. */
void sroce_comp_reset(struct sroce_qp *qp)
{
	sroce_comp_timers(qp, SROCE_GBN_TIMER_STOP);
	timer_delete(&qp->comp.rnr_timer);
	qp->comp.idx = 0;
	qp->comp.probes = 0;
	qp->comp.rtt_on = false;
	qp->comp.waiting = false;
	qp->comp.gap_j = 0;
	qp->comp.sent_j = jiffies;
	memset(&qp->comp.rtt, 0, sizeof(qp->comp.rtt));
	qp->comp.psn = 0;
	qp->comp.rnr_wait = false;
	qp->comp.nak_rewound = false;
	memset(&qp->comp.rr, 0, sizeof(qp->comp.rr));
	qp->comp.backoff = 0;
	qp->comp.window = SROCE_GBN_MAX_WINDOW;
	/*
	 * Until modify_qp has written RESET (then sroce_comp_sqd_end() clears
	 * it), a late ACK to a QP still in SQD finds the emptied queue
	 * "drained": no IB_EVENT_SQ_DRAINED for a QP on its way to RESET.
	 */
	qp->comp.sqd_notified = true;
}

/*
 * modify_qp's attributes the completer keeps: the retry budgets and the
 * first PSN it waits for. Locks held by the caller.
 */
void sroce_comp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		       int mask)
{
	if (mask & IB_QP_RETRY_CNT)
		qp->comp.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->comp.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_SQ_PSN) {
		qp->comp.psn = sroce_psn_mask(attr->sq_psn);
		qp->comp.nak_rewound = false;
	}
}

/*
 * The QP is not in SQD (any more): its next entry may send
 * IB_EVENT_SQ_DRAINED again.
 */
void sroce_comp_sqd_end(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->sq_lock);
	qp->comp.sqd_notified = false;
	spin_unlock_bh(&qp->sq_lock);
}

/* The QP is dying (SROCE_QPF_DYING set): wait for the timers to end. */
void sroce_comp_stop(struct sroce_qp *qp)
{
	timer_delete_sync(&qp->comp.retrans_timer);
	timer_delete_sync(&qp->comp.probe_timer);
	timer_delete_sync(&qp->comp.rnr_timer);
}
