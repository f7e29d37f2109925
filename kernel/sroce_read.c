// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC responder, READ side: the READ/atomic resources (resized by
 * modify_qp), executing a READ request, its responses (inline from softirq
 * when short, else streamed from resp_work in chunks, paced by DCQCN),
 * retries of a READ (the rules: proto/sroce_responder.h), and the backlog
 * of requests that wait behind a stream so that requests execute, and are
 * answered, in PSN order. The rest of the responder is in sroce_resp.c.
 *
 * Runs in softirq or resp_work, under resp_lock.
 */

#include <linux/slab.h>
#include <linux/udp.h>

#include "sroce.h"
#include "sroce_cc.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_resp.h"
#include "sroce_srq.h"
#include "sroce_stats.h"
#include "sroce_transport.h"
#include "proto/sroce_aeth.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_responder.h"

/*
 * READs of up to this many packets are answered inline from softirq; longer
 * ones stream from resp_work in chunks, so one READ cannot overflow the
 * receiving CPU's backlog (netdev_max_backlog, 1000 packets by default).
 */
#define SROCE_READ_INLINE_PKTS	32
#define SROCE_READ_CHUNK	64
/* sroce_read_stream's verdicts. */
enum {
	SROCE_STREAM_DONE,	/* all sent, or given up (the requester asks again) */
	SROCE_STREAM_MORE,	/* budget used up */
	SROCE_STREAM_PACED,	/* the DCQCN pacer holds the next packet back */
};

/*
 * Requests held back behind a streaming READ, per QP: at most this many,
 * of at most this much memory, and none further ahead of the expected PSN
 * than the backlog could ever reach...
 */
#define SROCE_RESP_BACKLOG	4096
#define SROCE_RESP_BACKLOG_BYTES	(4U << 20)
/* ...and all the QPs of a device together at most this much. */
#define SROCE_DEV_BACKLOG_BYTES	(64UL << 20)

static void sroce_read_start(struct sroce_qp *qp, struct sroce_rd_res *r);

/**
 * sroce_read_set_res - resize the responder's READ/atomic resources
 * @qp: the QP (modify_qp, serialised by its modify_lock)
 * @n: max_dest_rd_atomic
 *
 * The newest resources move to the new array, and so does the READ being
 * streamed if it is among them: the stream and the duplicate handling keep
 * working across the change (SQD->SQD). A stream whose resource does not
 * fit any more stops; the requester asks for it again and is refused.
 */
int sroce_read_set_res(struct sroce_qp *qp, u32 n)
{
	struct sroce_rd_res *res = NULL, *old, *stream = NULL;
	u32 keep, i, first;

	if (n) {
		res = kcalloc(n, sizeof(*res), SROCE_GFP_USER);
		if (!res)
			return -ENOMEM;
	}
	spin_lock_bh(&qp->resp_lock);
	old = qp->resp.res;
	keep = min(n, qp->resp.nres);
	/* The oldest kept is keep slots behind the next one to use. */
	first = qp->resp.nres ?
		(qp->resp.res_head + qp->resp.nres - keep) % qp->resp.nres : 0;
	for (i = 0; i < keep; i++) {
		struct sroce_rd_res *r = &old[(first + i) % qp->resp.nres];

		res[i] = *r;
		if (qp->resp.stream == r)
			stream = &res[i];
	}
	/* Never left pointing into the array freed below. */
	qp->resp.stream = stream;
	qp->resp.res = res;
	qp->resp.nres = n;
	qp->resp.res_head = n ? keep % n : 0;
	spin_unlock_bh(&qp->resp_lock);
	kfree(old);
	return 0;
}

/* The READ side's part of sroce_resp_free(): nothing runs the QP. */
void sroce_read_free(struct sroce_qp *qp)
{
	sroce_read_backlog_purge(qp);
	kfree(qp->resp.res);
	qp->resp.res = NULL;
	qp->resp.nres = 0;
	qp->resp.stream = NULL;
}

/* Drop the requests waiting behind a READ stream. resp_lock held. */
void sroce_read_backlog_purge(struct sroce_qp *qp)
{
	__skb_queue_purge(&qp->resp.backlog);
	atomic_long_sub(qp->resp.backlog_bytes, &qp->sdev->resp_backlog_bytes);
	qp->resp.backlog_bytes = 0;
}

/*
 * The next READ/atomic resource, the oldest one reused (the requester
 * keeps at most max_dest_rd_atomic outstanding). NULL if the QP has none.
 */
struct sroce_rd_res *sroce_read_res_alloc(struct sroce_qp *qp)
{
	struct sroce_rd_res *res;

