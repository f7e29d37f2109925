// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC responder: checks and executes incoming requests, places data,
 * generates ACKs/NAKs, executes atomics, and answers duplicates (re-ACK,
 * restart a READ, replay the saved atomic result; IBTA C9-105); UC
 * receives. READs, their responses and the backlog behind a READ stream
 * are in sroce_read.c; the receive queue is sroce_recv.c's, UD receives
 * sroce_ud.c's.
 *
 * Runs in softirq (or resp_work, for requests that waited) under resp_lock.
 */

#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>

#include "sroce.h"
#include "sroce_cc.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_resp.h"
#include "sroce_srq.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_range.h"

/*
 * We do not run end-to-end credits: ACKs advertise SROCE_CREDIT_INVALID
 * (proto/sroce_aeth.h), "unlimited".
 */

static void sroce_resp_work_any(struct work_struct *work)
{
	sroce_read_work(container_of(work, struct sroce_qp, resp_work.any));
}

static void sroce_resp_work_pace(struct work_struct *work)
{
	sroce_read_work(container_of(work, struct sroce_qp, resp_work.pace));
}

/* The responder's part of a new QP. */
void sroce_resp_init(struct sroce_qp *qp)
{
	sroce_qp_work_init(&qp->resp_work, sroce_resp_work_any,
			   sroce_resp_work_pace);
	skb_queue_head_init(&qp->resp.backlog);
}

/*
 * Free what the responder holds: the requests waiting behind a READ
 * stream, the READ/atomic resources, the receive WQE copy. Once nothing
 * runs the QP any more (destroy, after the last reference) or it never ran
 * (a create that failed).
 */
void sroce_resp_free(struct sroce_qp *qp)
{
	sroce_read_free(qp);
	sroce_recv_free(qp);
}

/* Back to RESET: nothing expected, nothing saved. Locks held by the caller. */
void sroce_resp_reset(struct sroce_qp *qp)
{
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.in_send = false;
	qp->resp.in_write = false;
	qp->resp.uc_drop = false;
	qp->resp.rwqe_held = false;
	memset(&qp->resp.ahead, 0, sizeof(qp->resp.ahead));
	if (qp->resp.res)
		memset(qp->resp.res, 0, qp->resp.nres * sizeof(*qp->resp.res));
	qp->resp.res_head = 0;
	qp->resp.stream = NULL;
	qp->resp.busy = false;
	sroce_read_backlog_purge(qp);
}

static void sroce_resp_send_aeth(struct sroce_qp *qp, u8 opcode, u32 psn,
				 u8 syndrome, u64 orig)
{
	struct sroce_txpkt tp = {};

	/* An XRC target answers with the XRC ACK opcodes (0xb1, 0xb2). */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		opcode |= SROCE_TRANSPORT_XRC;
	tp.pkt.bth.opcode = opcode;
	tp.pkt.bth.pkey = SROCE_DEFAULT_PKEY;
	tp.pkt.bth.dqpn = qp->attr.dest_qp_num;
	tp.pkt.bth.psn = psn;
	tp.pkt.aeth.syndrome = syndrome;
	tp.pkt.aeth.msn = qp->resp.msn;
	tp.pkt.atomic_orig = orig;
	if (sroce_tx_alloc(qp, &tp, GFP_ATOMIC))
		return;
	sroce_tx_send(qp, &tp);
}

static void sroce_resp_ack(struct sroce_qp *qp, u32 psn)
{
	sroce_resp_send_aeth(qp, SROCE_OP_RC_ACK, psn,
			     sroce_aeth_ack(SROCE_CREDIT_INVALID), 0);
}

static void sroce_resp_nak(struct sroce_qp *qp, u32 psn,
			   enum sroce_nak_code code)
{
	static const enum sroce_counter cnt[] = {
		[SROCE_NAK_PSN_SEQ_ERR] = SROCE_CNT_SEQ_NAK_SENT,
		[SROCE_NAK_INVALID_REQ] = SROCE_CNT_REM_INV_REQ_NAK_SENT,
		[SROCE_NAK_REMOTE_ACCESS_ERR] = SROCE_CNT_REM_ACCESS_NAK_SENT,
		[SROCE_NAK_REMOTE_OP_ERR] = SROCE_CNT_REM_OP_NAK_SENT,
		[SROCE_NAK_INVALID_RD_REQ] = SROCE_CNT_REM_INV_REQ_NAK_SENT,
	};

