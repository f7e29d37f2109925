// SPDX-License-Identifier: GPL-2.0
/*
 * sroce send side: the requester turns send WQEs into packets (RC, UC,
 * UD, XRC initiator), executes local work requests, flushes the send
 * queue, and owns the transport's per-QP init/reset/stop. The completer
 * and the loss recovery are in sroce_comp.c.
 */

#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_udp.h"
#include "proto/sroce_wr.h"

/* Ask for an ACK at least this often inside long messages. */
#define SROCE_ACKREQ_EVERY	64
/* Packets per requester run before yielding to the workqueue. */
#define SROCE_REQ_BUDGET	256

struct workqueue_struct *sroce_wq;
struct workqueue_struct *sroce_pace_wq;

u32 sroce_wqe_len(const struct sroce_send_wqe *w)
{
	const struct sroce_sge *sge = (const void *)(w + 1);
	u64 len = 0;
	u32 i;

	if (sroce_wqe_is_local(w->opcode))
		return 0;
	/* The 8 bytes travel in the WQE (compare_add). */
	if (w->opcode == SROCE_WR_ATOMIC_WRITE)
		return SROCE_ATOMIC_WRITE_LEN;
	if (w->flags & SROCE_SEND_INLINE)
		return w->inline_len;
	for (i = 0; i < w->num_sge; i++)
		len += sge[i].length;
	return len > SROCE_MAX_MSG_SIZE ? U32_MAX : (u32)len;
}

/* PSNs a WQE uses: packets of the message; a READ reserves its responses. */
static u32 sroce_wqe_npsn(struct sroce_qp *qp, const struct sroce_send_wqe *w)
{
	if (sroce_wqe_is_atomic(w->opcode))
		return 1;
	return sroce_msg_pkts(sroce_wqe_len(w), qp->mtu);
}

/*
 * Copy a WQE from the SQ ring into the shadow, validating what the kernel
 * relies on. Returns false (and leaves fetched alone) if the ring content
 * is invalid; the caller completes it with an error.
 */
static bool sroce_req_fetch_one(struct sroce_qp *qp, u32 idx)
{
	const u8 *src = sroce_queue_slot(&qp->sq, idx);
	u8 *dst = sroce_sq_shadow(qp, idx);
	struct sroce_send_wqe *w = (void *)dst;
	u32 slot = sroce_queue_slot_size(&qp->sq);
	struct sroce_send_wqe hdr;
	u32 body;

	BUILD_BUG_ON(sizeof(hdr) != SROCE_SEND_WQE_HDR_SIZE);
	/*
	 * Check the lengths on a private copy: the shadow only ever holds
	 * lengths that fit the slot and the QP's limits, even for a moment.
	 */
	memcpy(&hdr, src, sizeof(hdr));
	if (hdr.flags & SROCE_SEND_INLINE)
		body = hdr.inline_len;
	else
		body = (u32)hdr.num_sge * sizeof(struct sroce_sge);
	if (body > slot - SROCE_SEND_WQE_HDR_SIZE ||
	    (hdr.flags & SROCE_SEND_INLINE && hdr.inline_len > qp->max_inline) ||
	    (!(hdr.flags & SROCE_SEND_INLINE) &&
	     hdr.num_sge > qp->max_send_sge)) {
		/* Kept for its completion: wr_id, opcode, flags. */
		hdr.flags &= ~SROCE_SEND_INLINE;
		hdr.num_sge = 0;
		hdr.inline_len = 0;
		memcpy(w, &hdr, sizeof(hdr));
		return false;
	}
	memcpy(w, &hdr, sizeof(hdr));
	memcpy(dst + SROCE_SEND_WQE_HDR_SIZE, src + SROCE_SEND_WQE_HDR_SIZE,
	       body);
	/*
	 * The opcode table (include/sroce-abi.h): what this QP type may post;
	 * MRs by index only from the kernel's own rings; a READ's and an
	 * atomic's local buffer is where data arrives, never inline; an
	 * atomic's holds the 8-byte original value.
	 */
	if (!sroce_wr_in(w->opcode, sroce_qp_wr_ops(qp)) ||
	    (qp->is_user && sroce_wr_in(w->opcode, SROCE_WR_KERNEL_OPS)) ||
	    (w->flags & SROCE_SEND_INLINE &&
	     sroce_wr_in(w->opcode, SROCE_WR_RD_ATOMIC_OPS)) ||
	    (sroce_wr_in(w->opcode, SROCE_WR_ATOMIC_OPS) &&
	     sroce_wqe_len(w) < 8))
		return false;
	if (sroce_qp_is_ud(qp)) {
		struct sroce_ud_dest *d;

		/*
		 * The AH is resolved now, once: destroying it after the post
		 * cannot change where this WQE goes.
		 */
		d = &qp->ud_dest[idx & (qp->sq.num_slots - 1)];
		if (!sroce_ah_lookup(qp->sdev, w->ah, qp->ibqp.pd, &d->path))
			return false;
		d->dqpn = w->remote_qpn & SROCE_QPN_MASK;
		/* IBTA: a Q_Key with the high bit set means the QP's own. */
		d->qkey = w->remote_qkey & 0x80000000 ? qp->attr.qkey :
			  w->remote_qkey;
	}
	return sroce_wqe_len(w) != U32_MAX;
}