	if (!qp->resp.nres)
		return NULL;
	res = &qp->resp.res[qp->resp.res_head];
	qp->resp.res_head = (qp->resp.res_head + 1) % qp->resp.nres;
	memset(res, 0, sizeof(*res));
	return res;
}

/* Execute a READ request with the expected PSN: check it, then answer it. */
enum sroce_resp_verdict sroce_read_exec(struct sroce_qp *qp,
					const struct sroce_pkt *pkt)
{
	struct sroce_rd_res *res;
	struct sroce_mr *mr;

	if (!sroce_msg_len_ok(pkt->reth.len, SROCE_MAX_MSG_SIZE))
		return SROCE_RESP_NAK_INV;
	/*
	 * The QP's rights whatever the length; a zero-length READ's R_Key
	 * and address are not checked (IBTA C9-88).
	 */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ))
		return SROCE_RESP_NAK_ACCESS;
	if (pkt->reth.len) {
		mr = sroce_resp_rkey(qp, pkt->reth.rkey, pkt->reth.va,
				     pkt->reth.len, IB_ACCESS_REMOTE_READ);
		if (!mr)
			return SROCE_RESP_NAK_ACCESS;
		sroce_mr_put(mr);
	}
	res = sroce_read_res_alloc(qp);
	if (!res)
		return SROCE_RESP_NAK_INV;
	res->kind = SROCE_RES_READ;
	sroce_read_span_init(&res->span, pkt->bth.psn, pkt->reth.va,
			     pkt->reth.rkey, pkt->reth.len, qp->mtu);
	res->pd = sroce_recv_pd(qp);
	res->xsrqn = qp->resp.xsrq ? qp->resp.xsrq->srqn : 0;
	res->sent = 0;
	qp->resp.msn = sroce_msn_inc(qp->resp.msn);
	sroce_read_start(qp, res);
	return SROCE_RESP_DONE;
}

/*
 * Is duplicate request @pkt a retry of READ resource @r (the rules:
 * sroce_read_retry())? A request of another kind naming a READ's PSNs is
 * none. On success *@offp is the byte offset. resp_lock held.
 */
enum sroce_retry sroce_read_is_retry(struct sroce_qp *qp,
				     const struct sroce_rd_res *r,
				     const struct sroce_pkt *pkt, u32 *offp)
{
	if (r->kind != SROCE_RES_READ ||
	    !sroce_read_span_has(&r->span, pkt->bth.psn))
		return SROCE_RETRY_NONE;
	if (pkt->info->kind != SROCE_KIND_READ_REQ)
		return SROCE_RETRY_REFUSE;
	return sroce_read_retry(&r->span, qp->mtu,
				qp->resp.busy && qp->resp.stream == r,
				pkt->bth.psn, pkt->reth.va, pkt->reth.rkey,
				pkt->reth.len, offp);
}

/* Restart @r's responses at @psn, @off bytes into the READ. resp_lock held. */
void sroce_read_restart(struct sroce_qp *qp, struct sroce_rd_res *r,
			u32 psn, u32 off)
{
	sroce_read_resume(&r->span, psn);
	r->sent = off;
	sroce_read_start(qp, r);
}

/* The READ resource whose request or responses use @psn, if any. */
static struct sroce_rd_res *sroce_read_find(struct sroce_qp *qp, u32 psn)
{
	u32 i;

	for (i = 0; i < qp->resp.nres; i++) {
		struct sroce_rd_res *r = &qp->resp.res[i];

		if (r->kind == SROCE_RES_READ &&
		    sroce_read_span_has(&r->span, psn))
			return r;
	}
	return NULL;
}

/*
 * A request arrived while a READ is being streamed. Returns true if it is
 * to be executed now: a duplicate READ asking again for responses this QP
 * has sent (the requester lost one and went back: what is still being
 * streamed, and the requests waiting behind, are stale; it resends them
 * all). Otherwise it waits in the backlog, or is dropped and counted if it
 * cannot be a request of this connection's window or the backlog is full.
 * resp_lock held.
 */
