// SPDX-License-Identifier: GPL-2.0
/*
 * sroce requester: turns the send queue's WQEs into packets on connected
 * QPs (RC, UC, XRC initiator; UD's one packet per WQE is sroce_ud.c's),
 * executes local work requests in order, and runs when kicked (a doorbell,
 * an ACK, a timer) inline or from its workqueue. Fetching WQEs from the
 * ring and flushing the send queue are sroce_sq.c's; completing them and
 * the loss recovery are sroce_comp.c's.
 */

#include <linux/sched.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_wr.h"

/* Packets per requester run before yielding to the workqueue. */
#define SROCE_REQ_BUDGET	256

/* Execute REG_MR, LOCAL_INV or BIND_MW. Returns 0 or an ib_wc_status. */
static int sroce_req_local_op(struct sroce_qp *qp,
			      const struct sroce_send_wqe *w)
{
	struct sroce_mr *mr;
	int status;

	if (w->opcode == SROCE_WR_LOCAL_INV)
		return sroce_mr_invalidate(qp->sdev, qp->ibqp.pd,
					   qp->ibqp.qp_num, w->imm_or_inv,
					   false) ?
		       IB_WC_LOC_QP_OP_ERR : 0;
	if (w->opcode == SROCE_WR_BIND_MW)
		return sroce_mw_bind(qp->sdev, qp->ibqp.pd, qp->ibqp.qp_num, w);
	mr = sroce_mr_get_index(qp->sdev, (u32)w->remote_addr);
	if (!mr)
		return IB_WC_LOC_QP_OP_ERR;
	status = sroce_mr_fast_reg(mr, qp->ibqp.pd, w->rkey, w->imm_or_inv);
	sroce_mr_put(mr);
	return status;
}

/* ---------------------------------------------------------------------- */
/* requester                                                              */

/* The transport of a connected QP's requests (proto/sroce_wr.h). */
static u8 sroce_req_transport(const struct sroce_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		return SROCE_TRANSPORT_UC;
	case IB_QPT_XRC_INI:
		return SROCE_TRANSPORT_XRC;
	default:
		return SROCE_TRANSPORT_RC;
	}
}

/* Fail the WQE being sent (local error) and take the QP to error. */
static void sroce_req_local_error(struct sroce_qp *qp, u32 idx, int status)
{
	struct sroce_wqe_st *st;

	spin_lock_bh(&qp->sq_lock);
	st = sroce_wst(qp, idx);
	if (st->state != SROCE_WQE_DONE) {
		st->state = SROCE_WQE_DONE;
		st->status = status;
	}
	spin_unlock_bh(&qp->sq_lock);
	sroce_sq_fail(qp);
}

/* The packet sroce_req_one() sends: where it is in its WQE's message. */
struct sroce_req_pos {
	u32 idx;			/* the WQE's index */
	struct sroce_send_pos at;	/* where the packet is in the message */
	bool uc;
	/* The requester before and after sroce_req_advance(): */
	struct {
		u32 psn, offset, psn_hi;
		u8 state;		/* the WQE's */
		bool rtt_on;
	} before;
	struct {
		u32 cur, psn, offset;
		u32 resid;		/* the WQE's: a READ's drops as data comes */
	} after;
};

/*
 * Whether WQE @w at @idx must wait before its next packet: the go-back-N
 * window is full, a fence waits for the WQEs before it, or the READs and
 * atomics in flight are at the limit the responder grants (SQ lock held).
 */
static bool sroce_req_must_wait(struct sroce_qp *qp,
				const struct sroce_send_wqe *w, u32 idx, bool uc)
{
	/*
	 * The window. A resumed READ is exempt: its request is one packet,
	 * and its own responses received so far sit between comp.psn (still
	 * at its first PSN) and req.psn.
	 */
	if (!uc && !(w->opcode == SROCE_WR_RDMA_READ && qp->req.offset) &&
	    sroce_gbn_window_full(qp->req.psn, qp->comp.psn, qp->comp.window))
		return true;
	if ((w->flags & SROCE_SEND_FENCE) && qp->comp.idx != idx &&
	    qp->req.offset == 0)
		return true;
	return sroce_wqe_is_rd_atomic(w->opcode) && qp->req.offset == 0 &&
	       qp->req.rd_atomic >= max_t(u32, qp->attr.max_rd_atomic, 1);
}

/*
 * Build the headers of the next packet of WQE @w at @pos->at.off, and record
 * its message's PSNs when it is the first (SQ lock held). Returns false if
 * the WQE has no such packet on this QP.
 */
