/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RC requester's completion rules (IBTA 9.7.5.2, 9.9), without the
 * kernel: what an ACK, RNR NAK or NAK means, which acknowledgments are
 * taken at all, which WQEs an ACK completes, when an ACK or a READ response
 * implies that a response was lost, and how a READ response is checked.
 * sroce_comp.c calls these; test/test_completer.cpp states them.
 */
#ifndef SROCE_COMPLETER_H
#define SROCE_COMPLETER_H

#include "sroce_aeth.h"
#include "sroce_hdr.h"
#include "sroce_psn.h"

/* What the requester does with an acknowledgment (its AETH syndrome). */
enum sroce_ack_fate {
	SROCE_ACK_PROGRESS,	/* ACK: what it covers is done */
	SROCE_ACK_RNR,		/* RNR NAK: wait, resend from its PSN */
	SROCE_ACK_SEQ,		/* sequence error: resend from its PSN now */
	SROCE_ACK_REM_INV,	/* invalid request (and unknown codes): fatal */
	SROCE_ACK_REM_ACCESS,	/* remote access error: fatal */
	SROCE_ACK_REM_OP,	/* remote operational error: fatal */
	SROCE_ACK_BAD,		/* reserved AETH type: dropped, counted */
};

/*
 * A NAK code the requester does not know is taken as an invalid request,
 * so that an unknown error cannot be retried forever (the reserved
 * codes, and the invalid RD request, which is for RD only). Bit 7, reserved,
 * is ignored.
 */
static inline enum sroce_ack_fate sroce_ack_classify(u8 syndrome)
{
	switch (sroce_aeth_type(syndrome)) {
	case SROCE_AETH_ACK:
		return SROCE_ACK_PROGRESS;
	case SROCE_AETH_RNR_NAK:
		return SROCE_ACK_RNR;
	case SROCE_AETH_NAK:
		break;
	default:
		return SROCE_ACK_BAD;
	}
	switch (sroce_aeth_value(syndrome)) {
	case SROCE_NAK_PSN_SEQ_ERR:
		return SROCE_ACK_SEQ;
	case SROCE_NAK_REMOTE_ACCESS_ERR:
		return SROCE_ACK_REM_ACCESS;
	case SROCE_NAK_REMOTE_OP_ERR:
		return SROCE_ACK_REM_OP;
	default:
		return SROCE_ACK_REM_INV;
	}
}

/*
 * The completion statuses the completer gives a WQE: the values of the
 * kernel's enum ib_wc_status and libibverbs' enum ibv_wc_status
 * (sroce_comp.c checks them at build time).
 */
enum sroce_wc_status {
	SROCE_WC_SUCCESS		= 0,
	SROCE_WC_REM_INV_REQ_ERR	= 9,
	SROCE_WC_REM_ACCESS_ERR		= 10,
	SROCE_WC_REM_OP_ERR		= 11,
	SROCE_WC_RETRY_EXC_ERR		= 12,
	SROCE_WC_RNR_RETRY_EXC_ERR	= 13,
};

/*
 * The status an error NAK gives the WQE it names (the requester completes
 * it in error and the QP goes to the error state); SROCE_WC_SUCCESS for
 * the fates that are not errors.
 */
static inline enum sroce_wc_status sroce_ack_status(enum sroce_ack_fate fate)
{
	switch (fate) {
	case SROCE_ACK_REM_INV:
		return SROCE_WC_REM_INV_REQ_ERR;
	case SROCE_ACK_REM_ACCESS:
		return SROCE_WC_REM_ACCESS_ERR;
	case SROCE_ACK_REM_OP:
		return SROCE_WC_REM_OP_ERR;
	default:
		return SROCE_WC_SUCCESS;
	}
}

/* Does @fate end the QP (its WQE completes in error, the QP goes to ERR)? */
static inline bool sroce_ack_fatal(enum sroce_ack_fate fate)
{
	return sroce_ack_status(fate) != SROCE_WC_SUCCESS;
}

