// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC send side: the requester turns send WQEs into packets, the
 * completer turns ACKs, NAKs and responses into completions, and the
 * timers recover from loss (go-back-N from the oldest unacknowledged PSN).
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
#include "proto/sroce_completer.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_udp.h"

/* Ask for an ACK at least this often inside long messages. */
#define SROCE_ACKREQ_EVERY	64
/* Packets per requester run before yielding to the workqueue. */
#define SROCE_REQ_BUDGET	256

struct workqueue_struct *sroce_wq;
struct workqueue_struct *sroce_pace_wq;

static bool sroce_wqe_is_rd_atomic(u8 op)
{
	return op == SROCE_WR_RDMA_READ || op == SROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == SROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static bool sroce_wqe_is_atomic(u8 op)
{
	return op == SROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == SROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* Work requests that execute locally, without packets. */
static bool sroce_wqe_is_local(u8 op)
{
	return op == SROCE_WR_LOCAL_INV || op == SROCE_WR_REG_MR ||
	       op == SROCE_WR_BIND_MW;
}

static u32 sroce_wqe_len(const struct sroce_send_wqe *w)
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
	if (sroce_qp_is_ud(qp)) {
		struct sroce_ud_dest *d;

		if (w->opcode != SROCE_WR_SEND &&
		    w->opcode != SROCE_WR_SEND_WITH_IMM)
			return false;
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
		return sroce_wqe_len(w) != U32_MAX;
	}
	/* UC: SEND and WRITE (with immediate) and the local operations. */
	if (qp->ibqp.qp_type == IB_QPT_UC &&
	    (sroce_wqe_is_rd_atomic(w->opcode) ||
	     w->opcode == SROCE_WR_SEND_WITH_INV))
		return false;
	switch (w->opcode) {
	case SROCE_WR_SEND:
	case SROCE_WR_SEND_WITH_IMM:
	case SROCE_WR_SEND_WITH_INV:
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		break;
	case SROCE_WR_RDMA_READ:
		if (w->flags & SROCE_SEND_INLINE)
			return false;
		break;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		if (w->flags & SROCE_SEND_INLINE || sroce_wqe_len(w) < 8)
			return false;
		break;
	case SROCE_WR_ATOMIC_WRITE:
		if (qp->ibqp.qp_type == IB_QPT_UC)
			return false;
		break;
	case SROCE_WR_LOCAL_INV:
	case SROCE_WR_BIND_MW:
		break;
	case SROCE_WR_REG_MR:
		/* Names an MR by index: only the kernel's own rings may. */
		if (qp->is_user)
			return false;
		break;
	default:
		return false;
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

static enum ib_wc_opcode sroce_wc_opcode(u8 op)
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

/*
 * Post completions for WQEs that are done, in order, and free their ring
 * slots. Called with sq_lock held. Returns true if an error completion
 * was posted (the QP must go to the error state).
 */
static bool sroce_comp_retire(struct sroce_qp *qp)
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
				.opcode = sroce_wc_opcode(w->opcode),
				.byte_len = st->status == IB_WC_SUCCESS ?
					    sroce_wqe_len(w) : 0,
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

static void sroce_retrans_arm(struct sroce_qp *qp)
{
	u64 ns = sroce_rto_ns(qp->attr.timeout, qp->comp.backoff);

	if (!ns || test_bit(SROCE_QPF_DYING, &qp->flags))
		return;
	mod_timer(&qp->comp.retrans_timer,
		  jiffies + max_t(unsigned long, nsecs_to_jiffies(ns), 1));
}

/*
 * Go back to the oldest unacknowledged PSN. The WQE that holds it resumes
 * at the packet of that PSN (a READ or atomic restarts whole, at its first
 * PSN), later WQEs restart from their beginning. A message can be partly
 * sent and partly acknowledged, so "started" rather than "fully sent"
 * decides whether the oldest WQE resumes mid-message. sq_lock held.
 */
static void sroce_req_rewind(struct sroce_qp *qp)
{
	u32 idx;

	qp->req.rd_atomic = 0;
	qp->req.offset = 0;
	qp->req.psn = qp->comp.psn;
	/* Acknowledged WQEs may not be retired yet: start after them. */
	qp->req.cur = qp->comp.idx;
	while (qp->req.cur != qp->req.fetched &&
	       sroce_wst(qp, qp->req.cur)->state == SROCE_WQE_DONE)
		qp->req.cur++;
	for (idx = qp->req.cur; idx != qp->req.fetched; idx++) {
		struct sroce_wqe_st *st = sroce_wst(qp, idx);
		struct sroce_send_wqe *w = sroce_sq_shadow(qp, idx);

		if (st->state == SROCE_WQE_DONE)
			continue;
		if (idx == qp->req.cur && st->psn_valid) {
			struct sroce_gbn_resume r;

			r = sroce_gbn_resume(w->opcode == SROCE_WR_RDMA_READ,
					     sroce_wqe_is_rd_atomic(w->opcode),
					     sroce_wqe_len(w), st->resid,
					     st->first_psn, qp->comp.psn,
					     qp->mtu);
			qp->req.psn = r.psn;
			qp->req.offset = r.offset;
		}
		if (idx != qp->req.cur || !qp->req.offset)
			st->started = 0;
		st->state = SROCE_WQE_POSTED;
	}
}

/* ---------------------------------------------------------------------- */
/* requester                                                              */

static u8 sroce_req_opcode(u8 wr_op, bool first, bool last)
{
	switch (wr_op) {
	case SROCE_WR_SEND:
		return first ? (last ? SROCE_OP_RC_SEND_ONLY :
				SROCE_OP_RC_SEND_FIRST) :
			(last ? SROCE_OP_RC_SEND_LAST : SROCE_OP_RC_SEND_MIDDLE);
	case SROCE_WR_SEND_WITH_IMM:
		return first ? (last ? SROCE_OP_RC_SEND_ONLY_IMM :
				SROCE_OP_RC_SEND_FIRST) :
			(last ? SROCE_OP_RC_SEND_LAST_IMM :
			 SROCE_OP_RC_SEND_MIDDLE);
	case SROCE_WR_SEND_WITH_INV:
		return first ? (last ? SROCE_OP_RC_SEND_ONLY_INV :
				SROCE_OP_RC_SEND_FIRST) :
			(last ? SROCE_OP_RC_SEND_LAST_INV :
			 SROCE_OP_RC_SEND_MIDDLE);
	case SROCE_WR_RDMA_WRITE:
		return first ? (last ? SROCE_OP_RC_WRITE_ONLY :
				SROCE_OP_RC_WRITE_FIRST) :
			(last ? SROCE_OP_RC_WRITE_LAST :
			 SROCE_OP_RC_WRITE_MIDDLE);
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		return first ? (last ? SROCE_OP_RC_WRITE_ONLY_IMM :
				SROCE_OP_RC_WRITE_FIRST) :
			(last ? SROCE_OP_RC_WRITE_LAST_IMM :
			 SROCE_OP_RC_WRITE_MIDDLE);
	case SROCE_WR_RDMA_READ:
		return SROCE_OP_RC_READ_REQ;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
		return SROCE_OP_RC_CMP_SWAP;
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_OP_RC_ATOMIC_WRITE;
	default:
		return SROCE_OP_RC_FETCH_ADD;
	}
}

/*
 * Copy @len bytes at message offset @off of a WQE's local data (inline or
 * SGEs) to or from @buf. Returns 0 or an ib_wc_status for the failure.
 */
static int sroce_wqe_data(struct sroce_qp *qp, const struct sroce_send_wqe *w,
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
	int status = IB_WC_SUCCESS;
	u32 idx, len, mtu;
	bool err;

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
		err = sroce_comp_retire(qp);
		spin_unlock_bh(&qp->sq_lock);
		if (err)
			sroce_req_fail(qp);
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
	pkt->bth.opcode = w->opcode == SROCE_WR_SEND_WITH_IMM ?
			  SROCE_OP_UD_SEND_ONLY_IMM : SROCE_OP_UD_SEND_ONLY;
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
	err = sroce_comp_retire(qp);
	spin_unlock_bh(&qp->sq_lock);
	if (err)
		sroce_req_fail(qp);
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

static int sroce_req_one(struct sroce_qp *qp)
{
	struct sroce_txpkt tp = {};
	struct sroce_pkt *pkt = &tp.pkt;
	struct sroce_send_wqe *w;
	struct sroce_wqe_st *st;
	u32 idx, len, off, plen, npsn;
	bool first, last, uc;
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
	/* Skip WQEs that failed validation: completing them fails the QP. */
	idx = qp->req.cur;
	if (idx == qp->req.fetched) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	st = sroce_wst(qp, idx);
	w = sroce_sq_shadow(qp, idx);
	if (st->state == SROCE_WQE_DONE) {
		bool err;

		qp->req.cur++;
		err = sroce_comp_retire(qp);
		spin_unlock_bh(&qp->sq_lock);
		if (err)
			sroce_req_fail(qp);
		return 1;
	}
	uc = qp->ibqp.qp_type == IB_QPT_UC;
	/*
	 * The window. A resumed READ is exempt: its request is one packet,
	 * and its own responses received so far sit between comp.psn (still
	 * at its first PSN) and req.psn.
	 */
	if (!uc && !(w->opcode == SROCE_WR_RDMA_READ && qp->req.offset) &&
	    sroce_psn_diff(qp->req.psn, qp->comp.psn) >= (s32)qp->comp.window) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if ((w->flags & SROCE_SEND_FENCE) && qp->comp.idx != idx &&
	    qp->req.offset == 0) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (sroce_wqe_is_rd_atomic(w->opcode) && qp->req.offset == 0 &&
	    qp->req.rd_atomic >= max_t(u32, qp->attr.max_rd_atomic, 1)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	if (sroce_wqe_is_local(w->opcode)) {
		/* Executes once, in order; a rewind skips it as DONE. */
		bool err;

		status = sroce_req_local_op(qp, w);
		st->state = SROCE_WQE_DONE;
		st->status = status ? status : IB_WC_SUCCESS;
		qp->req.cur++;
		err = sroce_comp_retire(qp);
		spin_unlock_bh(&qp->sq_lock);
		if (err)
			sroce_req_fail(qp);
		return 1;
	}

	/* DCQCN: a rate-limited QP sends when its pacer says so. */
	if (unlikely(READ_ONCE(qp->cc.limited)) &&
	    sroce_cc_pace_wait_slow(qp)) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}

	len = sroce_wqe_len(w);
	off = qp->req.offset;
	first = off == 0;
	if (sroce_wqe_is_rd_atomic(w->opcode)) {
		plen = 0;
		last = true;
	} else {
		plen = min(len - off, qp->mtu);
		last = off + plen >= len;
	}
	npsn = sroce_wqe_npsn(qp, w);

	pkt->bth.opcode = sroce_req_opcode(w->opcode, first, last);
	/* UC opcodes are the RC SEND/WRITE ones in the UC range. */
	if (uc)
		pkt->bth.opcode |= SROCE_OP_UC_SEND_FIRST;
	/* XRC: RC's in the XRC range, to the SRQ the WQE names. */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI) {
		pkt->bth.opcode |= SROCE_TRANSPORT_XRC;
		pkt->xrc_srqn = w->remote_qpn & SROCE_QPN_MASK;
	}
	pkt->bth.pkey = SROCE_DEFAULT_PKEY;
	pkt->bth.dqpn = qp->attr.dest_qp_num;
	pkt->bth.psn = qp->req.psn;
	pkt->bth.se = last && (w->flags & SROCE_SEND_SOLICITED);
	/*
	 * A paced QP asks for an ACK on every packet: its packets are spread
	 * out, and one left unacknowledged while the requester waits for
	 * its turn would run into the ACK timeout.
	 */
	if (first) {
		st->started = 1;
		st->psn_valid = 1;
		st->first_psn = qp->req.psn;
		st->last_psn = sroce_psn_add(qp->req.psn, npsn - 1);
		st->resid = len;
	}
	pkt->bth.ack_req = !uc &&
			   (READ_ONCE(qp->cc.limited) ||
			    sroce_gbn_ack_req(qp->req.psn, st->first_psn,
					      qp->comp.psn, qp->comp.window,
					      SROCE_ACKREQ_EVERY, last));
	pkt->payload_len = plen;
	switch (w->opcode) {
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
	case SROCE_WR_ATOMIC_WRITE:
		pkt->reth.va = w->remote_addr;
		pkt->reth.rkey = w->rkey;
		pkt->reth.len = len;
		break;
	case SROCE_WR_RDMA_READ:
		/*
		 * A READ resumed at its first missing response asks for the
		 * rest only: address and length move with the PSN (IBTA
		 * C9-106; rdma_rxe answers from this RETH).
		 */
		pkt->reth.va = w->remote_addr + off;
		pkt->reth.rkey = w->rkey;
		pkt->reth.len = len - off;
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

	/* Advance before unlocking; a rewind meanwhile just resends. */
	if (last) {
		qp->req.psn = sroce_psn_add(st->first_psn, npsn);
		qp->req.offset = 0;
		qp->req.cur++;
		/* UC is unacknowledged: sent is done. */
		st->state = uc ? SROCE_WQE_DONE : SROCE_WQE_SENT;
		if (sroce_wqe_is_rd_atomic(w->opcode))
			qp->req.rd_atomic++;
	} else {
		qp->req.psn = sroce_psn_add(qp->req.psn, 1);
		qp->req.offset += plen;
	}
	/* Below the highest PSN ever sent: this packet is a retransmission. */
	if (!uc && sroce_psn_diff(pkt->bth.psn, qp->req.psn_hi) < 0)
		sroce_stat_inc(qp->sdev, SROCE_CNT_RETRANS_PKTS);
	if (sroce_psn_diff(qp->req.psn, qp->req.psn_hi) > 0)
		qp->req.psn_hi = qp->req.psn;
	sroce_cc_sent(qp, plen, sroce_wire_len(qp, pkt));
	/*
	 * The ACK timeout runs from the newest packet that asks for an
	 * ACK: timing from the oldest would fire in the middle of a long,
	 * healthy burst on a slow host. A lost packet before it still gets
	 * a sequence NAK from the responder.
	 */
	if (!uc &&
	    (pkt->bth.ack_req || !timer_pending(&qp->comp.retrans_timer)))
		sroce_retrans_arm(qp);
	qp->req.busy_idx = idx;
	qp->req.busy = true;
	spin_unlock_bh(&qp->sq_lock);

	if (sroce_tx_alloc(qp, &tp, GFP_KERNEL)) {
		/* Pairs with sroce_req_fetch()'s smp_load_acquire(). */
		smp_store_release(&qp->req.busy, false);
		/* Like a lost packet: the retransmit timer recovers. */
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		return 0;
	}
	status = 0;
	if (w->opcode == SROCE_WR_ATOMIC_WRITE) {
		if (plen >= SROCE_ATOMIC_WRITE_LEN)
			memcpy(tp.payload, &w->compare_add,
			       SROCE_ATOMIC_WRITE_LEN);
	} else if (plen) {
		status = sroce_wqe_data(qp, w, off, tp.payload, plen,
					SROCE_FROM_MR, 0);
	}
	/*
	 * Done with the shadow slot: a fetch may refill it. Pairs with
	 * sroce_req_fetch()'s smp_load_acquire().
	 */
	smp_store_release(&qp->req.busy, false);
	if (status) {
		sroce_tx_free(&tp);
		sroce_req_local_error(qp, idx, status);
		return 1;
	}
	sroce_tx_send(qp, &tp);
	if (uc && last) {
		bool err;

		spin_lock_bh(&qp->sq_lock);
		if ((s32)(idx - qp->comp.idx) >= 0 &&
		    st->state == SROCE_WQE_DONE && st->status == IB_WC_SUCCESS)
			qp->comp.psn = qp->req.psn;
		err = sroce_comp_retire(qp);
		spin_unlock_bh(&qp->sq_lock);
		if (err)
			sroce_req_fail(qp);
	}
	return 1;
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
/* completer                                                              */

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
	qp->comp.window = sroce_gbn_window_grow(qp->comp.window);
}

/* Complete SEND/WRITE WQEs wholly acknowledged by an ACK of @psn. */
static bool sroce_comp_ack_upto(struct sroce_qp *qp, u32 psn, bool inclusive)
{
	u32 next = sroce_ack_next(psn, inclusive);
	u32 idx;

	if (!sroce_ack_valid(next, qp->comp.psn, qp->req.psn_hi, inclusive))
		return false;
	/*
	 * Everything before @next reached the peer, including what the
	 * requester sent before a rewind and has not sent again yet: a WQE
	 * completes once its last PSN is acknowledged, whichever pass sent it
	 * (its PSNs never change), and the requester skips what is
	 * acknowledged (below).
	 */
	for (idx = qp->comp.idx; idx != qp->req.fetched; idx++) {
		struct sroce_wqe_st *st = sroce_wst(qp, idx);
		struct sroce_send_wqe *w = sroce_sq_shadow(qp, idx);
		enum sroce_ack_wqe fate;

		fate = sroce_ack_wqe_fate(st->state == SROCE_WQE_DONE,
					  sroce_wqe_is_rd_atomic(w->opcode),
					  st->psn_valid, st->first_psn,
					  st->last_psn, next);
		if (fate == SROCE_ACKW_SKIP)
			continue;
		if (fate == SROCE_ACKW_STOP)
			break;
		if (fate == SROCE_ACKW_LOST) {
			/* Its response is lost: the ACK covers what is before. */
			next = st->first_psn;
			break;
		}
		st->state = SROCE_WQE_DONE;
		st->status = IB_WC_SUCCESS;
	}
	if (sroce_psn_diff(next, qp->comp.psn) > 0) {
		qp->comp.psn = next;
		sroce_comp_progress(qp);
		/*
		 * Going back N after a timeout or NAK, and the peer had more
		 * than the requester thought: resend from here, not the rest
		 * of what it already has.
		 */
		if (sroce_psn_diff(next, qp->req.psn) > 0)
			sroce_req_rewind(qp);
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

static void sroce_comp_read_resp(struct sroce_qp *qp,
				 const struct sroce_pkt *pkt,
				 const u8 *payload, bool *fatal, bool *retry)
{
	struct sroce_wqe_st *st;
	struct sroce_send_wqe *w;
	u32 idx, expect, off;
	int status;

	/*
	 * A first/only response also acknowledges every request before it
	 * (the responder executes in PSN order): SENDs and WRITEs before the
	 * READ complete even when their own ACK was lost.
	 */
	if (pkt->info->pos == SROCE_POS_FIRST ||
	    pkt->info->pos == SROCE_POS_ONLY)
		sroce_comp_ack_upto(qp, pkt->bth.psn, false);
	st = sroce_comp_head(qp, &idx);
	if (!st)
		goto drop;
	w = sroce_sq_shadow(qp, idx);
	if (w->opcode != SROCE_WR_RDMA_READ)
		goto drop;
	off = sroce_wqe_len(w) - st->resid;
	expect = sroce_read_resp_psn(st->first_psn, off, qp->mtu);
	if (pkt->bth.psn != expect) {
		/* A later response: the one expected was lost (once). */
		if (sroce_read_resp_gap(pkt->bth.psn, expect, qp->req.psn,
					qp->comp.rr_gap, qp->comp.rr_gap_psn)) {
			qp->comp.rr_gap = true;
			qp->comp.rr_gap_psn = expect;
			sroce_stat_inc(qp->sdev, SROCE_CNT_IMPLIED_NAK);
			*retry = true;
		}
		goto drop;
	}
	if (!sroce_read_resp_len_ok(pkt->info->pos, pkt->payload_len,
				    st->resid, qp->mtu))
		goto drop;

	status = sroce_wqe_data(qp, w, off, (void *)payload, pkt->payload_len,
				SROCE_TO_MR, IB_ACCESS_LOCAL_WRITE);
	if (status) {
		st->state = SROCE_WQE_DONE;
		st->status = status;
		*fatal = true;
		return;
	}
	st->resid -= pkt->payload_len;
	sroce_comp_progress(qp);
	if (!st->resid) {
		st->state = SROCE_WQE_DONE;
		st->status = IB_WC_SUCCESS;
		qp->comp.psn = sroce_psn_add(st->last_psn, 1);
	}
	return;
drop:
	sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
}

static void sroce_comp_atomic_ack(struct sroce_qp *qp,
				  const struct sroce_pkt *pkt, bool *fatal)
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
	if (status) {
		*fatal = true;
		return;
	}
	qp->comp.psn = sroce_psn_add(st->first_psn, 1);
	sroce_comp_progress(qp);
	return;
drop:
	sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
}

/* Fail the WQE that holds @psn with @status (a fatal NAK). */
static void sroce_comp_fail_psn(struct sroce_qp *qp, u32 psn, int status)
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

static void sroce_comp_aeth(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			    bool *fatal, bool *retry)
{
	u8 syn = pkt->aeth.syndrome;
	enum sroce_ack_fate fate = sroce_ack_classify(syn);
	u32 psn = pkt->bth.psn;

	if (fate == SROCE_ACK_BAD ||
	    !sroce_comp_ack_upto(qp, psn, fate == SROCE_ACK_PROGRESS)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		return;
	}
	switch (fate) {
	case SROCE_ACK_PROGRESS:
		if (sroce_ack_implies_nak(psn, qp->comp.psn)) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_IMPLIED_NAK);
			*retry = true;
		}
		break;
	case SROCE_ACK_RNR:
		sroce_stat_inc(qp->sdev, SROCE_CNT_RNR_NAK_RCVD);
		if (!sroce_rnr_retry_take(&qp->comp.rnr_retry)) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_RNR_RETRY_EXCEEDED);
			sroce_comp_fail_psn(qp, psn, IB_WC_RNR_RETRY_EXC_ERR);
			*fatal = true;
			break;
		}
		qp->comp.rnr_wait = true;
		sroce_req_rewind(qp);
		if (!test_bit(SROCE_QPF_DYING, &qp->flags)) {
			u32 us = sroce_rnr_timer_usec(sroce_aeth_value(syn));

			mod_timer(&qp->comp.rnr_timer,
				  jiffies + usecs_to_jiffies(us) + 1);
		}
		break;
	case SROCE_ACK_SEQ:
		sroce_stat_inc(qp->sdev, SROCE_CNT_SEQ_NAK_RCVD);
		*retry = true;
		break;
	case SROCE_ACK_REM_ACCESS:
		sroce_stat_inc(qp->sdev, SROCE_CNT_NAK_RCVD);
		sroce_comp_fail_psn(qp, psn, IB_WC_REM_ACCESS_ERR);
		*fatal = true;
		break;
	case SROCE_ACK_REM_OP:
		sroce_stat_inc(qp->sdev, SROCE_CNT_NAK_RCVD);
		sroce_comp_fail_psn(qp, psn, IB_WC_REM_OP_ERR);
		*fatal = true;
		break;
	case SROCE_ACK_REM_INV:
		sroce_stat_inc(qp->sdev, SROCE_CNT_NAK_RCVD);
		sroce_comp_fail_psn(qp, psn, IB_WC_REM_INV_REQ_ERR);
		*fatal = true;
		break;
	case SROCE_ACK_BAD:	/* dropped above */
		break;
	}
}

/*
 * SQD: true once (per entry to SQD) when nothing is outstanding any more
 * and the consumer asked for IB_EVENT_SQ_DRAINED. sq_lock held.
 */
bool sroce_sqd_drained(struct sroce_qp *qp)
{
	if (READ_ONCE(qp->state) != IB_QPS_SQD || qp->comp.sqd_notified ||
	    !qp->attr.en_sqd_async_notify || qp->req.offset ||
	    qp->comp.idx != qp->req.cur || qp->comp.psn != qp->req.psn)
		return false;
	qp->comp.sqd_notified = true;
	return true;
}

void sroce_sqd_notify(struct sroce_qp *qp)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = IB_EVENT_SQ_DRAINED,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * sroce_comp_rcv - handle a response packet (softirq)
 */
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt, const u8 *payload)
{
	bool fatal = false, retry = false, err, kick, drained;
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (state != IB_QPS_RTS && state != IB_QPS_SQD) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}

	spin_lock_bh(&qp->sq_lock);
	switch (pkt->info->kind) {
	case SROCE_KIND_ACK:
		sroce_comp_aeth(qp, pkt, &fatal, &retry);
		break;
	case SROCE_KIND_READ_RESP:
		if (pkt->info->hdrs & SROCE_HDR_AETH &&
		    sroce_aeth_type(pkt->aeth.syndrome) != SROCE_AETH_ACK) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
			break;
		}
		sroce_comp_read_resp(qp, pkt, payload, &fatal, &retry);
		break;
	case SROCE_KIND_ATOMIC_ACK:
		if (sroce_aeth_type(pkt->aeth.syndrome) != SROCE_AETH_ACK) {
			sroce_comp_aeth(qp, pkt, &fatal, &retry);
			break;
		}
		sroce_comp_atomic_ack(qp, pkt, &fatal);
		break;
	default:
		sroce_stat_inc(qp->sdev, SROCE_CNT_COMPLETER_DROP);
		break;
	}
	if (retry && !fatal)
		sroce_req_rewind(qp);
	err = sroce_comp_retire(qp) || fatal;
	if (qp->comp.psn == qp->req.psn && qp->comp.idx == qp->req.fetched)
		del_timer(&qp->comp.retrans_timer);
	else if (!fatal)
		sroce_retrans_arm(qp);
	/*
	 * Wake the requester only if it has something to send: a needless
	 * work item can hold the requester bit when the next doorbell comes,
	 * and the doorbell then waits for that worker to be scheduled.
	 */
	kick = qp->req.cur != qp->req.fetched ||
	       READ_ONCE(qp->sq.hdr->producer) != qp->sq.kidx;
	drained = !err && sroce_sqd_drained(qp);
	spin_unlock_bh(&qp->sq_lock);

	if (err)
		sroce_qp_error(qp);
	else if (kick)
		sroce_req_kick(qp, false);
	if (drained)
		sroce_sqd_notify(qp);
}

