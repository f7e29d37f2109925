// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC responder: checks and executes incoming requests, places data,
 * generates ACKs/NAKs, executes atomics, and answers duplicates (re-ACK,
 * restart a READ, replay the saved atomic result; IBTA C9-105); UC and UD
 * receives. READs, their responses and the backlog behind a READ stream
 * are in sroce_read.c.
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
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_range.h"

/*
 * We do not run end-to-end credits: ACKs advertise SROCE_CREDIT_INVALID
 * (proto/sroce_aeth.h), "unlimited".
 */

/* Locks held by the caller (modify_qp to RESET). */
void sroce_resp_reset(struct sroce_qp *qp)
{
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.in_send = false;
	qp->resp.in_write = false;
	qp->resp.uc_drop = false;
	qp->resp.rwqe_held = false;
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
	sroce_resp_send_aeth(qp, SROCE_OP_RC_ACK, psn, sroce_aeth_nak(code), 0);
}

/*
 * The receive side a request uses: the QP's own, or for an XRC target the
 * SRQ its XRCETH names, with that SRQ's CQ and PD (IBTA 9.8.5.2).
 */
static struct sroce_srq *sroce_resp_srq(const struct sroce_qp *qp)
{
	return qp->srq ? qp->srq : qp->resp.xsrq;
}

struct ib_pd *sroce_resp_pd(const struct sroce_qp *qp)
{
	return qp->resp.xsrq ? qp->resp.xsrq->ibsrq.pd : qp->ibqp.pd;
}

static struct sroce_cq *sroce_resp_cq(const struct sroce_qp *qp)
{
	return qp->resp.xsrq ? to_scq(qp->resp.xsrq->ibsrq.ext.cq) : qp->rcq;
}