/*
 * The first PSN an acknowledgment of @psn does not cover: an ACK covers
 * its own PSN, a NAK (and an RNR NAK) only the PSNs before it, as
 * does the first response of a READ or an atomic's response.
 */
static inline u32 sroce_ack_next(u32 psn, bool inclusive)
{
	return inclusive ? sroce_psn_add(psn, 1) : psn;
}

/*
 * Is an acknowledgment that covers everything before @next one the
 * requester takes, with @oldest the oldest unacknowledged PSN and @sent
 * the PSN after the highest one ever sent? It must acknowledge something
 * sent (a ghost or a stale one is dropped), may acknowledge nothing
 * new (a duplicate ACK), and a NAK must name a PSN that was sent, not the
 * next one to send.
 */
static inline bool sroce_ack_valid(u32 next, u32 oldest, u32 sent,
				   bool inclusive)
{
	return sroce_psn_diff(next, oldest) >= 0 &&
	       sroce_psn_diff(next, sent) <= 0 &&
	       (inclusive || next != sent);
}

/*
 * What an acknowledgment covering everything before @next does to a WQE.
 * LOST: a READ or atomic the ACK went past, so its response was lost (an
 * implied NAK); the ACK covers only the PSNs before the WQE's first.
 */
enum sroce_ack_wqe {
	SROCE_ACKW_SKIP,	/* already complete */
	SROCE_ACKW_COMPLETE,	/* all its PSNs are covered: it completes */
	SROCE_ACKW_STOP,	/* not (wholly) covered: it and those after wait */
	SROCE_ACKW_LOST,	/* a READ/atomic's response was lost */
};

/*
 * One WQE in the order the requester posted them, against an
 * acknowledgment of everything before @next. A SEND or WRITE completes
 * when its last PSN is covered, whichever pass sent it (its PSNs never
 * change; @sent: it has PSNs, @first_psn..@last_psn). A READ or atomic
 * completes with its response only, never with an ACK, and an
 * ACK past it means its response was lost.
 */
static inline enum sroce_ack_wqe
sroce_ack_wqe_fate(bool done, bool rd_atomic, bool sent, u32 first_psn,
		   u32 last_psn, u32 next)
{
	if (done)
		return SROCE_ACKW_SKIP;
	if (rd_atomic)
		return sent && sroce_psn_diff(next, first_psn) > 0 ?
		       SROCE_ACKW_LOST : SROCE_ACKW_STOP;
	if (!sent || sroce_psn_diff(last_psn, next) >= 0)
		return SROCE_ACKW_STOP;
	return SROCE_ACKW_COMPLETE;
}

/*
 * After an ACK of @psn was taken, the oldest unacknowledged PSN is
 * @oldest: short of the ACK, a READ or atomic stopped it (its response was
 * lost: an implied NAK), and the requester resends from there.
 */
static inline bool sroce_ack_implies_nak(u32 psn, u32 oldest)
{
	return oldest != sroce_psn_add(psn, 1);
}

/*
 * Whether a sequence NAK repeats the one the requester already went back
 * for: @rewound, with the oldest unacknowledged PSN @nak_psn then, and no
 * acknowledgment of anything new since, so the oldest unacknowledged PSN is
 * still @oldest (progress and an RNR NAK, after which the responder awaits
 * that PSN afresh, clear @rewound). A responder NAKs a gap once
 * (C9-106) and says nothing more until the PSN it awaits arrives, so a
 * repeat is a copy the network made or a forgery: going back again would
 * resend the whole window for nothing.
 */
static inline bool sroce_nak_repeats(bool rewound, u32 nak_psn, u32 oldest)
{
	return rewound && nak_psn == oldest;
}

/*
 * Take one retry from @budget, the QP's retry count, at an ACK timeout
 * (every acknowledgment that makes progress resets it): false when none
 * is left, and the oldest WQE completes with SROCE_WC_RETRY_EXC_ERR. For
 * this count 7 is seven retries (IBTA).
 */
static inline bool sroce_retry_take(u8 *budget)
{
	if (!*budget)
		return false;
	(*budget)--;
	return true;
}