	sroce_stat_inc(qp->sdev, cnt[code]);
	trace_sroce_nak_sent(qp, psn, sroce_aeth_nak(code));
	sroce_resp_send_aeth(qp, SROCE_OP_RC_ACK, psn, sroce_aeth_nak(code), 0);
}

/*
 * Look up and check an rkey for a remote access. Returns the MR with a
 * reference, or NULL (remote access error).
 */
struct sroce_mr *sroce_resp_rkey_pd(struct sroce_qp *qp, struct ib_pd *pd,
				    u32 rkey, u64 va, u64 len, int access)
{
	if (!(qp->attr.qp_access_flags & access))
		return NULL;
	/*
	 * The all-memory DMA MR only exists in kernel PDs, and grants remote
	 * rights only when its owner asked for them (IB_PD_UNSAFE_GLOBAL_RKEY);
	 * the PD check keeps every user QP away from it.
	 */
	return sroce_mr_get_remote(qp->sdev, pd, qp->ibqp.qp_num, rkey, va,
				   len, access);
}

struct sroce_mr *sroce_resp_rkey(struct sroce_qp *qp, u32 rkey, u64 va,
				 u64 len, int access)
{
	return sroce_resp_rkey_pd(qp, sroce_recv_pd(qp), rkey, va, len,
				  access);
}

static enum sroce_resp_verdict sroce_resp_send(struct sroce_qp *qp,
					       const struct sroce_pkt *pkt,
					       const u8 *payload)
{
	u8 pos = pkt->info->pos;
	bool first = sroce_pos_first(pos);
	bool last = sroce_pos_last(pos);
	u32 flags = 0, ex = 0;
	int status, r;

	if (!sroce_resp_segment_ok(pos, qp->resp.in_send, pkt->payload_len,
				   qp->mtu))
		return SROCE_RESP_NAK_INV;
	if (first) {
		r = sroce_recv_take(qp);
		if (r < 0)
			return SROCE_RESP_NAK_OP;
		if (!r)
			return SROCE_RESP_RNR;
		qp->resp.in_send = true;
	}
	/*
	 * No message is longer than 2^31 bytes (IBTA): a SEND that goes on
	 * past that into a receive WQE whose SGEs add up to more (they may
	 * overlap) would wrap the byte count it completes with.
	 */
	if (!sroce_msg_len_ok((u64)qp->resp.rwqe_offset + pkt->payload_len,
			      SROCE_MAX_MSG_SIZE))
		status = IB_WC_LOC_LEN_ERR;
	else
		status = sroce_recv_place(qp, payload, pkt->payload_len);
	if (status) {
		sroce_recv_complete(qp, status, IB_WC_RECV,
				    qp->resp.rwqe_offset, 0, 0, false);
		return status == IB_WC_LOC_LEN_ERR ? SROCE_RESP_NAK_INV :
						     SROCE_RESP_NAK_OP;
	}
	if (!last)
		return SROCE_RESP_OK;
	if (pkt->info->hdrs & SROCE_HDR_IMMDT) {
		flags |= SROCE_WC_F_WITH_IMM;
		ex = (__force u32)cpu_to_be32(pkt->imm);
	} else if (pkt->info->hdrs & SROCE_HDR_IETH) {
		/* Remote invalidation: a fast-reg MR of this QP's PD. */
		if (sroce_mr_invalidate(qp->sdev, sroce_recv_pd(qp),
					qp->ibqp.qp_num, pkt->ieth_rkey,
					true)) {
			sroce_recv_complete(qp, IB_WC_REM_INV_REQ_ERR,
					    IB_WC_RECV, qp->resp.rwqe_offset,
					    0, 0, false);
			return SROCE_RESP_NAK_INV;
		}
		flags |= SROCE_WC_F_WITH_INV;
		ex = pkt->ieth_rkey;
	}
	sroce_recv_complete(qp, IB_WC_SUCCESS, IB_WC_RECV,
			    qp->resp.rwqe_offset, flags, ex, pkt->bth.se);
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	return SROCE_RESP_OK;
}