bool sroce_read_busy_rcv(struct sroce_qp *qp, struct sk_buff *skb,
			 const struct sroce_pkt *pkt)
{
	s32 d = sroce_psn_diff(pkt->bth.psn, qp->resp.epsn);
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_rd_res *r;
	u32 off;

	/* A duplicate READ: sroce_resp_busy_action() says what it is. */
	if (d < 0 && pkt->info->kind == SROCE_KIND_READ_REQ &&
	    qp->resp.stream) {
		r = sroce_read_find(qp, pkt->bth.psn);
		switch (sroce_resp_busy_action(&qp->resp.stream->span,
					       r == qp->resp.stream, r,
					       pkt->bth.psn)) {
		case SROCE_BUSY_REDUNDANT:
			sroce_stat_inc(sdev, SROCE_CNT_DUP_READ_DROP);
			return false;
		case SROCE_BUSY_RETRY_NOW:
			if (sroce_read_is_retry(qp, r, pkt, &off) !=
			    SROCE_RETRY_OK) {
				sroce_stat_inc(sdev, SROCE_CNT_DUP_READ_DROP);
				return false;
			}
			/* The stream and what waits behind it are stale. */
			sroce_read_backlog_purge(qp);
			qp->resp.stream = NULL;
			qp->resp.busy = false;
			return true;
		case SROCE_BUSY_QUEUE:
			break;
		}
	}
	/*
	 * Anything else waits, within a window around the expected PSN: a
	 * request further ahead than the backlog reaches cannot be in
	 * sequence, and a duplicate further behind is at most re-ACKed (the
	 * requester sends it again if it still needs the answer).
	 */
	if (test_bit(SROCE_QPF_DYING, &qp->flags) ||
	    !sroce_resp_backlog_reaches(d, SROCE_RESP_BACKLOG) ||
	    skb_queue_len(&qp->resp.backlog) >= SROCE_RESP_BACKLOG ||
	    qp->resp.backlog_bytes + skb->truesize > SROCE_RESP_BACKLOG_BYTES)
		goto drop;
	/* Received memory is charged to no one: the device bounds it all. */
	if (atomic_long_add_return(skb->truesize, &sdev->resp_backlog_bytes) >
	    SROCE_DEV_BACKLOG_BYTES) {
		atomic_long_sub(skb->truesize, &sdev->resp_backlog_bytes);
		goto drop;
	}
	__skb_queue_tail(&qp->resp.backlog, skb_get(skb));
	qp->resp.backlog_bytes += skb->truesize;
	return false;
drop:
	sroce_stat_inc(sdev, SROCE_CNT_RESP_BACKLOG_DROP);
	return false;
}

/*
 * Send the responses of a READ resource, in softirq under resp_lock.
 *
 * Responses must leave in PSN order with the ACKs of later requests, and
 * the data must be read before any later WRITE on this QP lands, so the
 * READ executes here, inline, like every other request. A response that
 * cannot be allocated is simply not sent: the requester times out and
 * asks again (the duplicate READ restarts the stream).
 */
static int __sroce_read_stream(struct sroce_qp *qp, struct sroce_rd_res *r,
			       u32 budget)
{
	do {
		struct sroce_txpkt tp = {};
		struct sroce_mr *mr = NULL;
		u32 len, off = r->sent;
		bool first, last;
		u64 va;

		/* DCQCN: a rate-limited QP's responses keep to its rate. */
		if (unlikely(READ_ONCE(qp->cc.limited)) &&
		    sroce_cc_resp_wait_slow(qp))
			return SROCE_STREAM_PACED;
		len = min(r->span.len - off, qp->mtu);
		/*
		 * A re-request from mid-READ continues the response sequence
		 * (MIDDLE/LAST): rdma_rxe answers so, and its requester
		 * takes a FIRST there for an error.
		 */
		first = off == 0;
		last = off + len >= r->span.len;
		va = r->span.va + off;
		tp.pkt.bth.opcode = first && last ? SROCE_OP_RC_READ_RESP_ONLY :
				    first ? SROCE_OP_RC_READ_RESP_FIRST :
				    last ? SROCE_OP_RC_READ_RESP_LAST :
				    SROCE_OP_RC_READ_RESP_MIDDLE;
		if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
			tp.pkt.bth.opcode |= SROCE_TRANSPORT_XRC;
		tp.pkt.bth.pkey = SROCE_DEFAULT_PKEY;
		tp.pkt.bth.dqpn = qp->attr.dest_qp_num;
		tp.pkt.bth.psn = r->span.next_psn;
		tp.pkt.aeth.syndrome = sroce_aeth_ack(SROCE_CREDIT_INVALID);
		tp.pkt.aeth.msn = qp->resp.msn;
		tp.pkt.payload_len = len;

		if (len) {
			/* Re-checked per packet: the MR may be going away. */
			mr = sroce_resp_rkey_pd(qp, r->pd, r->span.rkey, va, len,
						IB_ACCESS_REMOTE_READ);
			if (!mr)
				return SROCE_STREAM_DONE;
		}
		if (sroce_tx_alloc(qp, &tp, GFP_ATOMIC)) {
			if (mr)
				sroce_mr_put(mr);
			return SROCE_STREAM_DONE;
		}
		if (mr) {
			sroce_mr_copy(mr, va, tp.payload, len, SROCE_FROM_MR);
			sroce_mr_put(mr);
		}
		sroce_cc_resp_sent(qp, len, sroce_wire_len(qp, &tp.pkt));
		WRITE_ONCE(qp->resp.cpu, raw_smp_processor_id());
		sroce_tx_send(qp, &tp);
		r->sent += len;
		r->span.next_psn = sroce_psn_add(r->span.next_psn, 1);
	} while (r->sent < r->span.len && --budget);
	return r->sent >= r->span.len ? SROCE_STREAM_DONE : SROCE_STREAM_MORE;
}