/*
 * Take one RNR retry from @budget, the QP's RNR retry count, at an RNR
 * NAK (reset the same way): false when none is left, and the WQE
 * completes with SROCE_WC_RNR_RETRY_EXC_ERR. For RNR retries, 7 means
 * "retry for ever" (IBTA).
 */
static inline bool sroce_rnr_retry_take(u8 *budget)
{
	return *budget == 7 || sroce_retry_take(budget);
}

/* The PSN of the READ response that carries byte @off of the READ. */
static inline u32 sroce_read_resp_psn(u32 first_psn, u32 off, u32 mtu)
{
	return sroce_psn_add(first_psn, off / mtu);
}

/*
 * Is the payload of a READ response at position @pos the size it must
 * be, with @resid bytes of the READ still to come? Every response but the
 * last carries exactly one MTU; the last (or only) the rest.
 */
static inline bool sroce_read_resp_len_ok(enum sroce_op_pos pos, u32 len,
					  u32 resid, u32 mtu)
{
	if (len > resid || len > mtu)
		return false;
	if (pos == SROCE_POS_FIRST || pos == SROCE_POS_MIDDLE)
		return len == mtu;
	return len == resid;
}

/*
 * A READ response with PSN @psn arrived while the one with @expect was
 * awaited; @next is the next PSN the requester will send. A later one
 * that was sent means the expected one was lost: ask again from @expect
 * at once rather than at the ACK timeout - but once per missing
 * PSN (@asked: a re-request from @asked_psn is out), since the rest of
 * the old stream still arrives and must not ask again and again. An
 * earlier one is a duplicate, and one never sent a ghost: both dropped.
 */
static inline bool sroce_read_resp_gap(u32 psn, u32 expect, u32 next,
				       bool asked, u32 asked_psn)
{
	return sroce_psn_diff(psn, expect) > 0 &&
	       sroce_psn_diff(psn, next) < 0 &&
	       (!asked || asked_psn != expect);
}

/*
 * Jitter reorders a READ's responses, and a re-request's responses overtake
 * the old stream's. The response with PSN p carries bytes (p - first) * MTU
 * on of the READ, whichever request asked for it, so one that arrives ahead
 * of the awaited one is placed at once (a requester owns the READ's buffer
 * until the READ completes) instead of being dropped and asked for again:
 * a bitmap (@have) says which of the SROCE_AHEAD_MAX PSNs after the
 * awaited one are in place, bit i for awaited + 1 + i (sroce_psn.h).
 */

/*
 * May the response @d PSNs after the awaited one, at position @pos, be
 * placed? It must be in the bitmap's reach, not after the READ's last
 * response (@last_d PSNs after the awaited one), and not in place already
 * (a duplicate). Its position must be the one a stream gives that PSN: the
 * requester only ever asks from the awaited response, so a stream's FIRST
 * or ONLY is never ahead of it; a MIDDLE comes before the READ's last PSN,
 * a LAST at it.
 */
static inline bool sroce_read_resp_ahead(enum sroce_op_pos pos, u32 d,
					 u32 last_d, u64 have)
{
	if (!sroce_ahead_open(have, d, last_d))
		return false;
	return d == last_d ? pos == SROCE_POS_LAST : pos == SROCE_POS_MIDDLE;
}

/*
 * The READ's last response has come @lasts times since the awaited one
 * (@expect) was asked for again (@asked_psn), with the re-request sent
 * (@sent): the first is usually the old stream's, which the gap was seen
 * in; the second the re-request's own. If the awaited one is still
 * missing then, it was lost again: ask once more (@reasked: done already
 * for @expect) rather than wait for the ACK timeout, which RDMA CM sets
 * to seconds on RoCE.
 */
static inline bool sroce_read_resp_reask(u32 lasts, bool sent, u32 expect,
					 bool asked, u32 asked_psn,
					 bool reasked)
{
	return asked && asked_psn == expect && !reasked && sent && lasts >= 2;
}