static enum sroce_resp_verdict sroce_resp_write(struct sroce_qp *qp,
						const struct sroce_pkt *pkt,
						const u8 *payload)
{
	u8 pos = pkt->info->pos;
	bool first = sroce_pos_first(pos);
	bool last = sroce_pos_last(pos);
	bool imm = pkt->info->hdrs & SROCE_HDR_IMMDT;
	struct sroce_mr *mr;
	int r;

	if (!sroce_resp_segment_ok(pos, qp->resp.in_write, pkt->payload_len,
				   qp->mtu))
		return SROCE_RESP_NAK_INV;
	/*
	 * The QP's own rights first, whatever the length (a zero-length
	 * WRITE skips only the R_Key check below), and before a WRITE with
	 * immediate takes a receive WQE.
	 */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		return SROCE_RESP_NAK_ACCESS;
	/* With immediate, a receive WQE is needed: check before placing. */
	if (imm && !qp->resp.in_send) {
		r = sroce_recv_take(qp);
		if (r < 0)
			return SROCE_RESP_NAK_OP;
		if (!r)
			return SROCE_RESP_RNR;
	}
	if (first) {
		if (!sroce_msg_len_ok(pkt->reth.len, SROCE_MAX_MSG_SIZE))
			return SROCE_RESP_NAK_INV;
		qp->resp.write_va = pkt->reth.va;
		qp->resp.write_rkey = pkt->reth.rkey;
		qp->resp.write_resid = pkt->reth.len;
		qp->resp.write_len = pkt->reth.len;
	}
	if (pkt->payload_len > qp->resp.write_resid ||
	    (last && pkt->payload_len != qp->resp.write_resid))
		return SROCE_RESP_NAK_INV;
	/*
	 * A zero-length WRITE touches no memory: its R_Key and address are
	 * not checked (IBTA C9-88; UCX sends them with both 0). A first
	 * packet's check covers the whole message.
	 */
	if (pkt->payload_len) {
		mr = sroce_resp_rkey(qp, qp->resp.write_rkey,
				     qp->resp.write_va,
				     first ? pkt->reth.len : pkt->payload_len,
				     IB_ACCESS_REMOTE_WRITE);
		if (!mr)
			return SROCE_RESP_NAK_ACCESS;
		sroce_mr_copy(mr, qp->resp.write_va, (void *)payload,
			      pkt->payload_len, SROCE_TO_MR);
		sroce_mr_put(mr);
	}
	qp->resp.write_va += pkt->payload_len;
	qp->resp.write_resid -= pkt->payload_len;
	qp->resp.in_write = !last;
	if (!last)
		return SROCE_RESP_OK;
	if (imm) {
		/* byte_len of WRITE with immediate is the message length. */
		sroce_recv_complete(qp, IB_WC_SUCCESS,
				    IB_WC_RECV_RDMA_WITH_IMM,
				    qp->resp.write_len,
				    SROCE_WC_F_WITH_IMM,
				    (__force u32)cpu_to_be32(pkt->imm),
				    pkt->bth.se);
	}
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	return SROCE_RESP_OK;
}

/*
 * ATOMIC_WRITE (IBTA 1.5): RETH plus exactly 8 bytes, written to an aligned
 * u64 with one store, so no reader ever sees half of it. Needs remote
 * write rights; acknowledged, and deduplicated, like an RDMA WRITE.
 */