/* Post @cqe for the current receive WQE and free it. resp_lock held. */
static void sroce_resp_post_cqe(struct sroce_qp *qp, struct sroce_cqe *cqe,
				bool solicited)
{
	struct sroce_cq *cq = sroce_resp_cq(qp);

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
static void sroce_resp_complete_recv(struct sroce_qp *qp, int status,
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

	sroce_resp_post_cqe(qp, &cqe, solicited);
}

/*
 * Take the next receive WQE into resp.rwqe. Returns 1 if one was taken,
 * 0 if the RQ is empty (RNR), -EIO if the ring is corrupt or the WQE
 * invalid.
 */
static int sroce_resp_get_rwqe(struct sroce_qp *qp)
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
	if (sroce_resp_srq(qp)) {
		n = sroce_srq_take(sroce_resp_srq(qp), rw);
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

/* Place SEND payload into the receive WQE's buffers. */
static int sroce_resp_place(struct sroce_qp *qp, const u8 *data, u32 len)
{
	struct sroce_recv_wqe *rw = (void *)qp->resp.rwqe;

	return sroce_sge_copy(qp->sdev, sroce_resp_pd(qp), (const void *)(rw + 1),
			      rw->num_sge, qp->resp.rwqe_offset, (void *)data,
			      len, SROCE_TO_MR, IB_ACCESS_LOCAL_WRITE,
			      &qp->resp.rwqe_offset);
}

/* Bytes the current receive WQE's gather list can hold. */
static u64 sroce_resp_rwqe_room(const struct sroce_qp *qp)
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
	return sroce_resp_rkey_pd(qp, sroce_resp_pd(qp), rkey, va, len,
				  access);
}

static enum sroce_resp_verdict sroce_resp_send(struct sroce_qp *qp,
					       const struct sroce_pkt *pkt,
					       const u8 *payload)
{
	u8 pos = pkt->info->pos;
	bool first = pos == SROCE_POS_FIRST || pos == SROCE_POS_ONLY;
	bool last = pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY;
	u32 flags = 0, ex = 0;
	int status, r;

	if (first == qp->resp.in_send)
		return SROCE_RESP_NAK_INV;	/* opcode sequence error */
	/* IBTA C9-92: FIRST/MIDDLE carry the PMTU, ONLY/LAST no more. */
	if (last ? pkt->payload_len > qp->mtu : pkt->payload_len != qp->mtu)
		return SROCE_RESP_NAK_INV;
	if (first) {
		r = sroce_resp_get_rwqe(qp);
		if (r < 0)
			return SROCE_RESP_NAK_OP;
		if (!r)
			return SROCE_RESP_RNR;
		qp->resp.in_send = true;
	}
	status = sroce_resp_place(qp, payload, pkt->payload_len);
	if (status) {
		sroce_resp_complete_recv(qp, status, IB_WC_RECV,
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
		if (sroce_mr_invalidate(qp->sdev, sroce_resp_pd(qp),
					qp->ibqp.qp_num, pkt->ieth_rkey,
					true)) {
			sroce_resp_complete_recv(qp, IB_WC_REM_INV_REQ_ERR,
						 IB_WC_RECV,
						 qp->resp.rwqe_offset, 0, 0,
						 false);
			return SROCE_RESP_NAK_INV;
		}
		flags |= SROCE_WC_F_WITH_INV;
		ex = pkt->ieth_rkey;
	}
	sroce_resp_complete_recv(qp, IB_WC_SUCCESS, IB_WC_RECV,
				 qp->resp.rwqe_offset, flags, ex, pkt->bth.se);
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	return SROCE_RESP_OK;
}

static enum sroce_resp_verdict sroce_resp_write(struct sroce_qp *qp,
						const struct sroce_pkt *pkt,
						const u8 *payload)
{
	u8 pos = pkt->info->pos;
	bool first = pos == SROCE_POS_FIRST || pos == SROCE_POS_ONLY;
	bool last = pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY;
	bool imm = pkt->info->hdrs & SROCE_HDR_IMMDT;
	struct sroce_mr *mr;
	int r;

	if (first == qp->resp.in_write)
		return SROCE_RESP_NAK_INV;
	/* IBTA C9-92: FIRST/MIDDLE carry the PMTU, ONLY/LAST no more. */
	if (last ? pkt->payload_len > qp->mtu : pkt->payload_len != qp->mtu)
		return SROCE_RESP_NAK_INV;
	/* With immediate, a receive WQE is needed: check before placing. */
	if (imm && !qp->resp.in_send) {
		r = sroce_resp_get_rwqe(qp);
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
	if (pkt->payload_len || first) {
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
		sroce_resp_complete_recv(qp, IB_WC_SUCCESS,
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
	u32 i, off;

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
		/*
		 * A requester that went back N resends a burst the responder
		 * mostly has; answering each packet would double its work
		 * just when it is behind. The burst's packets that ask for an
		 * ACK (a message's last, every 64th, the one that fills the
		 * requester's window) get one; the rest are dropped.
		 */
		if (!pkt->bth.ack_req) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_DUP_NO_ACK);
			return;
		}
		/*
		 * Re-acknowledge what has been received (C9-105): the newest
		 * PSN, unless that is a READ's or an atomic's. rdma_rxe's
		 * requester completes a READ whose PSN an ACK names as if its
		 * data had come; then the duplicate's own PSN.
		 */
		sroce_resp_ack(qp, sroce_resp_newest_is_rd(qp) ? pkt->bth.psn :
				   sroce_psn_sub(qp->resp.epsn, 1));
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
	bool first = pos == SROCE_POS_FIRST || pos == SROCE_POS_ONLY;
	bool last = pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY;
	enum sroce_resp_verdict v;

	if (pkt->bth.psn != qp->resp.epsn || qp->resp.uc_drop) {
		if (!first) {
			sroce_stat_inc(qp->sdev, SROCE_CNT_OOS_REQ);
			qp->resp.uc_drop = true;
			return;
		}
		qp->resp.uc_drop = false;
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
		if (pos == SROCE_POS_FIRST || pos == SROCE_POS_ONLY)
			qp->resp.xsrqn = pkt->xrc_srqn;
		else if (pkt->xrc_srqn != qp->resp.xsrqn)
			return SROCE_RESP_NAK_INV;
	}
	return SROCE_RESP_OK;
}

/*
 * Execute one request, resp_lock held. Returns true if the QP must go to
 * the error state (the caller does that after dropping the lock, with the
 * affiliated async event in *@event).
 */
bool sroce_resp_handle(struct sroce_qp *qp, const struct sroce_pkt *pkt,
		       const u8 *payload, enum ib_event_type *event)
{
	enum sroce_resp_verdict v;
	u32 psn = pkt->bth.psn;

	if (qp->ibqp.qp_type == IB_QPT_UC) {
		sroce_resp_uc(qp, pkt, payload);
		return false;
	}
	switch (sroce_resp_classify(psn, qp->resp.epsn)) {
	case SROCE_PSN_AHEAD:
		/* One sequence NAK per gap, until the expected PSN comes. */
		sroce_stat_inc(qp->sdev, SROCE_CNT_OOS_REQ);
		if (!qp->resp.nak_sent) {
			qp->resp.nak_sent = true;
			sroce_resp_nak(qp, qp->resp.epsn,
				       SROCE_NAK_PSN_SEQ_ERR);
		}
		goto out;
	case SROCE_PSN_DUPLICATE:
		sroce_resp_duplicate(qp, pkt);
		goto out;
	case SROCE_PSN_EXPECTED:
		break;
	}
	qp->resp.nak_sent = false;

	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		v = sroce_resp_xrc_begin(qp, pkt);
		if (v != SROCE_RESP_OK)
			goto verdict;
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
verdict:
	if (qp->resp.xsrq) {
		sroce_srq_put(qp->resp.xsrq);
		qp->resp.xsrq = NULL;
	}

	switch (v) {
	case SROCE_RESP_OK:
		qp->resp.epsn = sroce_psn_add(psn, 1);
		if (pkt->bth.ack_req)
			sroce_resp_ack(qp, psn);
		break;
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
		sroce_resp_send_aeth(qp, SROCE_OP_RC_ACK, psn,
				     sroce_aeth_rnr_nak(qp->attr.min_rnr_timer),
				     0);
		break;
	case SROCE_RESP_NAK_INV:
	case SROCE_RESP_NAK_ACCESS:
	case SROCE_RESP_NAK_OP:
		sroce_resp_nak(qp, psn, sroce_resp_verdict_nak(v));
		/* Class B/C errors: the responder's QP goes to error too. */
		*event = v == SROCE_RESP_NAK_INV ? IB_EVENT_QP_REQ_ERR :
			 v == SROCE_RESP_NAK_ACCESS ? IB_EVENT_QP_ACCESS_ERR :
			 IB_EVENT_QP_FATAL;
		return true;
	}
out:
	return false;
}

bool sroce_resp_state_ok(struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/*
 * sroce_resp_ud_rcv - deliver a UD SEND (softirq)
 *
 * The receive buffer gets the 40-byte GRH first: the IPv6 header, or for
 * IPv4 20 zero bytes and the IPv4 header (union rdma_network_hdr), which is
 * where the kernel's ib_init_ah_attr_from_wc() and every RoCE consumer
 * expect it. No receive WQE: the packet is dropped (UD has no RNR).
 */
void sroce_resp_ud_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		       const struct sroce_pkt *pkt, const u8 *payload)
{
	struct net_device *ndev = qp->sdev->ndev;
	union rdma_network_hdr hdr;
	struct sroce_cqe cqe = {
		.opcode = IB_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = pkt->deth.sqpn,
		.wc_flags = SROCE_WC_F_GRH,
		.port_num = 1,
	};
	bool ipv6 = ip_hdr(skb)->version == 6;
	int r, status;

	if (!sroce_resp_state_ok(qp)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}
	if (pkt->deth.qkey != qp->attr.qkey) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QKEY);
		return;
	}
	memset(&hdr, 0, sizeof(hdr));
	if (ipv6)
		memcpy(&hdr.ibgrh, ipv6_hdr(skb), sizeof(hdr.ibgrh));
	else
		memcpy(&hdr.roce4grh, ip_hdr(skb), sizeof(hdr.roce4grh));
	cqe.network_hdr_type = ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4;
	if (is_vlan_dev(ndev))
		cqe.vlan_id = vlan_dev_vlan_id(ndev);
	if (pkt->info->hdrs & SROCE_HDR_IMMDT) {
		cqe.wc_flags |= SROCE_WC_F_WITH_IMM;
		cqe.imm_or_inv = (__force u32)cpu_to_be32(pkt->imm);
	}

	spin_lock_bh(&qp->resp_lock);
	r = sroce_resp_get_rwqe(qp);
	if (r <= 0) {
		spin_unlock_bh(&qp->resp_lock);
		if (r < 0) {
			sroce_qp_fatal(qp);
			return;
		}
		sroce_stat_inc(qp->sdev, SROCE_CNT_UD_NO_RWQE);
		return;
	}
	/*
	 * A datagram longer than the receive WQE is dropped and the WQE kept
	 * for the next one (IBTA class D; as rdma_rxe): completing it in
	 * error would lose the buffer for ib_mad's GSI QP for good.
	 */
	if (sroce_resp_rwqe_room(qp) < sizeof(hdr) + pkt->payload_len) {
		spin_unlock_bh(&qp->resp_lock);
		sroce_stat_inc(qp->sdev, SROCE_CNT_UD_LEN_DROP);
		return;
	}
	status = sroce_resp_place(qp, (const u8 *)&hdr, sizeof(hdr));
	if (!status)
		status = sroce_resp_place(qp, payload, pkt->payload_len);
	cqe.status = status ? status : IB_WC_SUCCESS;
	cqe.byte_len = qp->resp.rwqe_offset;
	sroce_resp_post_cqe(qp, &cqe, pkt->bth.se);
	spin_unlock_bh(&qp->resp_lock);
	/* A receive completed in error takes the QP to the error state. */
	if (status)
		sroce_qp_error(qp);
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
	enum ib_event_type event = SROCE_NO_EVENT;
	bool err;

	if (!sroce_resp_state_ok(qp)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}
	spin_lock_bh(&qp->resp_lock);
	if (qp->resp.busy && !sroce_read_busy_rcv(qp, skb, pkt)) {
		spin_unlock_bh(&qp->resp_lock);
		return;
	}
	err = sroce_resp_handle(qp, pkt, payload, &event);
	spin_unlock_bh(&qp->resp_lock);
	if (err)
		sroce_qp_async_error(qp, event);
}

/* Flush posted receive WQEs. */
void sroce_resp_flush(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->resp_lock);
	if (!sroce_qp_has_rq(qp)) {
		/* Only the WQE this QP took; the rest belong to the SRQ. */
		if (qp->resp.rwqe_held)
			sroce_resp_complete_recv(qp, IB_WC_WR_FLUSH_ERR,
						 IB_WC_RECV, 0, 0, 0, false);
		qp->resp.in_send = false;
		qp->resp.in_write = false;
	} else if (qp->rq.hdr) {
		int n = sroce_queue_count_produced(&qp->rq);

		while (n-- > 0) {
			if (sroce_resp_get_rwqe(qp) <= 0)
				break;
			sroce_resp_complete_recv(qp, IB_WC_WR_FLUSH_ERR,
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