/*
 * What the completer keeps about the READ whose responses it awaits
 * (sroce_comp.c's comp.rr): which ones after the awaited one are in place,
 * and the once-only asks of the two rules above.
 */
struct sroce_read_track {
	u64 have;	/* bit i: awaited + 1 + i is in place */
	u32 idx;	/* the READ's SQ index */
	u32 gap_psn;	/* asked for again from this PSN after a gap */
	u8 lasts;	/* the READ's last responses since */
	bool gap;	/* a gap was seen and asked for */
	bool reasked;	/* and asked once more after the READ's last */
};

/* The READ at SQ index @idx is awaited: what was in place was another's. */
static inline void sroce_read_track_at(struct sroce_read_track *t, u32 idx)
{
	if (t->idx != idx) {
		t->idx = idx;
		t->have = 0;
	}
}

/*
 * Gone back after an ACK timeout or a tail loss probe: whatever gap comes
 * next is asked for afresh. (A sequence NAK's rewind leaves it as it is.)
 */
static inline void sroce_read_track_rewound(struct sroce_read_track *t)
{
	t->gap = false;
}

/* What to do with a response that is not the awaited one. */
struct sroce_read_ahead {
	bool ask;	/* ask again from the awaited PSN (an implied NAK) */
	bool place;	/* place it now at @d MTUs past the awaited one */
	u32 d;
};

/*
 * A response with PSN @psn at position @pos carrying @len bytes came while
 * @expect was awaited, with @resid bytes of the READ (whose last response
 * is @last_psn) still missing from @expect on; @next is the next PSN the
 * requester will send and @sent says the READ's request (or re-request)
 * went out. Applies the gap and re-ask rules once each and says whether
 * the response fits where it belongs; sroce_read_track_placed() records
 * it once placed.
 */
static inline struct sroce_read_ahead
sroce_read_track_ahead(struct sroce_read_track *t, u32 psn,
		       enum sroce_op_pos pos, u32 len, u32 expect, u32 last_psn,
		       u32 resid, u32 mtu, u32 next, bool sent)
{
	s32 dd = sroce_psn_diff(psn, expect), ld = sroce_psn_diff(last_psn, expect);
	u32 last_d = ld > 0 ? (u32)ld : 0;
	struct sroce_read_ahead r;
	bool fits;

	r.ask = false;
	r.d = dd > 0 ? (u32)dd : 0;
	/* Of the length its position needs, if it is inside the READ. */
	fits = r.d && r.d <= last_d &&
	       sroce_read_resp_len_ok(pos, len, resid - r.d * mtu, mtu);
	if (sroce_read_resp_gap(psn, expect, next, t->gap, t->gap_psn)) {
		t->gap = true;
		t->reasked = false;
		t->lasts = 0;
		t->gap_psn = expect;
		r.ask = true;
	} else if (r.d == last_d && pos == SROCE_POS_LAST && fits) {
		if (t->lasts < 255)
			t->lasts++;
		if (sroce_read_resp_reask(t->lasts, sent, expect, t->gap,
					  t->gap_psn, t->reasked)) {
			t->reasked = true;
			r.ask = true;
		}
	}
	r.place = fits && sroce_read_resp_ahead(pos, r.d, last_d, t->have);
	return r;
}

/* The response @d past the awaited one is in place (1 <= @d <= 64). */
static inline void sroce_read_track_placed(struct sroce_read_track *t, u32 d)
{
	if (d >= 1 && d <= SROCE_AHEAD_MAX)
		t->have |= 1ULL << (d - 1);
}

/*
 * The awaited response is in place: how many after it were in place
 * already (done with now too); the awaited PSN moves past them all.
 */
static inline u32 sroce_read_track_took(struct sroce_read_track *t)
{
	return sroce_ahead_run(&t->have);
}

/* The READ is complete: nothing is in place ahead of anything. */
static inline void sroce_read_track_done(struct sroce_read_track *t)
{
	t->have = 0;
}

#endif /* SROCE_COMPLETER_H */