static bool sroce_req_build(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			    struct sroce_wqe_st *st, struct sroce_req_pos *pos,
			    struct sroce_pkt *pkt)
{
	int op;

	pos->at = sroce_send_pos_at(st, qp->req.offset, qp->mtu);

	op = sroce_wr_wire_opcode(sroce_req_transport(qp), w->opcode,
				  pos->at.first, pos->at.last);
	if (WARN_ON_ONCE(op < 0))
		return false;
	pkt->bth.opcode = op;
	/* XRC: to the SRQ the WQE names. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI)
		pkt->xrc_srqn = w->remote_qpn & SROCE_QPN_MASK;
	pkt->bth.pkey = SROCE_DEFAULT_PKEY;
	pkt->bth.dqpn = qp->attr.dest_qp_num;
	pkt->bth.psn = qp->req.psn;
	pkt->bth.se = pos->at.last && (w->flags & SROCE_SEND_SOLICITED);
	if (pos->at.first) {
		st->psn_valid = 1;
		st->first_psn = qp->req.psn;
		st->last_psn = sroce_psn_add(qp->req.psn, pos->at.npsn - 1);
		st->resid = st->len;
	}
	/*
	 * A paced QP asks for an ACK on every packet: its packets are spread
	 * out, and one left unacknowledged while the requester waits for
	 * its turn would run into the ACK timeout.
	 */
	pkt->bth.ack_req = !pos->uc &&
			   (READ_ONCE(qp->cc.limited) ||
			    sroce_gbn_ack_req(qp->req.psn, st->first_psn,
					      qp->comp.psn, qp->comp.window,
					      SROCE_ACKREQ_EVERY, pos->at.last));
	pkt->payload_len = pos->at.plen;
	switch (w->opcode) {
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
	case SROCE_WR_ATOMIC_WRITE:
		pkt->reth.va = w->remote_addr;
		pkt->reth.rkey = w->rkey;
		pkt->reth.len = st->len;
		break;
	case SROCE_WR_RDMA_READ:
		/* Resumed, it asks for the rest only (sroce_sendq.h). */
		sroce_read_rereq(w->remote_addr, st->len, pos->at.off,
				 &pkt->reth.va, &pkt->reth.len);
		pkt->reth.rkey = w->rkey;
		break;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		pkt->atomic.va = w->remote_addr;
		pkt->atomic.rkey = w->rkey;
		pkt->atomic.swap_add = w->opcode == SROCE_WR_ATOMIC_CMP_AND_SWP ?
				       w->swap : w->compare_add;
		pkt->atomic.compare = w->compare_add;
		break;
	default:
		break;
	}
	pkt->imm = be32_to_cpu((__force __be32)w->imm_or_inv);
	pkt->ieth_rkey = w->imm_or_inv;
	return true;
}

/*
 * Move the requester past the packet just built, before the SQ lock is
 * dropped (a rewind meanwhile just resends it): the next PSN and offset,
 * the WQE sent (done, on UC) after its last packet, the retransmission
 * count, DCQCN's byte count and the ACK timeout.
 */
static void sroce_req_advance(struct sroce_qp *qp,
			      const struct sroce_send_wqe *w,
			      struct sroce_wqe_st *st,
			      const struct sroce_req_pos *pos,
			      const struct sroce_pkt *pkt)
{
	/* Below the highest PSN ever sent: this packet is a retransmission. */
	bool resent = !pos->uc && sroce_psn_before(pkt->bth.psn, qp->req.psn_hi);

	if (pos->at.last) {
		qp->req.psn = sroce_psn_add(st->first_psn, pos->at.npsn);
		qp->req.offset = 0;
		qp->req.cur++;
		/* UC is unacknowledged: sent is done. */
		st->state = pos->uc ? SROCE_WQE_DONE : SROCE_WQE_SENT;
		if (sroce_wqe_is_rd_atomic(w->opcode))
			qp->req.rd_atomic++;
	} else {
		qp->req.psn = sroce_psn_add(qp->req.psn, 1);
		qp->req.offset += pos->at.plen;
	}
	if (resent) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RETRANS_PKTS);
		trace_sroce_retransmit(qp, pkt);
	} else if (pkt->bth.ack_req && !qp->comp.rtt_on) {
		/* Time the round trip of a new packet that asks for an ACK. */
		qp->comp.rtt_on = true;
		qp->comp.rtt_psn = pkt->bth.psn;
		qp->comp.rtt_ns = ktime_get_ns();
	}
	if (sroce_psn_after(qp->req.psn, qp->req.psn_hi))
		qp->req.psn_hi = qp->req.psn;
	sroce_cc_sent(qp, pos->at.plen, sroce_wire_len(qp, pkt));
	if (!pos->uc)
		qp->comp.sent_j = jiffies;
	/* The ACK timeout runs from the newest packet that asks for an ACK. */
	if (!pos->uc)
		sroce_comp_timers(qp, sroce_gbn_timer_sent(pkt->bth.ack_req, resent,
							   qp->comp.retrans_wait.running));
}