/*
 * Pull newly posted WQEs into the shadow. Called with sq_lock held.
 * Returns false if the producer index is garbage: the QP cannot go on
 * (the caller reports it with sroce_qp_fatal() once the lock is dropped).
 */
static bool sroce_req_fetch(struct sroce_qp *qp)
{
	int n = sroce_queue_count_produced(&qp->sq);
	u32 oldest = qp->comp.idx, room;

	if (n < 0)
		return false;
	/* Pairs with the requester's smp_store_release() of busy. */
	if (smp_load_acquire(&qp->req.busy) &&
	    (s32)(qp->req.busy_idx - oldest) < 0)
		oldest = qp->req.busy_idx;
	room = qp->sq.num_slots - (qp->req.fetched - oldest);
	if (room > qp->sq.num_slots)
		room = 0;
	if (n > room)
		n = room;
	while (n--) {
		u32 idx = qp->req.fetched;
		struct sroce_wqe_st *st = sroce_wst(qp, idx);

		memset(st, 0, sizeof(*st));
		if (!sroce_req_fetch_one(qp, idx)) {
			st->state = SROCE_WQE_DONE;
			st->status = IB_WC_LOC_QP_OP_ERR;
		}
		qp->req.fetched++;
		qp->sq.kidx = qp->req.fetched;
	}
	return true;
}

/*
 * A send WQE completed in error. RC: the QP goes to the error state. UD and
 * UC: only the send queue does (SQE, IBTA 10.3.1); receives go on, and
 * modify_qp(SQE -> RTS) resumes sending.
 */
static void sroce_req_fail(struct sroce_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_RC ||
	    qp->ibqp.qp_type == IB_QPT_XRC_INI)
		sroce_qp_error(qp);
	else
		sroce_qp_sq_error(qp);
}

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

/*
 * Copy @len bytes at message offset @off of a WQE's local data (inline or
 * SGEs) to or from @buf. Returns 0 or an ib_wc_status for the failure.
 */
int sroce_wqe_data(struct sroce_qp *qp, const struct sroce_send_wqe *w,
		   u32 off, void *buf, u32 len, enum sroce_copy_dir dir,
		   int access)
{
	if (w->flags & SROCE_SEND_INLINE) {
		if (off + len > w->inline_len)
			return IB_WC_LOC_LEN_ERR;
		memcpy(buf, (const u8 *)(w + 1) + off, len);
		return 0;
	}
	return sroce_sge_copy(qp->sdev, qp->ibqp.pd, (const void *)(w + 1),
			      w->num_sge, off, buf, len, dir, access, NULL);
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
	sroce_req_fail(qp);
}

