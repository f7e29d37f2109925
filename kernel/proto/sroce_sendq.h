/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RC requester's send queue as go-back-N sees it (IBTA 9.7.5.1,
 * 9.9.2), without the kernel: one record per fetched WQE, in posting
 * order; how a message is cut into packets; which WQEs an acknowledgment
 * completes; and where sending starts again after a rewind. The requester
 * (sroce_req.c) and the completer (sroce_comp.c) call these on the QP's
 * ring; test/test_sendq.cpp states the rules and runs them against a
 * model responder over a link that loses, duplicates and reorders.
 */
#ifndef SROCE_SENDQ_H
#define SROCE_SENDQ_H

#include "sroce_completer.h"
#include "sroce_gbn.h"
#include "sroce_psn.h"
#include "sroce_range.h"

enum sroce_wqe_state {
	SROCE_WQE_POSTED,	/* fetched, not fully sent */
	SROCE_WQE_SENT,		/* every packet sent, waiting for the ACK/data */
	SROCE_WQE_DONE,		/* completed (success or error) */
};

/*
 * What a WQE is to the transport, decided from its opcode at fetch. An
 * ATOMIC_WRITE is DATA: an ACK completes it. ATOMIC is compare-and-swap
 * and fetch-and-add.
 */
enum sroce_wqe_kind {
	SROCE_WQEK_DATA,	/* SEND, WRITE: completes with an ACK */
	SROCE_WQEK_READ,	/* completes with its responses */
	SROCE_WQEK_ATOMIC,	/* one PSN; completes with its response */
	SROCE_WQEK_LOCAL,	/* no packets: the requester runs it */
};

/* The requester's state of one fetched WQE. */
struct sroce_wqe_st {
	u32 first_psn;
	u32 last_psn;
	u32 len;		/* the message's length, fixed at fetch */
	u32 resid;		/* READ: bytes still to arrive */
	u8 kind;		/* enum sroce_wqe_kind, fixed at fetch */
	u8 state;		/* enum sroce_wqe_state */
	u8 psn_valid;		/* ever started: first/last_psn are its PSNs */
	u8 status;		/* enum sroce_wc_status (= ib_wc_status) when DONE */
};

static inline void sroce_wqe_st_init(struct sroce_wqe_st *st, u32 len,
				     enum sroce_wqe_kind kind)
{
	st->first_psn = 0;
	st->last_psn = 0;
	st->len = len;
	st->resid = 0;
	st->kind = (u8)kind;
	st->state = SROCE_WQE_POSTED;
	st->psn_valid = 0;
	st->status = 0;
}

/* A READ or atomic: completes with its response, never with an ACK. */
static inline bool sroce_wqe_st_rd_atomic(const struct sroce_wqe_st *st)
{
	return st->kind == SROCE_WQEK_READ || st->kind == SROCE_WQEK_ATOMIC;
}

/* The PSNs a message takes: one per MTU of data, or of READ response. */
static inline u32 sroce_wqe_st_npsn(const struct sroce_wqe_st *st, u32 mtu)
{
	if (st->kind == SROCE_WQEK_ATOMIC)
		return 1;
	return sroce_msg_pkts(st->len, mtu);
}

/* The packet of a message that starts at byte @off. */
struct sroce_send_pos {
	u32 off;	/* this packet's offset in the message */
	u32 plen;	/* its payload */
	u32 npsn;	/* the message's PSNs */
	bool first, last;
};

/*
 * A SEND or WRITE goes out an MTU at a time, the last packet carrying the
 * rest. A READ or atomic request is one packet without payload, whatever
 * the message's length: the responses carry the data.
 */
static inline struct sroce_send_pos
sroce_send_pos_at(const struct sroce_wqe_st *st, u32 off, u32 mtu)
{
	struct sroce_send_pos p = {
		.off = off,
		.plen = 0,
		.npsn = sroce_wqe_st_npsn(st, mtu),
		.first = off == 0,
		.last = true,
	};

	if (!sroce_wqe_st_rd_atomic(st)) {
		p.plen = st->len - off < mtu ? st->len - off : mtu;
		p.last = off + p.plen >= st->len;
	}
	return p;
}

/*
 * A READ resumed at byte @off of its @len (sroce_gbn_resume) asks for the
 * rest only: the RETH's address and length move with the PSN (C9-106;
 * rdma_rxe answers from this RETH as a hardware responder does).
 */