static enum sroce_resp_verdict
sroce_resp_atomic_write(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			const u8 *payload)
{
	struct sroce_mr *mr;
	struct page *page;
	u64 *p, val;

	if (qp->resp.in_write || pkt->reth.len != SROCE_ATOMIC_WRITE_LEN ||
	    pkt->payload_len != SROCE_ATOMIC_WRITE_LEN ||
	    !sroce_atomic_aligned(pkt->reth.va))
		return SROCE_RESP_NAK_INV;
	mr = sroce_resp_rkey(qp, pkt->reth.rkey, pkt->reth.va,
			     SROCE_ATOMIC_WRITE_LEN, IB_ACCESS_REMOTE_WRITE);
	if (!mr)
		return SROCE_RESP_NAK_ACCESS;
	p = sroce_mr_atomic_ptr(mr, pkt->reth.va, &page);
	if (!p) {
		sroce_mr_put(mr);
		return SROCE_RESP_NAK_OP;
	}
	memcpy(&val, payload, sizeof(val));
	WRITE_ONCE(*p, val);
	if (page)
		kunmap_local(p);
	sroce_mr_put(mr);
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	return SROCE_RESP_OK;
}

static enum sroce_resp_verdict sroce_resp_atomic(struct sroce_qp *qp,
						 const struct sroce_pkt *pkt)
{
	const struct sroce_atomiceth *ae = &pkt->atomic;
	struct sroce_rd_res *res;
	struct sroce_mr *mr;
	struct page *page;
	u64 *p, orig;

	if (!sroce_atomic_aligned(ae->va))
		return SROCE_RESP_NAK_INV;
	mr = sroce_resp_rkey(qp, ae->rkey, ae->va, SROCE_ATOMIC_SIZE,
			     IB_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		return SROCE_RESP_NAK_ACCESS;
	res = sroce_read_res_alloc(qp);
	if (!res) {
		sroce_mr_put(mr);
		return SROCE_RESP_NAK_INV;
	}
	p = sroce_mr_atomic_ptr(mr, ae->va, &page);
	if (!p) {
		sroce_mr_put(mr);
		return SROCE_RESP_NAK_OP;
	}
	/*
	 * CPU atomics on the target word: atomic against other QPs and
	 * devices and against the owning process's own atomic operations.
	 */
	/* RC's or XRC's (0xb3): the transport bits aside. */
	if ((pkt->bth.opcode & ~SROCE_TRANSPORT_MASK) == SROCE_OP_RC_CMP_SWAP) {
		orig = cmpxchg64(p, ae->compare, ae->swap_add);
	} else {
		u64 old = READ_ONCE(*p);

		do {
			orig = old;
			old = cmpxchg64(p, orig, orig + ae->swap_add);
		} while (old != orig);
	}
	if (page)
		kunmap_local(p);
	sroce_mr_put(mr);

	res->kind = SROCE_RES_ATOMIC;
	res->span.first_psn = pkt->bth.psn;
	res->span.last_psn = pkt->bth.psn;
	res->atomic_orig = orig;
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	sroce_resp_send_aeth(qp, SROCE_OP_RC_ATOMIC_ACK, pkt->bth.psn,
			     sroce_aeth_ack(SROCE_CREDIT_INVALID), orig);
	return SROCE_RESP_DONE;
}

/* The newest request executed was a READ or an atomic. resp_lock held. */
static bool sroce_resp_newest_is_rd(const struct sroce_qp *qp)
{
	const struct sroce_rd_res *r;

	if (!qp->resp.nres)
		return false;
	r = &qp->resp.res[(qp->resp.res_head + qp->resp.nres - 1) %
			  qp->resp.nres];
	return r->kind != SROCE_RES_FREE &&
	       r->span.last_psn == sroce_psn_sub(qp->resp.epsn, 1);
}

/* A request with a PSN before the expected one (IBTA C9-105/C9-106). */
static void sroce_resp_duplicate(struct sroce_qp *qp,
				 const struct sroce_pkt *pkt)
{
	u32 i, off, psn;

	sroce_stat_inc(qp->sdev, SROCE_CNT_DUP_REQ);
	switch (pkt->info->kind) {
	case SROCE_KIND_READ_REQ:
	case SROCE_KIND_ATOMIC:
		for (i = 0; i < qp->resp.nres; i++) {
			struct sroce_rd_res *res = &qp->resp.res[i];

			if (res->kind == SROCE_RES_ATOMIC &&
			    res->span.first_psn == pkt->bth.psn) {
				/* Answered from the saved result, never redone. */
				sroce_resp_send_aeth(qp,
						     SROCE_OP_RC_ATOMIC_ACK,
						     res->span.first_psn,
						     sroce_aeth_ack(SROCE_CREDIT_INVALID),
						     res->atomic_orig);
				return;
			}
			switch (sroce_read_is_retry(qp, res, pkt, &off)) {
			case SROCE_RETRY_NONE:
				continue;
			case SROCE_RETRY_OK:
				sroce_read_restart(qp, res, pkt->bth.psn, off);
				return;
			case SROCE_RETRY_REFUSE:
				sroce_stat_inc(qp->sdev, SROCE_CNT_DUP_READ_DROP);
				return;
			}
		}
		/* Unknown: too old to answer; the requester will time out. */
		return;
	default:
		/* Re-acknowledged if it asks (sroce_responder.h). */
		if (sroce_resp_dup_ack(pkt->bth.ack_req,
				       sroce_resp_newest_is_rd(qp), pkt->bth.psn,
				       qp->resp.epsn, &psn))
			sroce_resp_ack(qp, psn);
		else
			sroce_stat_inc(qp->sdev, SROCE_CNT_DUP_NO_ACK);
		return;
	}
}

/*
 * UC (IBTA 9.7.5.2): no ACKs, no NAKs, no retries. A packet with an
 * unexpected PSN loses the message it belongs to: the rest of it is dropped
 * until the next FIRST or ONLY, which resynchronises the PSN and reuses the
 * receive WQE the lost message had started to fill. A request that fails
 * its checks (no receive WQE, bad rkey, bad length) drops its message; a
 * receive WQE already consumed completes with the error. Never fatal to
 * the QP. resp_lock held.
 */
static void sroce_resp_uc(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			  const u8 *payload)
{
	u8 pos = pkt->info->pos;
	bool first = sroce_pos_first(pos);
	bool last = sroce_pos_last(pos);
	enum sroce_resp_verdict v;

	if (!sroce_uc_take(first, pkt->bth.psn, qp->resp.epsn,
			   &qp->resp.uc_drop)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_OOS_REQ);
		return;
	}
	if (first) {
		/* A message that never finished is abandoned. */
		qp->resp.in_send = false;
		qp->resp.in_write = false;
	}
	qp->resp.epsn = sroce_psn_add(pkt->bth.psn, 1);

	switch (pkt->info->kind) {
	case SROCE_KIND_SEND:
		v = sroce_resp_send(qp, pkt, payload);
		break;
	case SROCE_KIND_WRITE:
		v = sroce_resp_write(qp, pkt, payload);
		break;
	default:
		v = SROCE_RESP_NAK_INV;
		break;
	}
	if (v == SROCE_RESP_OK || v == SROCE_RESP_DONE)
		return;
	sroce_stat_inc(qp->sdev, v == SROCE_RESP_RNR ? SROCE_CNT_UD_NO_RWQE :
		       SROCE_CNT_OOS_REQ);
	qp->resp.in_send = false;
	qp->resp.in_write = false;
	qp->resp.uc_drop = !last;
}