/* A UD QP's route cache follows the destination of the WQE being sent. */
static void sroce_req_ud_route(struct sroce_qp *qp,
			       const struct sroce_ud_dest *d)
{
	u16 sport = sroce_udp_sport_for_qp(d->path.flow_label,
					   qp->ibqp.qp_num, d->dqpn);

	/* The requester is this path's only writer: it may read it as is. */
	if (!memcmp(&qp->av.p, &d->path, sizeof(d->path)) &&
	    qp->av.sport == sport)
		return;
	write_seqlock_bh(&qp->av.lock);
	if (memcmp(&qp->av.p, &d->path, sizeof(d->path))) {
		qp->av.p = d->path;
		dst_cache_reset(&qp->av.dst);
	}
	qp->av.sport = sport;
	write_sequnlock_bh(&qp->av.lock);
}

/*
 * Retire what the completer can after the requester changed a WQE's state,
 * and drop the SQ lock; a failed completion fails the QP.
 */
static void sroce_req_retire_unlock(struct sroce_qp *qp)
	__releases(&qp->sq_lock)
{
	bool err = sroce_comp_retire(qp);

	spin_unlock_bh(&qp->sq_lock);
	if (err)
		sroce_req_fail(qp);
}

/*
 * UD: one WQE is one packet, complete once it is handed to the IP stack
 * (unreliable: a packet dropped later is not the sender's error).
 */
static int sroce_req_ud_one(struct sroce_qp *qp)
{
	struct sroce_txpkt tp = {};
	struct sroce_pkt *pkt = &tp.pkt;
	struct sroce_ud_dest dest;
	struct sroce_send_wqe *w;
	struct sroce_wqe_st *st;
	int status = IB_WC_SUCCESS, op;
	u32 idx, len, mtu;

	spin_lock_bh(&qp->sq_lock);
	if (READ_ONCE(qp->state) != IB_QPS_RTS) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (!sroce_req_fetch(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		sroce_qp_fatal(qp);
		return 0;
	}
	idx = qp->req.cur;
	if (idx == qp->req.fetched) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	st = sroce_wst(qp, idx);
	w = sroce_sq_shadow(qp, idx);
	qp->req.cur++;
	if (st->state == SROCE_WQE_DONE) {
		/* Failed validation at fetch. */
		sroce_req_retire_unlock(qp);
		return 1;
	}
	dest = qp->ud_dest[idx & (qp->sq.num_slots - 1)];
	pkt->bth.psn = qp->req.psn;
	qp->req.psn = sroce_psn_add(qp->req.psn, 1);
	qp->req.busy_idx = idx;
	qp->req.busy = true;
	spin_unlock_bh(&qp->sq_lock);

	len = sroce_wqe_len(w);
	mtu = sroce_ib_mtu_bytes(sroce_ib_mtu_for_netdev(READ_ONCE(qp->sdev->ndev->mtu)));
	if (len > mtu) {
		status = IB_WC_LOC_LEN_ERR;
		goto done;
	}
	op = sroce_wr_wire_opcode(SROCE_TRANSPORT_UD, w->opcode, true, true);
	if (WARN_ON_ONCE(op < 0)) {
		/* sroce_req_fetch_one() let through what UD cannot send. */
		status = IB_WC_LOC_QP_OP_ERR;
		goto done;
	}
	pkt->bth.opcode = op;
	pkt->bth.pkey = SROCE_DEFAULT_PKEY;
	pkt->bth.dqpn = dest.dqpn;
	pkt->bth.se = !!(w->flags & SROCE_SEND_SOLICITED);
	pkt->deth.qkey = dest.qkey;
	pkt->deth.sqpn = qp->ibqp.qp_num;
	pkt->imm = be32_to_cpu((__force __be32)w->imm_or_inv);
	pkt->payload_len = len;
	sroce_req_ud_route(qp, &dest);
	if (sroce_tx_alloc(qp, &tp, GFP_KERNEL)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		goto done;
	}
	if (len) {
		status = sroce_wqe_data(qp, w, 0, tp.payload, len,
					SROCE_FROM_MR, 0);
		if (status) {
			sroce_tx_free(&tp);
			goto done;
		}
	}
	sroce_tx_send(qp, &tp);
done:
	spin_lock_bh(&qp->sq_lock);
	qp->req.busy = false;
	/* A flush meanwhile has completed it (its slot stayed ours). */
	if ((s32)(idx - qp->comp.idx) >= 0 && st->state != SROCE_WQE_DONE) {
		st->state = SROCE_WQE_DONE;
		st->status = status;
	}
	sroce_req_retire_unlock(qp);
	return 1;
}

/*
 * Send one packet. Returns 1 if a packet went out (or an error was handled)
 * and the requester should continue, 0 if there is nothing to do now.
 */
/* Bytes @pkt takes on the wire: Ethernet, IP, UDP, RoCE headers, ICRC. */
/* Bytes @pkt takes on the wire (Ethernet frame without FCS). */
u32 sroce_wire_len(const struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info = sroce_opcode_info(pkt->bth.opcode);

	return ETH_HLEN + (qp->av.p.ipv6 ? sizeof(struct ipv6hdr) :
					   sizeof(struct iphdr)) +
	       sizeof(struct udphdr) + (info ? info->hdr_len : 0) +
	       pkt->payload_len + sroce_pad_len(pkt->payload_len) +
	       SROCE_ICRC_LEN;
}

/* The packet sroce_req_one() sends: where it is in its WQE's message. */
struct sroce_req_pos {
	u32 idx;	/* the WQE's index */
	u32 len;	/* the message's length */
	u32 off;	/* this packet's offset in it */
	u32 plen;	/* this packet's payload */
	u32 npsn;	/* the message's PSNs */
	bool first, last, uc;
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
	    sroce_psn_diff(qp->req.psn, qp->comp.psn) >= (s32)qp->comp.window)
		return true;
	if ((w->flags & SROCE_SEND_FENCE) && qp->comp.idx != idx &&
	    qp->req.offset == 0)
		return true;
	return sroce_wqe_is_rd_atomic(w->opcode) && qp->req.offset == 0 &&
	       qp->req.rd_atomic >= max_t(u32, qp->attr.max_rd_atomic, 1);
}