/*
 * A UC WQE's last packet went out, or was dropped: the WQE is done
 * (sroce_req_advance() marked it so) and, UC being unacknowledged,
 * complete. Retire it, and what completed before it.
 */
static void sroce_req_uc_done(struct sroce_qp *qp, struct sroce_wqe_st *st,
			      const struct sroce_req_pos *pos)
{
	spin_lock_bh(&qp->sq_lock);
	if ((s32)(pos->idx - qp->comp.idx) >= 0 &&
	    st->state == SROCE_WQE_DONE && st->status == IB_WC_SUCCESS)
		qp->comp.psn = qp->req.psn;
	sroce_sq_retire_unlock(qp);
}

/*
 * The packet at @pos of an RC or XRC WQE could not be allocated. If nothing
 * moved the requester since (a rewind, a flush, a reset, an ACK that
 * covered the packet, READ response data placed), it takes back just that
 * packet (sroce_req_advance() undone) and holds off for a while before it
 * sends it again; otherwise the requester holds off and goes back N
 * (sroce_comp_nomem()). Either way no retry is spent, and no ACK timeout
 * is needed (at timeout 0 there is none).
 */
static void sroce_req_nomem(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			    struct sroce_wqe_st *st,
			    const struct sroce_req_pos *pos)
{
	bool undo;

	spin_lock_bh(&qp->sq_lock);
	undo = qp->req.cur == pos->after.cur &&
	       qp->req.psn == pos->after.psn &&
	       qp->req.offset == pos->after.offset &&
	       st->resid == pos->after.resid &&
	       (s32)(pos->idx - qp->comp.idx) >= 0 &&
	       !sroce_psn_after(qp->comp.psn, pos->before.psn) &&
	       (!pos->at.last || st->state == SROCE_WQE_SENT);
	if (!undo) {
		sroce_comp_nomem(qp, true);
	} else if (sroce_comp_nomem(qp, false)) {
		qp->req.cur = pos->idx;
		qp->req.psn = pos->before.psn;
		qp->req.offset = pos->before.offset;
		qp->req.psn_hi = pos->before.psn_hi;
		if (pos->at.last) {
			st->state = pos->before.state;
			if (sroce_wqe_is_rd_atomic(w->opcode))
				qp->req.rd_atomic--;
		}
		if (!pos->before.rtt_on)
			qp->comp.rtt_on = false;
	}
	spin_unlock_bh(&qp->sq_lock);
}

/*
 * Fill the packet's payload from the WQE's memory and send it, outside the
 * SQ lock, the WQE's shadow slot held busy (sroce_sq_fetch() leaves it
 * alone). Returns what sroce_req_one() returns.
 */
static int sroce_req_send(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			  struct sroce_wqe_st *st,
			  const struct sroce_req_pos *pos,
			  struct sroce_txpkt *tp)
{
	int status = 0;

	if (sroce_tx_alloc(qp, tp, GFP_KERNEL)) {
		/* Pairs with sroce_sq_fetch()'s smp_load_acquire(). */
		smp_store_release(&qp->req.busy, false);
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		if (!pos->uc) {
			sroce_req_nomem(qp, w, st, pos);
			return 0;
		}
		/*
		 * UC goes on as if the packet were lost on the wire (the
		 * responder drops the rest of its message); nothing else
		 * would run the requester again. After the last packet the
		 * WQE is complete: left unretired, a fenced WQE behind it
		 * would wait for ever.
		 */
		if (pos->at.last)
			sroce_req_uc_done(qp, st, pos);
		return 1;
	}
	if (w->opcode == SROCE_WR_ATOMIC_WRITE) {
		if (pos->at.plen >= SROCE_ATOMIC_WRITE_LEN)
			memcpy(tp->payload, &w->compare_add,
			       SROCE_ATOMIC_WRITE_LEN);
	} else if (pos->at.plen) {
		status = sroce_wqe_data(qp, w, pos->at.off, tp->payload,
					pos->at.plen, SROCE_FROM_MR, 0);
	}
	/*
	 * Done with the shadow slot: a fetch may refill it. Pairs with
	 * sroce_sq_fetch()'s smp_load_acquire().
	 */
	smp_store_release(&qp->req.busy, false);
	if (status) {
		sroce_tx_free(tp);
		sroce_req_local_error(qp, pos->idx, status);
		return 1;
	}
	sroce_tx_send(qp, tp);
	if (pos->uc && pos->at.last)
		sroce_req_uc_done(qp, st, pos);
	return 1;
}