/*
 * XRC target (IBTA 9.8.5.2): the XRCETH names the SRQ a request uses - its
 * receive WQEs, its CQ, and its PD for every R_Key and L_Key check. It
 * must belong to the QP's XRC domain, and a SEND keeps the SRQ it started
 * with. Holds the SRQ in resp.xsrq for this packet. resp_lock held.
 */
static enum sroce_resp_verdict sroce_resp_xrc_begin(struct sroce_qp *qp,
						    const struct sroce_pkt *pkt)
{
	struct sroce_srq *srq = sroce_xsrq_get(qp->sdev, pkt->xrc_srqn);
	u8 pos = pkt->info->pos;

	if (!srq)
		return SROCE_RESP_NAK_INV;
	if (srq->ibsrq.ext.xrc.xrcd != qp->xrcd) {
		sroce_srq_put(srq);
		return SROCE_RESP_NAK_INV;
	}
	qp->resp.xsrq = srq;
	if (pkt->info->kind == SROCE_KIND_SEND) {
		if (sroce_pos_first(pos))
			qp->resp.xsrqn = pkt->xrc_srqn;
		else if (pkt->xrc_srqn != qp->resp.xsrqn)
			return SROCE_RESP_NAK_INV;
	}
	return SROCE_RESP_OK;
}