/*
 * Build the headers of the next packet of WQE @w at @pos->off, and record
 * its message's PSNs when it is the first (SQ lock held). Returns false if
 * the WQE has no such packet on this QP.
 */
static bool sroce_req_build(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			    struct sroce_wqe_st *st, struct sroce_req_pos *pos,
			    struct sroce_pkt *pkt)
{
	int op;

	pos->len = sroce_wqe_len(w);
	pos->off = qp->req.offset;
	pos->first = pos->off == 0;
	if (sroce_wqe_is_rd_atomic(w->opcode)) {
		pos->plen = 0;
		pos->last = true;
	} else {
		pos->plen = min(pos->len - pos->off, qp->mtu);
		pos->last = pos->off + pos->plen >= pos->len;
	}
	pos->npsn = sroce_wqe_npsn(qp, w);

	op = sroce_wr_wire_opcode(sroce_req_transport(qp), w->opcode,
				  pos->first, pos->last);
	if (WARN_ON_ONCE(op < 0))
		return false;
	pkt->bth.opcode = op;
	/* XRC: to the SRQ the WQE names. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI)
		pkt->xrc_srqn = w->remote_qpn & SROCE_QPN_MASK;
	pkt->bth.pkey = SROCE_DEFAULT_PKEY;
	pkt->bth.dqpn = qp->attr.dest_qp_num;
	pkt->bth.psn = qp->req.psn;
	pkt->bth.se = pos->last && (w->flags & SROCE_SEND_SOLICITED);
	if (pos->first) {
		st->started = 1;
		st->psn_valid = 1;
		st->first_psn = qp->req.psn;
		st->last_psn = sroce_psn_add(qp->req.psn, pos->npsn - 1);
		st->resid = pos->len;
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
					      SROCE_ACKREQ_EVERY, pos->last));
	pkt->payload_len = pos->plen;
	switch (w->opcode) {
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
	case SROCE_WR_ATOMIC_WRITE:
		pkt->reth.va = w->remote_addr;
		pkt->reth.rkey = w->rkey;
		pkt->reth.len = pos->len;
		break;
	case SROCE_WR_RDMA_READ:
		/*
		 * A READ resumed at its first missing response asks for the
		 * rest only: address and length move with the PSN (IBTA
		 * C9-106; rdma_rxe answers from this RETH).
		 */
		pkt->reth.va = w->remote_addr + pos->off;
		pkt->reth.rkey = w->rkey;
		pkt->reth.len = pos->len - pos->off;
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
	if (pos->last) {
		qp->req.psn = sroce_psn_add(st->first_psn, pos->npsn);
		qp->req.offset = 0;
		qp->req.cur++;
		/* UC is unacknowledged: sent is done. */
		st->state = pos->uc ? SROCE_WQE_DONE : SROCE_WQE_SENT;
		if (sroce_wqe_is_rd_atomic(w->opcode))
			qp->req.rd_atomic++;
	} else {
		qp->req.psn = sroce_psn_add(qp->req.psn, 1);
		qp->req.offset += pos->plen;
	}
	/* Below the highest PSN ever sent: this packet is a retransmission. */
	if (!pos->uc && sroce_psn_diff(pkt->bth.psn, qp->req.psn_hi) < 0)
		sroce_stat_inc(qp->sdev, SROCE_CNT_RETRANS_PKTS);
	if (sroce_psn_diff(qp->req.psn, qp->req.psn_hi) > 0)
		qp->req.psn_hi = qp->req.psn;
	sroce_cc_sent(qp, pos->plen, sroce_wire_len(qp, pkt));
	/*
	 * The ACK timeout runs from the newest packet that asks for an
	 * ACK: timing from the oldest would fire in the middle of a long,
	 * healthy burst on a slow host. A lost packet before it still gets
	 * a sequence NAK from the responder.
	 */
	if (!pos->uc &&
	    (pkt->bth.ack_req || !timer_pending(&qp->comp.retrans_timer)))
		sroce_comp_arm_retrans(qp);
}