/*
 * Whether the requester may send now. SQD: no new WQE starts; the message
 * in progress completes, and what started before SQD (it has PSNs) is sent
 * again when the completer went back for a loss. sq_lock held.
 */
static bool sroce_req_may_send(struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (qp->comp.rnr_wait)
		return false;
	if (state == IB_QPS_RTS)
		return true;
	return state == IB_QPS_SQD &&
	       (qp->req.offset ||
		(qp->req.cur != qp->req.fetched &&
		 sroce_wst(qp, qp->req.cur)->psn_valid));
}

/*
 * Send one packet of the connected QP's send queue (UD: sroce_ud_send_one()).
 * Returns 1 if a packet went out (or a WQE was handled) and the requester
 * should go on, 0 if there is nothing to do now.
 */
static int sroce_req_one(struct sroce_qp *qp)
{
	struct sroce_txpkt tp = {};
	struct sroce_req_pos pos = {};
	struct sroce_send_wqe *w;
	struct sroce_wqe_st *st;
	int status, r;

	if (sroce_qp_is_ud(qp))
		return sroce_ud_send_one(qp);
	spin_lock_bh(&qp->sq_lock);
	if (!sroce_req_may_send(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	r = sroce_sq_next(qp, &pos.idx);
	if (r <= 0) {
		spin_unlock_bh(&qp->sq_lock);
		if (r < 0)
			sroce_qp_fatal(qp);
		return 0;
	}
	st = sroce_wst(qp, pos.idx);
	w = sroce_sq_shadow(qp, pos.idx);
	/* Skip WQEs that failed validation: completing them fails the QP. */
	if (st->state == SROCE_WQE_DONE) {
		qp->req.cur++;
		sroce_sq_retire_unlock(qp);
		return 1;
	}
	pos.uc = qp->ibqp.qp_type == IB_QPT_UC;
	if (sroce_req_must_wait(qp, w, pos.idx, pos.uc)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (sroce_wqe_is_local(w->opcode)) {
		/* Executes once, in order; a rewind skips it as DONE. */
		status = sroce_req_local_op(qp, w);
		st->state = SROCE_WQE_DONE;
		st->status = status ? status : IB_WC_SUCCESS;
		qp->req.cur++;
		sroce_sq_retire_unlock(qp);
		return 1;
	}
	/* DCQCN: a rate-limited QP sends when its pacer says so. */
	if (unlikely(READ_ONCE(qp->cc.limited)) &&
	    sroce_cc_pace_wait_slow(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (!sroce_req_build(qp, w, st, &pos, &tp.pkt)) {
		/* sroce_sq_fetch_one() let through what the QP cannot send. */
		spin_unlock_bh(&qp->sq_lock);
		sroce_qp_fatal(qp);
		return 0;
	}
	pos.before.psn = qp->req.psn;
	pos.before.offset = qp->req.offset;
	pos.before.psn_hi = qp->req.psn_hi;
	pos.before.state = st->state;
	pos.before.rtt_on = qp->comp.rtt_on;
	sroce_req_advance(qp, w, st, &pos, &tp.pkt);
	pos.after.cur = qp->req.cur;
	pos.after.psn = qp->req.psn;
	pos.after.offset = qp->req.offset;
	pos.after.resid = st->resid;
	qp->req.busy_idx = pos.idx;
	qp->req.busy = true;
	spin_unlock_bh(&qp->sq_lock);
	return sroce_req_send(qp, w, st, &pos, &tp);
}

/*
 * Send what there is, out of *@budget packets (or WQEs handled). False when
 * there is nothing to do now; true when the budget ran out first.
 */
static bool sroce_req_process(struct sroce_qp *qp, int *budget)
{
	while (*budget > 0) {
		if (!sroce_req_one(qp))
			return false;
		(*budget)--;
	}
	return true;
}

/*
 * Queue the requester's work. A paced (rate-limited) QP is woken for every
 * few packets; it keeps sending from the CPU it last sent from, because
 * packets sent from ever-changing CPUs get reordered on the way (the
 * per-CPU backlogs of veth and RPS, XPS queue choice), and go-back-N pays
 * for each reordering with a retransmission.
 */
static void sroce_req_queue(struct sroce_qp *qp)
{
	/* The work reads the producer index: no doorbell needed till then. */
	WRITE_ONCE(qp->sq.hdr->polling, 1);
	sroce_qp_work_queue(&qp->req_work, READ_ONCE(qp->cc.limited),
			    READ_ONCE(qp->req.cpu));
}

/*
 * Would the requester fetch WQEs from the ring if it ran now: may it send
 * (UD: in RTS), and is there room in the shadow? If not, what it waits for
 * fetches them: the room an ACK frees (the completer kicks when the
 * producer index moved), modify_qp to RTS, the RNR or pacing timer; in the
 * error states the provider always rings. sq_lock held.
 */
static bool sroce_req_would_fetch(struct sroce_qp *qp)
{
	bool may = sroce_qp_is_ud(qp) ? READ_ONCE(qp->state) == IB_QPS_RTS :
					sroce_req_may_send(qp);

	return may && sroce_sq_room(qp);
}

/*
 * Does the requester stop to wait for something that will run it again
 * and fetch what was posted meanwhile? An RC (or XRC) requester with a WQE
 * fetched and not sent does: an ACK opening the window, every earlier WQE
 * completing before a fenced one, a READ or atomic slot (max_rd_atomic),
 * the RNR, pacing or ACK timeout's timer, the hold after a packet it could
 * not allocate (sroce_comp_nomem()), modify_qp back to RTS (the completer
 * kicks on every response while such a WQE is there). UC and UD have no
 * ACKs. sq_lock held.
 */
static bool sroce_req_waits(struct sroce_qp *qp)
{
	return qp->req.cur != qp->req.fetched &&
	       (qp->ibqp.qp_type == IB_QPT_RC ||
		qp->ibqp.qp_type == IB_QPT_XRC_INI);
}

/* What one sroce_req_exec() call remembers of its extra runs. */
struct sroce_req_rerun {
	bool done;	/* it ran again for WQEs it would fetch... */
	u32 kidx;	/* ...with the ring's consumer index here */
};

/*
 * The requester is about to stop. If it waits (sroce_req_waits()),
 * sroce_queue_hdr.polling stays set and posts leave their doorbell out.
 * Otherwise the provider must ring again: clear it, then look at the
 * producer index once more. True if WQEs were published that a run would
 * fetch now (a post may have left its doorbell out): the requester runs
 * again. Only then, and not again if the last such run fetched nothing
 * (the process moved its producer index back: its own ring is broken, and
 * its next doorbell runs the requester): the process owns that word, and a
 * run that does not fetch would find nothing to do however often it moved.
 * Requester only (SROCE_QPF_REQ_RUNNING held).
 */
static bool sroce_req_stop_polling(struct sroce_qp *qp,
				   struct sroce_req_rerun *r)
{
	bool again = false;

	spin_lock_bh(&qp->sq_lock);
	if (!sroce_req_waits(qp)) {
		WRITE_ONCE(qp->sq.hdr->polling, 0);
		/* Pairs with the provider's fence after its producer store. */
		smp_mb();
		again = READ_ONCE(qp->sq.hdr->producer) != qp->sq.kidx &&
			sroce_req_would_fetch(qp) &&
			!(r->done && r->kidx == qp->sq.kidx);
		if (again) {
			r->done = true;
			r->kidx = qp->sq.kidx;
		}
	}
	spin_unlock_bh(&qp->sq_lock);
	return again;
}

/*
 * A flush (the QP went to an error state) fetches no more than the shadow
 * has room for, and a slot this requester holds busy while it sends counts
 * against that room when its WQE was retired meanwhile (an ACKed resend,
 * a UC WQE done, an earlier flush): WQEs could stay in the ring unflushed
 * (posted while polling was set, their doorbells left out), and nothing
 * would look at them again. The requester is done with its slot at the
 * end of its run: it flushes again then, before it lets another run
 * start. Either this sees the error state, or the flush saw the slot free
 * (the full barrier here, and the one after the state's change in
 * sroce_qp_mark_error() or sroce_qp_sq_error()). A QP being destroyed is
 * left alone, as sroce_req_kick() leaves it. Requester only
 * (SROCE_QPF_REQ_RUNNING held).
 */
static void sroce_req_flush_rest(struct sroce_qp *qp)
{
	enum ib_qp_state state;

	/* Pairs with the barrier after the error state's store. */
	smp_mb();
	state = READ_ONCE(qp->state);
	if ((state == IB_QPS_ERR || state == IB_QPS_SQE) &&
	    !test_bit(SROCE_QPF_DYING, &qp->flags))
		sroce_sq_flush(qp);
}

/*
 * Run the requester, unless it runs already (it runs again then: AGAIN).
 * One call sends at most SROCE_REQ_BUDGET packets, however often kicks
 * and reruns bring it back; the rest goes to the work queue (a doorbell's
 * syscall, or one work item, does not send for ever while others post).
 */
static void sroce_req_exec(struct sroce_qp *qp)
{
	struct sroce_req_rerun rerun = {};
	int budget = SROCE_REQ_BUDGET;
	bool more;

	for (;;) {
		set_bit(SROCE_QPF_REQ_AGAIN, &qp->flags);
		if (test_and_set_bit_lock(SROCE_QPF_REQ_RUNNING, &qp->flags))
			return;
		WRITE_ONCE(qp->req.cpu, raw_smp_processor_id());
		WRITE_ONCE(qp->sq.hdr->polling, 1);
		more = false;
		while (!more &&
		       test_and_clear_bit(SROCE_QPF_REQ_AGAIN, &qp->flags))
			more = sroce_req_process(qp, &budget);
		/* More to do: the work queued below runs, and looks again. */
		if (!more) {
			sroce_req_flush_rest(qp);
			if (sroce_req_stop_polling(qp, &rerun))
				set_bit(SROCE_QPF_REQ_AGAIN, &qp->flags);
		}
		clear_bit_unlock(SROCE_QPF_REQ_RUNNING, &qp->flags);
		/* Pairs with the kicker's set_bit(AGAIN) before its test. */
		smp_mb__after_atomic();
		if (more) {
			if (!test_bit(SROCE_QPF_DYING, &qp->flags))
				sroce_req_queue(qp);
			return;
		}
		if (!test_bit(SROCE_QPF_REQ_AGAIN, &qp->flags))
			return;
	}
}

static void sroce_req_work_any(struct work_struct *work)
{
	sroce_req_exec(container_of(work, struct sroce_qp, req_work.any));
	cond_resched();
}

static void sroce_req_work_pace(struct work_struct *work)
{
	sroce_req_exec(container_of(work, struct sroce_qp, req_work.pace));
	cond_resched();
}

/**
 * sroce_req_kick - make the requester look at the send queue
 * @qp: the QP
 * @may_run_inline: the caller is in process context and may send from it
 */
void sroce_req_kick(struct sroce_qp *qp, bool may_run_inline)
{
	if (test_bit(SROCE_QPF_DYING, &qp->flags) || !sroce_qp_has_sq(qp))
		return;
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		sroce_qp_flush(qp);
		return;
	}
	if (READ_ONCE(qp->state) == IB_QPS_SQE) {
		sroce_sq_flush(qp);
		return;
	}
	/* A paced QP sends only from its pacer's CPU: see sroce_req_queue(). */
	if (may_run_inline && !in_interrupt() && !READ_ONCE(qp->cc.limited))
		sroce_req_exec(qp);
	else
		sroce_req_queue(qp);
}

/* ---------------------------------------------------------------------- */

/* The requester's part of a new QP. */
void sroce_req_init(struct sroce_qp *qp)
{
	sroce_qp_work_init(&qp->req_work, sroce_req_work_any,
			   sroce_req_work_pace);
}

/* Back to RESET: nothing sent, nothing fetched. Locks held by the caller. */
void sroce_req_reset(struct sroce_qp *qp)
{
	memset(&qp->req, 0, sizeof(qp->req));
}

/* modify_qp's attributes the requester keeps: the first PSN it sends. */
void sroce_req_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		      int mask)
{
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = sroce_psn_mask(attr->sq_psn);
		qp->req.psn_hi = qp->req.psn;
	}
}

/* The QP is dying (SROCE_QPF_DYING set): wait for the requester's work. */
void sroce_req_stop(struct sroce_qp *qp)
{
	sroce_qp_work_cancel_sync(&qp->req_work);
}