/* modify_qp's attributes the responder keeps: the first PSN it expects. */
void sroce_resp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		       int mask)
{
	if (mask & IB_QP_RQ_PSN)
		qp->resp.epsn = sroce_psn_mask(attr->rq_psn);
}

/*
 * The QP is dying (SROCE_QPF_DYING set, which the receive path checks
 * under resp_lock before it queues behind a READ stream): wait for the
 * READ stream's work and drop what waited behind it.
 */
void sroce_resp_stop(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->resp_lock);
	spin_unlock_bh(&qp->resp_lock);
	sroce_qp_work_cancel_sync(&qp->resp_work);
	spin_lock_bh(&qp->resp_lock);
	sroce_read_backlog_purge(qp);
	spin_unlock_bh(&qp->resp_lock);
}

/*
 * Whether request @pkt has the expected PSN; a duplicate is answered
 * (IBTA C9-105) and one ahead of it NAKed, once per gap (C9-106). *@gap_end:
 * it is the awaited PSN of a gap that was NAKed (sroce_resp_gap_ends()).
 * resp_lock held.
 */
static bool sroce_resp_in_sequence(struct sroce_qp *qp,
				   const struct sroce_pkt *pkt,
				   const u8 *payload, bool *gap_end)
{
	enum sroce_psn_class c = sroce_resp_classify(pkt->bth.psn,
						     qp->resp.epsn);

	*gap_end = sroce_resp_gap_ends(c, qp->resp.nak_sent);
	if (c == SROCE_PSN_AHEAD &&
	    !sroce_resp_place_ahead(qp, pkt, payload,
				    sroce_psn_sub(pkt->bth.psn, qp->resp.epsn)))
		sroce_stat_inc(qp->sdev, SROCE_CNT_OOS_REQ);
	if (sroce_resp_gap_nak(c, &qp->resp.nak_sent))
		sroce_resp_nak(qp, qp->resp.epsn, SROCE_NAK_PSN_SEQ_ERR);
	if (c == SROCE_PSN_DUPLICATE)
		sroce_resp_duplicate(qp, pkt);
	return c == SROCE_PSN_EXPECTED;
}

/* Execute request @pkt, which has the expected PSN. resp_lock held. */
static enum sroce_resp_verdict sroce_resp_exec(struct sroce_qp *qp,
					       const struct sroce_pkt *pkt,
					       const u8 *payload)
{
	enum sroce_resp_verdict v;

	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		v = sroce_resp_xrc_begin(qp, pkt);
		if (v != SROCE_RESP_OK)
			goto out;
	}
	switch (pkt->info->kind) {
	case SROCE_KIND_SEND:
		v = sroce_resp_send(qp, pkt, payload);
		break;
	case SROCE_KIND_WRITE:
		v = sroce_resp_write(qp, pkt, payload);
		break;
	case SROCE_KIND_READ_REQ:
		v = sroce_read_exec(qp, pkt);
		break;
	case SROCE_KIND_ATOMIC_WRITE:
		v = sroce_resp_atomic_write(qp, pkt, payload);
		break;
	case SROCE_KIND_ATOMIC:
		v = sroce_resp_atomic(qp, pkt);
		break;
	default:
		v = SROCE_RESP_NAK_INV;
		break;
	}
out:
	if (qp->resp.xsrq) {
		sroce_srq_put(qp->resp.xsrq);
		qp->resp.xsrq = NULL;
	}
	return v;
}

/*
 * Act on verdict @v for request @pkt: the next expected PSN, and the ACK,
 * RNR NAK or NAK it is answered with. A request that asked for an ACK, one
 * of the run placed ahead that did, and the end of a NAKed gap (@gap_end)
 * are ACKed. resp_lock held.
 */
