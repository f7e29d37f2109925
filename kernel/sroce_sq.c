// SPDX-License-Identifier: GPL-2.0
/*
 * sroce send queue, as the kernel sees it: WQEs fetched from the ring the
 * poster writes (a user process's, mmapped, or the kernel-verbs post path's)
 * into a shadow only the kernel writes, each validated on the way in; what
 * a WQE's data is; and the send queue's flush. The requester (sroce_req.c,
 * sroce_ud.c) sends from the shadow; the completer (sroce_comp.c) retires.
 */

#include <linux/vmalloc.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_mr.h"
#include "sroce_qp.h"
#include "sroce_transport.h"
#include "proto/sroce_wr.h"

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

/*
 * Copy a WQE from the SQ ring into the shadow, validating what the kernel
 * relies on, and start its state @st (its length, computed once here, and
 * kind). Returns false (and leaves fetched alone) if the ring content
 * is invalid; the caller completes it with an error.
 */
static bool sroce_sq_fetch_one(struct sroce_qp *qp, u32 idx,
			       struct sroce_wqe_st *st)
{
	const u8 *src = sroce_queue_slot(&qp->sq, idx);
	u8 *dst = sroce_sq_shadow(qp, idx);
	struct sroce_send_wqe *w = (void *)dst;
	u32 slot = sroce_queue_slot_size(&qp->sq);
	struct sroce_send_wqe hdr;
	u32 body, len;

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
	len = sroce_wqe_len(w);
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
	    (sroce_wr_in(w->opcode, SROCE_WR_ATOMIC_OPS) && len < 8))
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
	if (len == U32_MAX)
		return false;
	sroce_wqe_st_init(st, len, sroce_wqe_kind_of(w->opcode));
	return true;
}

/*
 * Shadow slots free for WQEs not fetched yet: those of WQEs completed, but
 * not the one the requester is building a packet from. sq_lock held.
 */
u32 sroce_sq_room(struct sroce_qp *qp)
{
	u32 oldest = qp->comp.idx, room;

	/* Pairs with the requester's smp_store_release() of busy. */
	if (smp_load_acquire(&qp->req.busy) &&
	    (s32)(qp->req.busy_idx - oldest) < 0)
		oldest = qp->req.busy_idx;
	room = qp->sq.num_slots - (qp->req.fetched - oldest);
	return room > qp->sq.num_slots ? 0 : room;
}

/*
 * Pull newly posted WQEs into the shadow. Called with sq_lock held.
 * Returns false if the producer index is garbage: the QP cannot go on
 * (the caller reports it with sroce_qp_fatal() once the lock is dropped).
 */
bool sroce_sq_fetch(struct sroce_qp *qp)
{
	int n = sroce_queue_count_produced(&qp->sq);
	u32 room;

	if (n < 0)
		return false;
	room = sroce_sq_room(qp);
	if (n > room)
		n = room;
	while (n--) {
		u32 idx = qp->req.fetched;
		struct sroce_wqe_st *st = sroce_wst(qp, idx);

		if (!sroce_sq_fetch_one(qp, idx, st)) {
			sroce_wqe_st_init(st, 0, SROCE_WQEK_LOCAL);
			st->state = SROCE_WQE_DONE;
			st->status = IB_WC_LOC_QP_OP_ERR;
		}
		qp->req.fetched++;
		qp->sq.kidx = qp->req.fetched;
	}
	return true;
}

/*
 * The next WQE the requester has not started, after fetching what was
 * posted since. Called with sq_lock held. Returns 1 with its index in
 * *@idx, 0 if there is none, or -EIO if the producer index is garbage (the
 * caller drops the lock and calls sroce_qp_fatal()).
 */
int sroce_sq_next(struct sroce_qp *qp, u32 *idx)
{
	if (!sroce_sq_fetch(qp))
		return -EIO;
	*idx = qp->req.cur;
	return *idx != qp->req.fetched;
}

/*
 * A send WQE completed in error. RC: the QP goes to the error state. UD and
 * UC: only the send queue does (SQE, IBTA 10.3.1); receives go on, and
 * modify_qp(SQE -> RTS) resumes sending.
 */
void sroce_sq_fail(struct sroce_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_RC ||
	    qp->ibqp.qp_type == IB_QPT_XRC_INI)
		sroce_qp_error(qp);
	else
		sroce_qp_sq_error(qp);
}

/*
 * Retire what the completer can after the requester changed a WQE's state,
 * and drop the SQ lock; a failed completion fails the QP.
 */
void sroce_sq_retire_unlock(struct sroce_qp *qp)
	__releases(&qp->sq_lock)
{
	bool err = sroce_comp_retire(qp);
	/*
	 * The requester's own retirements (UC and UD messages, local
	 * operations, WQEs that failed at fetch) can drain an SQD QP too.
	 */
	bool sqd = !err && sroce_comp_sqd_pending(qp);

	spin_unlock_bh(&qp->sq_lock);
	if (err)
		sroce_sq_fail(qp);
	else if (sqd)
		sroce_comp_sqd_check(qp);
}

/*
 * Complete the send queue's outstanding WQEs with WR_FLUSH_ERR, if the QP
 * is in ERR or SQE. The state is read again under the SQ lock: a caller
 * saw it a moment ago, and modify_qp may have moved the QP on since
 * (SQE -> RTS, ERR -> RESET); it waits for the SQ lock before it returns
 * (sroce_qp_set_state()), so a flush that saw the old state here cannot
 * take WQEs posted after the move.
 */
void sroce_sq_flush(struct sroce_qp *qp)
{
	enum ib_qp_state state;
	int n;

	spin_lock_bh(&qp->sq_lock);
	state = READ_ONCE(qp->state);
	if (!qp->sq.hdr || (state != IB_QPS_ERR && state != IB_QPS_SQE)) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	sroce_comp_timers(qp, SROCE_GBN_TIMER_STOP);
	sroce_sq_fetch(qp);
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

/* Back to RESET: the ring empty, nothing fetched. Locks held by the caller. */
void sroce_sq_reset(struct sroce_qp *qp)
{
	qp->sq.kidx = 0;
	if (qp->sq.hdr) {
		qp->sq.hdr->producer = 0;
		qp->sq.hdr->consumer = 0;
		WRITE_ONCE(qp->sq.hdr->polling, 0);
	}
}