static inline void sroce_read_rereq(u64 va, u32 len, u32 off, u64 *rva,
				    u32 *rlen)
{
	*rva = va + off;
	*rlen = len - off;
}

/*
 * The fetched WQEs not yet retired, oldest first: the ring's slots
 * @acked..@fetched-1 (free-running indices, @mask = slots - 1).
 */
struct sroce_sendq {
	struct sroce_wqe_st *st;
	u32 mask;
	u32 acked;
	u32 fetched;
};

static inline struct sroce_wqe_st *sroce_sendq_at(const struct sroce_sendq *q,
						  u32 idx)
{
	return &q->st[idx & q->mask];
}

/*
 * An acknowledgment of everything before @next (sroce_ack_valid took it):
 * the SENDs and WRITEs it wholly covers complete, in posting order, up to
 * the first one it does not cover. A READ or atomic that it passes lost
 * its response (an implied NAK, C9-150): the acknowledgment covers only
 * what is before that WQE. Returns the PSN it covers up to.
 */
static inline u32 sroce_sendq_ack(const struct sroce_sendq *q, u32 next)
{
	u32 idx;

	for (idx = q->acked; idx != q->fetched; idx++) {
		struct sroce_wqe_st *st = sroce_sendq_at(q, idx);
		enum sroce_ack_wqe fate;

		fate = sroce_ack_wqe_fate(st->state == SROCE_WQE_DONE,
					  sroce_wqe_st_rd_atomic(st),
					  st->psn_valid, st->first_psn,
					  st->last_psn, next);
		if (fate == SROCE_ACKW_SKIP)
			continue;
		if (fate == SROCE_ACKW_STOP)
			break;
		if (fate == SROCE_ACKW_LOST)
			return st->first_psn;
		st->state = SROCE_WQE_DONE;
		st->status = SROCE_WC_SUCCESS;
	}
	return next;
}

/* Where the requester goes on after a rewind. */
struct sroce_sendq_resume {
	u32 cur;	/* the first WQE to send again */
	u32 psn;	/* at this PSN */
	u32 offset;	/* and this byte of its message */
};

/*
 * Go back to @oldest, the oldest unacknowledged PSN. Done WQEs (those an
 * acknowledgment or response completed but that are not retired yet) are
 * skipped. The first WQE still to do resumes at the packet of @oldest if
 * it has PSNs (sroce_gbn_resume: a READ at its first missing response, an
 * atomic whole), whether it was sent whole or in part: a message can be
 * partly sent and partly acknowledged. Every WQE after it is sent again
 * from its first packet, with the PSNs it had.
 */
static inline struct sroce_sendq_resume
sroce_sendq_rewind(const struct sroce_sendq *q, u32 oldest, u32 mtu)
{
	struct sroce_sendq_resume r = {
		.cur = q->acked, .psn = oldest, .offset = 0
	};
	u32 idx;

	while (r.cur != q->fetched &&
	       sroce_sendq_at(q, r.cur)->state == SROCE_WQE_DONE)
		r.cur++;
	for (idx = r.cur; idx != q->fetched; idx++) {
		struct sroce_wqe_st *st = sroce_sendq_at(q, idx);

		if (st->state == SROCE_WQE_DONE)
			continue;
		if (idx == r.cur && st->psn_valid) {
			struct sroce_gbn_resume g;

			g = sroce_gbn_resume(st->kind == SROCE_WQEK_READ,
					     sroce_wqe_st_rd_atomic(st),
					     st->len, st->resid,
					     st->first_psn, oldest, mtu);
			r.psn = g.psn;
			r.offset = g.offset;
		}
		st->state = SROCE_WQE_POSTED;
	}
	return r;
}

/*
 * Whether a WQE that started (has PSNs) is not done yet. After a rewind
 * the requester stands at the oldest such WQE as if nothing were sent,
 * but what started is still outstanding: SQD is not drained.
 */
static inline bool sroce_sendq_outstanding(const struct sroce_sendq *q)
{
	u32 idx;

	for (idx = q->acked; idx != q->fetched; idx++) {
		const struct sroce_wqe_st *st = sroce_sendq_at(q, idx);

		if (st->psn_valid && st->state != SROCE_WQE_DONE)
			return true;
	}
	return false;
}

#endif /* SROCE_SENDQ_H */