static void sroce_retrans_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, comp.retrans_timer);
	bool fatal = false;

	spin_lock_bh(&qp->sq_lock);
	if (READ_ONCE(qp->state) != IB_QPS_RTS ||
	    (qp->comp.psn == qp->req.psn && qp->comp.idx == qp->req.fetched)) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	sroce_stat_inc(qp->sdev, SROCE_CNT_RETRANS_TIMEOUT);
	/* IBTA: retry_cnt counts retries; 7 is not infinite for it. */
	if (!qp->comp.retry_cnt) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RETRY_EXCEEDED);
		sroce_comp_fail_psn(qp, qp->comp.psn, IB_WC_RETRY_EXC_ERR);
		fatal = true;
	} else {
		u8 backoff = sroce_rto_backoff_next(qp->comp.backoff,
						    qp->attr.retry_cnt);

		qp->comp.retry_cnt--;
		qp->comp.rr_gap = false;
		/*
		 * The peer may just be slower than the timeout: wait longer
		 * next time, and resend a little before the rest (sroce_gbn.h).
		 */
		if (backoff != qp->comp.backoff)
			sroce_stat_inc(qp->sdev, SROCE_CNT_ADP_RETRANS);
		qp->comp.backoff = backoff;
		if (qp->comp.window > SROCE_GBN_RESTART_WINDOW) {
			qp->comp.window = SROCE_GBN_RESTART_WINDOW;
			sroce_stat_inc(qp->sdev, SROCE_CNT_SLOW_RESTART);
		}
		sroce_req_rewind(qp);
	}
	if (fatal)
		sroce_comp_retire(qp);
	spin_unlock_bh(&qp->sq_lock);

	if (fatal)
		sroce_qp_error(qp);
	else
		sroce_req_kick(qp, false);
}

static void sroce_rnr_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, comp.rnr_timer);

	spin_lock_bh(&qp->sq_lock);
	qp->comp.rnr_wait = false;
	spin_unlock_bh(&qp->sq_lock);
	sroce_req_kick(qp, false);
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
	INIT_WORK(&qp->resp_work, sroce_resp_work);
	skb_queue_head_init(&qp->resp.backlog);
	timer_setup(&qp->comp.retrans_timer, sroce_retrans_timeout, 0);
	timer_setup(&qp->comp.rnr_timer, sroce_rnr_timeout, 0);
	qp->comp.window = SROCE_GBN_MAX_WINDOW;
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
	sroce_resp_backlog_purge(qp);
	spin_unlock_bh(&qp->resp_lock);
	del_timer_sync(&qp->comp.retrans_timer);
	del_timer_sync(&qp->comp.rnr_timer);
}