/*
 * Fill the packet's payload from the WQE's memory and send it, outside the
 * SQ lock, the WQE's shadow slot held busy (sroce_req_fetch() leaves it
 * alone). Returns what sroce_req_one() returns.
 */
static int sroce_req_send(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			  struct sroce_wqe_st *st,
			  const struct sroce_req_pos *pos,
			  struct sroce_txpkt *tp)
{
	int status = 0;

	if (sroce_tx_alloc(qp, tp, GFP_KERNEL)) {
		/* Pairs with sroce_req_fetch()'s smp_load_acquire(). */
		smp_store_release(&qp->req.busy, false);
		/* Like a lost packet: the retransmit timer recovers. */
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		return 0;
	}
	if (w->opcode == SROCE_WR_ATOMIC_WRITE) {
		if (pos->plen >= SROCE_ATOMIC_WRITE_LEN)
			memcpy(tp->payload, &w->compare_add,
			       SROCE_ATOMIC_WRITE_LEN);
	} else if (pos->plen) {
		status = sroce_wqe_data(qp, w, pos->off, tp->payload, pos->plen,
					SROCE_FROM_MR, 0);
	}
	/*
	 * Done with the shadow slot: a fetch may refill it. Pairs with
	 * sroce_req_fetch()'s smp_load_acquire().
	 */
	smp_store_release(&qp->req.busy, false);
	if (status) {
		sroce_tx_free(tp);
		sroce_req_local_error(qp, pos->idx, status);
		return 1;
	}
	sroce_tx_send(qp, tp);
	if (pos->uc && pos->last) {
		spin_lock_bh(&qp->sq_lock);
		if ((s32)(pos->idx - qp->comp.idx) >= 0 &&
		    st->state == SROCE_WQE_DONE && st->status == IB_WC_SUCCESS)
			qp->comp.psn = qp->req.psn;
		sroce_req_retire_unlock(qp);
	}
	return 1;
}