static void sroce_resp_answer(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			      enum sroce_resp_verdict v, bool gap_end)
{
	u32 psn = pkt->bth.psn;
	bool ack;

	switch (v) {
	case SROCE_RESP_OK:
		qp->resp.epsn = sroce_psn_add(psn, 1);
		ack = sroce_resp_ahead_run(qp, pkt) || pkt->bth.ack_req;
		if (gap_end && !ack) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_GAP_ACK);
			ack = true;
		}
		if (ack)
			sroce_resp_ack(qp, sroce_psn_sub(qp->resp.epsn, 1));
		return;
	case SROCE_RESP_DONE:
		if (pkt->info->kind == SROCE_KIND_READ_REQ) {
			/* A READ consumes one PSN per response packet. */
			u32 newest = (qp->resp.res_head + qp->resp.nres - 1) %
				     qp->resp.nres;

			qp->resp.epsn =
				sroce_psn_add(qp->resp.res[newest].span.last_psn, 1);
		} else {
			qp->resp.epsn = sroce_psn_add(psn, 1);
		}
		break;
	case SROCE_RESP_RNR:
		sroce_stat_inc(qp->sdev, SROCE_CNT_RNR_NAK_SENT);
		trace_sroce_nak_sent(qp, psn,
				     sroce_aeth_rnr_nak(qp->attr.min_rnr_timer));
		sroce_resp_send_aeth(qp, SROCE_OP_RC_ACK, psn,
				     sroce_aeth_rnr_nak(qp->attr.min_rnr_timer),
				     0);
		break;
	case SROCE_RESP_NAK_INV:
	case SROCE_RESP_NAK_ACCESS:
	case SROCE_RESP_NAK_OP:
		sroce_resp_nak(qp, psn, sroce_resp_verdict_nak(v));
		break;
	}
	/* Nothing placed ahead survives a request that was not a plain OK. */
	memset(&qp->resp.ahead, 0, sizeof(qp->resp.ahead));
}

/*
 * Handle one request, resp_lock held. Returns its verdict: one that
 * sroce_resp_verdict_fatal() calls fatal takes the QP to the error state,
 * which the caller does with sroce_resp_fail() once the lock is dropped.
 * A request that was not executed (UC, out of sequence, a duplicate) is
 * SROCE_RESP_DONE: answered as it needed.
 */
enum sroce_resp_verdict sroce_resp_handle(struct sroce_qp *qp,
					  const struct sroce_pkt *pkt,
					  const u8 *payload)
{
	enum sroce_resp_verdict v;
	bool gap_end;

	if (qp->ibqp.qp_type == IB_QPT_UC) {
		sroce_resp_uc(qp, pkt, payload);
		return SROCE_RESP_DONE;
	}
	if (!sroce_resp_in_sequence(qp, pkt, payload, &gap_end))
		return SROCE_RESP_DONE;
	v = sroce_resp_exec(qp, pkt, payload);
	sroce_resp_answer(qp, pkt, v, gap_end);
	return v;
}

/*
 * The responder's QP goes to the error state after a class B or C error
 * (IBTA 9.9.3.1), with the affiliated event that says which.
 */
void sroce_resp_fail(struct sroce_qp *qp, enum sroce_resp_verdict v)
{
	sroce_qp_async_error(qp, v == SROCE_RESP_NAK_INV ?
				 IB_EVENT_QP_REQ_ERR :
				 v == SROCE_RESP_NAK_ACCESS ?
				 IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
}

bool sroce_resp_state_ok(struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/*
 * sroce_resp_rcv - handle a request packet (softirq)
 *
 * While a large READ is being streamed from resp_work, later requests wait
 * in resp.backlog (holding their skb) so that they execute, and are
 * answered, after it: requests execute in PSN order.
 */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt, const u8 *payload)
{
	enum sroce_resp_verdict v;

	if (!sroce_resp_state_ok(qp)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}
	spin_lock_bh(&qp->resp_lock);
	if (qp->resp.busy && !sroce_read_busy_rcv(qp, skb, pkt)) {
		spin_unlock_bh(&qp->resp_lock);
		return;
	}
	v = sroce_resp_handle(qp, pkt, payload);
	spin_unlock_bh(&qp->resp_lock);
	if (sroce_resp_verdict_fatal(v))
		sroce_resp_fail(qp, v);
}