static int sroce_read_stream(struct sroce_qp *qp, struct sroce_rd_res *r,
			     u32 budget)
{
	struct sroce_srq *xsrq = NULL;
	int ret;

	/*
	 * An XRC target reads with the PD of the SRQ the READ named, and only
	 * while that SRQ exists: nothing else keeps the PD alive.
	 */
	if (r->xsrqn) {
		xsrq = sroce_xsrq_get(qp->sdev, r->xsrqn);
		if (!xsrq || xsrq->ibsrq.pd != r->pd) {
			if (xsrq)
				sroce_srq_put(xsrq);
			return SROCE_STREAM_DONE;
		}
	}
	ret = __sroce_read_stream(qp, r, budget);
	if (xsrq)
		sroce_srq_put(xsrq);
	return ret;
}

/*
 * Queue resp_work. A rate-limited QP's responses all leave from one CPU
 * (bound work on the CPU that sent the last ones), as its requester's do:
 * a flow sent by turns from several CPUs can be reordered on the way (veth
 * and RPS backlogs), and the reader pays for each reordering with a
 * re-request of the READ.
 */
void sroce_read_queue(struct sroce_qp *qp)
{
	sroce_qp_work_queue(&qp->resp_work, READ_ONCE(qp->cc.limited),
			    READ_ONCE(qp->resp.cpu));
}

/*
 * Answer a READ: inline if short, else hand it to resp_work. A short one
 * that the pacer holds back continues from resp_work too, when the pacer's
 * timer queues it.
 */
static void sroce_read_start(struct sroce_qp *qp, struct sroce_rd_res *r)
{
	if (sroce_msg_pkts(r->span.len, qp->mtu) <= SROCE_READ_INLINE_PKTS) {
		if (sroce_read_stream(qp, r, U32_MAX) != SROCE_STREAM_PACED)
			return;
		qp->resp.stream = r;
		qp->resp.busy = true;
		return;
	}
	qp->resp.stream = r;
	qp->resp.busy = true;
	if (!test_bit(SROCE_QPF_DYING, &qp->flags))
		sroce_read_queue(qp);
}

/*
 * Stream the current READ in chunks, dropping resp_lock between them so
 * the receiver's backlog drains, then run the requests that waited.
 */
void sroce_read_work(struct sroce_qp *qp)
{
	struct sk_buff *skb;

	spin_lock_bh(&qp->resp_lock);
	while (qp->resp.busy && !test_bit(SROCE_QPF_DYING, &qp->flags)) {
		enum sroce_resp_verdict v = SROCE_RESP_DONE;
		struct sroce_pkt pkt;

		if (!sroce_resp_state_ok(qp)) {
			sroce_read_backlog_purge(qp);
			qp->resp.stream = NULL;
			qp->resp.busy = false;
			break;
		}
		if (qp->resp.stream) {
			int ret;

			WRITE_ONCE(qp->cc.resp_wait, false);
			ret = sroce_read_stream(qp, qp->resp.stream,
						SROCE_READ_CHUNK);
			/* The pacer's timer queues this work again. */
			if (ret == SROCE_STREAM_PACED)
				break;
			if (ret == SROCE_STREAM_DONE)
				qp->resp.stream = NULL;
			spin_unlock_bh(&qp->resp_lock);
			cond_resched();
			spin_lock_bh(&qp->resp_lock);
			continue;
		}
		skb = __skb_dequeue(&qp->resp.backlog);
		if (!skb) {
			qp->resp.busy = false;
			break;
		}
		qp->resp.backlog_bytes -= skb->truesize;
		atomic_long_sub(skb->truesize, &qp->sdev->resp_backlog_bytes);
		/* Held since sroce_udp_encap_recv: data at the UDP header. */
		if (sroce_pkt_parse(skb->data + sizeof(struct udphdr),
				    skb->len - sizeof(struct udphdr), &pkt) ==
		    SROCE_PARSE_OK)
			v = sroce_resp_handle(qp, &pkt, skb->data +
					      sizeof(struct udphdr) +
					      pkt.hdr_len);
		if (sroce_resp_verdict_fatal(v)) {
			spin_unlock_bh(&qp->resp_lock);
			kfree_skb(skb);
			sroce_resp_fail(qp, v);
			spin_lock_bh(&qp->resp_lock);
			continue;
		}
		kfree_skb(skb);
	}
	spin_unlock_bh(&qp->resp_lock);
}