/*
 * Send one packet of the connected QP's send queue (UD: sroce_req_ud_one()).
 * Returns 1 if a packet went out (or a WQE was handled) and the requester
 * should go on, 0 if there is nothing to do now.
 */
static int sroce_req_one(struct sroce_qp *qp)
{
	struct sroce_txpkt tp = {};
	struct sroce_req_pos pos = {};
	struct sroce_send_wqe *w;
	struct sroce_wqe_st *st;
	int status;

	if (sroce_qp_is_ud(qp))
		return sroce_req_ud_one(qp);
	spin_lock_bh(&qp->sq_lock);
	/* SQD: no new WQE starts, the message in progress completes. */
	if ((READ_ONCE(qp->state) != IB_QPS_RTS &&
	     !(READ_ONCE(qp->state) == IB_QPS_SQD && qp->req.offset)) ||
	    qp->comp.rnr_wait) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (!sroce_req_fetch(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		sroce_qp_fatal(qp);
		return 0;
	}
	pos.idx = qp->req.cur;
	if (pos.idx == qp->req.fetched) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	st = sroce_wst(qp, pos.idx);
	w = sroce_sq_shadow(qp, pos.idx);
	/* Skip WQEs that failed validation: completing them fails the QP. */
	if (st->state == SROCE_WQE_DONE) {
		qp->req.cur++;
		sroce_req_retire_unlock(qp);
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
		sroce_req_retire_unlock(qp);
		return 1;
	}
	/* DCQCN: a rate-limited QP sends when its pacer says so. */
	if (unlikely(READ_ONCE(qp->cc.limited)) &&
	    sroce_cc_pace_wait_slow(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (!sroce_req_build(qp, w, st, &pos, &tp.pkt)) {
		/* sroce_req_fetch_one() let through what the QP cannot send. */
		spin_unlock_bh(&qp->sq_lock);
		sroce_qp_fatal(qp);
		return 0;
	}
	sroce_req_advance(qp, w, st, &pos, &tp.pkt);
	qp->req.busy_idx = pos.idx;
	qp->req.busy = true;
	spin_unlock_bh(&qp->sq_lock);
	return sroce_req_send(qp, w, st, &pos, &tp);
}

static bool sroce_req_process(struct sroce_qp *qp)
{
	int budget = SROCE_REQ_BUDGET;

	while (budget--) {
		if (!sroce_req_one(qp))
			return false;
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
	int cpu = READ_ONCE(qp->req.cpu);

	if (READ_ONCE(qp->cc.limited) && cpu_online(cpu))
		queue_work_on(cpu, sroce_pace_wq, &qp->req_work);
	else
		queue_work(sroce_wq, &qp->req_work);
}

static void sroce_req_exec(struct sroce_qp *qp)
{
	bool more;

	for (;;) {
		set_bit(SROCE_QPF_REQ_AGAIN, &qp->flags);
		if (test_and_set_bit_lock(SROCE_QPF_REQ_RUNNING, &qp->flags))
			return;
		WRITE_ONCE(qp->req.cpu, raw_smp_processor_id());
		more = false;
		while (!more &&
		       test_and_clear_bit(SROCE_QPF_REQ_AGAIN, &qp->flags))
			more = sroce_req_process(qp);
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

static void sroce_req_work(struct work_struct *work)
{
	sroce_req_exec(container_of(work, struct sroce_qp, req_work));
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
		sroce_qp_flush_sq(qp);
		return;
	}
	/* A paced QP sends only from its pacer's CPU: see sroce_req_queue(). */
	if (may_run_inline && !in_interrupt() && !READ_ONCE(qp->cc.limited))
		sroce_req_exec(qp);
	else
		sroce_req_queue(qp);
}

/* ---------------------------------------------------------------------- */

/*
 * sroce_qp_flush - complete everything outstanding with WR_FLUSH_ERR
 *
 * A WQE already marked failed keeps its own status. Receive WQEs are
 * flushed too. Called when the QP is (or goes) in the error state.
 */
void sroce_qp_flush(struct sroce_qp *qp)
{
	sroce_qp_flush_sq(qp);
	sroce_resp_flush(qp);
}

/* Complete the send queue's outstanding WQEs with WR_FLUSH_ERR. */
void sroce_qp_flush_sq(struct sroce_qp *qp)
{
	int n;

	spin_lock_bh(&qp->sq_lock);
	if (!qp->sq.hdr) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	del_timer(&qp->comp.retrans_timer);
	sroce_req_fetch(qp);
	for (n = qp->comp.idx; n != qp->req.fetched; n++) {
		struct sroce_wqe_st *st = sroce_wst(qp, n);

		if (st->state != SROCE_WQE_DONE) {
			st->state = SROCE_WQE_DONE;
			st->status = IB_WC_WR_FLUSH_ERR;
		}
	}
	sroce_comp_retire(qp);
	qp->req.cur = qp->comp.idx;
	qp->req.offset = 0;
	spin_unlock_bh(&qp->sq_lock);
}

void sroce_transport_init_qp(struct sroce_qp *qp)
{
	sroce_cc_qp_init(qp);
	INIT_WORK(&qp->req_work, sroce_req_work);
	INIT_WORK(&qp->resp_work, sroce_read_work);
	skb_queue_head_init(&qp->resp.backlog);
	sroce_comp_init(qp);
}

/* Back to RESET: forget all transport state. Locks held by the caller. */
void sroce_transport_reset(struct sroce_qp *qp)
{
	del_timer(&qp->comp.retrans_timer);
	del_timer(&qp->comp.rnr_timer);
	memset(&qp->req, 0, sizeof(qp->req));
	qp->comp.idx = 0;
	qp->comp.psn = 0;
	qp->comp.rnr_wait = false;
	qp->comp.rr_gap = false;
	qp->comp.backoff = 0;
	qp->comp.window = SROCE_GBN_MAX_WINDOW;
	qp->sq.kidx = 0;
	if (qp->sq.hdr) {
		qp->sq.hdr->producer = 0;
		qp->sq.hdr->consumer = 0;
	}
	qp->rq.kidx = 0;
	qp->rq.hdr->producer = 0;
	qp->rq.hdr->consumer = 0;
	sroce_resp_reset(qp);
	sroce_cc_qp_reset(qp);
}

/*
 * Stop every context that could run on this QP. SROCE_QPF_DYING is set
 * and the QP unreachable from the receive path, so nothing re-arms.
 */
void sroce_transport_stop(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->sq_lock);
	set_bit(SROCE_QPF_DYING, &qp->flags);
	spin_unlock_bh(&qp->sq_lock);
	/* The responder checks it before it queues behind a READ stream. */
	spin_lock_bh(&qp->resp_lock);
	spin_unlock_bh(&qp->resp_lock);
	sroce_cc_qp_stop(qp);
	del_timer_sync(&qp->comp.retrans_timer);
	del_timer_sync(&qp->comp.rnr_timer);
	cancel_work_sync(&qp->req_work);
	cancel_work_sync(&qp->resp_work);
	spin_lock_bh(&qp->resp_lock);
	sroce_read_backlog_purge(qp);
	spin_unlock_bh(&qp->resp_lock);
	del_timer_sync(&qp->comp.retrans_timer);
	del_timer_sync(&qp->comp.rnr_timer);
}
