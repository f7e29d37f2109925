/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RC responder's rules (IBTA 9.7.5.1), without the kernel: how a
 * request's PSN is classified against the expected one, when a duplicate
 * READ is a retry to answer (and from which byte), where a request that
 * arrives during a READ stream goes, and which NAK an execution verdict
 * becomes. sroce_resp.c, sroce_resp_ahead.c and sroce_read.c call these;
 * test/test_responder.cpp states them.
 */
#ifndef SROCE_RESPONDER_H
#define SROCE_RESPONDER_H

#include "sroce_aeth.h"
#include "sroce_hdr.h"
#include "sroce_psn.h"
#include "sroce_range.h"

/* A request's PSN against the expected PSN (ePSN). */
enum sroce_psn_class {
	SROCE_PSN_EXPECTED,	/* execute it */
	SROCE_PSN_DUPLICATE,	/* before ePSN: a retry (C9-105, C9-106) */
	SROCE_PSN_AHEAD,	/* after ePSN: one was lost; sequence NAK */
};

static inline enum sroce_psn_class sroce_resp_classify(u32 psn, u32 epsn)
{
	s32 d = sroce_psn_diff(psn, epsn);

	if (d < 0)
		return SROCE_PSN_DUPLICATE;
	return d ? SROCE_PSN_AHEAD : SROCE_PSN_EXPECTED;
}

/*
 * Whether a request of class @c is answered with a sequence NAK: the
 * responder NAKs a gap once (C9-106) and says nothing more until the PSN it
 * awaits arrives, which ends the gap (@nak_sent: a NAK of this gap went).
 * A duplicate leaves the gap as it is.
 */
static inline bool sroce_resp_gap_nak(enum sroce_psn_class c, bool *nak_sent)
{
	switch (c) {
	case SROCE_PSN_AHEAD:
		if (*nak_sent)
			return false;
		*nak_sent = true;
		return true;
	case SROCE_PSN_EXPECTED:
		*nak_sent = false;
		return false;
	default:
		return false;
	}
}

/*
 * Whether the request of class @c ends a gap that was NAKed (@nak_sent, as
 * it was before sroce_resp_gap_nak() saw this request): the awaited PSN has
 * come. The responder then ACKs it, with what it placed ahead, whether or
 * not it asked for an ACK (an unsolicited ACK: IBTA 9.7.5.1.1 lets a
 * responder ACK any request, and coalesces ACKs). The requester went back
 * N for the NAK and is resending what the responder may already have (the
 * run placed ahead, the old stream behind the hole still on its way); the
 * ACK lets it skip ahead at once instead of resending until a packet that
 * asks for an ACK comes.
 */
static inline bool sroce_resp_gap_ends(enum sroce_psn_class c, bool nak_sent)
{
	return c == SROCE_PSN_EXPECTED && nak_sent;
}

/*
 * A duplicate SEND or WRITE packet with PSN @psn (the expected one is
 * @epsn): is it answered, and with an ACK of which PSN (@ack_psn)? A
 * requester that went back N resends a burst the responder mostly has;
 * answering each packet would double its work just when it is behind, so
 * only the packets that ask for an ACK (@ack_req: a message's last, every
 * 64th, the one that fills the requester's window) get one (C9-105). The
 * ACK names the newest PSN received, unless that is a READ's or an
 * atomic's (@newest_rd: rdma_rxe's requester completes a READ whose PSN an
 * ACK names as if its data had come); then the duplicate's own PSN.
 */
static inline bool sroce_resp_dup_ack(bool ack_req, bool newest_rd, u32 psn,
				      u32 epsn, u32 *ack_psn)
{
	if (!ack_req)
		return false;
	*ack_psn = newest_rd ? psn : sroce_psn_sub(epsn, 1);
	return true;
}

/*
 * UC (IBTA 9.7.5.2) has no ACKs, NAKs or retries: a packet with an
 * unexpected PSN (@psn, expected @epsn) loses the message it belongs to,
 * and the rest of it is dropped (@dropping) until the next FIRST or ONLY
 * (@first), which resynchronises the PSN. Is the packet taken?
 */
static inline bool sroce_uc_take(bool first, u32 psn, u32 epsn,
				 bool *dropping)
{
	if (psn == epsn && !*dropping)
		return true;
	*dropping = !first;
	return first;
}

/*
 * An executed READ as duplicate handling sees it: its responses use PSNs
 * first_psn..last_psn (one per MTU of @len; first_psn is the request's);
 * resume_psn is where the newest (re)start of its responses began and
 * next_psn the next response to send while it is being streamed.
 */
struct sroce_read_span {
	u32 first_psn;
	u32 last_psn;
	u32 next_psn;
	u32 resume_psn;
	u64 va;
	u32 rkey;
	u32 len;
};

/* A READ executed at @psn: its span, streaming from the first response. */
static inline void sroce_read_span_init(struct sroce_read_span *r, u32 psn,
					u64 va, u32 rkey, u32 len, u32 mtu)
{
	r->first_psn = psn;
	r->last_psn = sroce_psn_add(psn, sroce_msg_pkts(len, mtu) - 1);
	r->next_psn = psn;
	r->resume_psn = psn;
	r->va = va;
	r->rkey = rkey;
	r->len = len;
}

/* Does @psn fall among @r's response PSNs? */
static inline bool sroce_read_span_has(const struct sroce_read_span *r,
				       u32 psn)
{
	return sroce_psn_diff(psn, r->first_psn) >= 0 &&
	       sroce_psn_diff(psn, r->last_psn) <= 0;
}

enum sroce_retry {
	SROCE_RETRY_NONE,	/* not a request of this READ */
	SROCE_RETRY_OK,		/* a retry: answer it */
	SROCE_RETRY_REFUSE,	/* names this READ but is no retry: drop, count */
};

/*
 * Is a duplicate READ request (PSN @psn, RETH @va/@rkey/@len) a retry of
 * READ @r, whose responses are being streamed right now iff @streaming?
 *
 * A READ may be asked for again from any PSN inside it (C9-106), for the
 * rest of the data: the RETH must name exactly that rest (rdma_rxe's
 * responder reads from the RETH, so a requester that disagrees would get
 * other data from it), from the first PSN too. A requester asks again from
 * its first missing response, which never moves backwards (not before
 * resume_psn); while the responses are streamed, only from a PSN already
 * sent (before next_psn: one was lost), never from one the stream is about
 * to send. Anything else would let a peer make the QP send the same data
 * again and again for one small packet each. On SROCE_RETRY_OK, *@offp is
 * the byte offset to resume from.
 */
static inline enum sroce_retry
sroce_read_retry(const struct sroce_read_span *r, u32 mtu, bool streaming,
		 u32 psn, u64 va, u32 rkey, u32 len, u32 *offp)
{
	u64 off;

	if (!sroce_read_span_has(r, psn))
		return SROCE_RETRY_NONE;
	off = (u64)sroce_psn_sub(psn, r->first_psn) * mtu;
	if ((off && off >= r->len) || rkey != r->rkey || va != r->va + off ||
	    len != r->len - off)
		return SROCE_RETRY_REFUSE;
	if (sroce_psn_diff(psn, r->resume_psn) < 0)
		return SROCE_RETRY_REFUSE;
	if (streaming && sroce_psn_diff(psn, r->next_psn) >= 0)
		return SROCE_RETRY_REFUSE;
	*offp = (u32)off;
	return SROCE_RETRY_OK;
}

/* Restart @r's responses at @psn (a retry sroce_read_retry() accepted). */
static inline void sroce_read_resume(struct sroce_read_span *r, u32 psn)
{
	r->resume_psn = psn;
	r->next_psn = psn;
}

/*
 * A duplicate READ request (PSN @psn) that arrives while READ @stream is
 * streamed: @in_stream says its PSN falls in @stream's span, @in_read in
 * some executed READ's span (@stream's included).
 */
enum sroce_busy_action {
	SROCE_BUSY_QUEUE,	/* wait behind the stream like any request */
	SROCE_BUSY_REDUNDANT,	/* asks for what the stream is about to send */
	SROCE_BUSY_RETRY_NOW,	/* may retry a READ the stream went past */
};

/*
 * A retry of a READ from before the point the stream has reached means the
 * requester missed a response: answer it now (if sroce_read_retry()
 * agrees; the stream and everything queued behind it are stale then). A
 * retry of the streamed READ from a point the stream has not reached is
 * redundant, and is dropped: once the stream is over it would look like a
 * retry and start it again. A retry of a later READ waits like any request
 * (it may be the rest of the same rewind).
 */
static inline enum sroce_busy_action
sroce_resp_busy_action(const struct sroce_read_span *stream, bool in_stream,
		       bool in_read, u32 psn)
{
	bool passed = sroce_psn_diff(psn, stream->next_psn) < 0;

	if (in_stream && !passed)
		return SROCE_BUSY_REDUNDANT;
	if (in_read && passed)
		return SROCE_BUSY_RETRY_NOW;
	return SROCE_BUSY_QUEUE;
}

/*
 * May a request @d PSNs from ePSN wait in a backlog of @slots entries? One
 * further ahead cannot be in sequence before the backlog drains, and a
 * duplicate further behind is at most re-ACKed (the requester sends it
 * again if it still needs the answer).
 */
static inline bool sroce_resp_backlog_reaches(s32 d, u32 slots)
{
	return d < (s32)slots && d > -(s32)slots;
}

/*
 * Requests ahead of ePSN. Jitter reorders a message's packets, and the
 * packets of a go-back-N resend overtake the rest of the first stream; a
 * responder that drops every packet ahead of ePSN NAKs the hole once and
 * then, when the hole's packet comes after the ones behind it, says
 * nothing until the requester's ACK timeout (seconds, over RDMA CM). So a
 * packet of the SEND or WRITE being received (its FIRST executed) that
 * comes up to SROCE_AHEAD_MAX PSNs ahead of ePSN is placed at once: @d
 * PSNs after ePSN, its bytes go @d MTUs after those of the awaited packet
 * (every packet before a message's LAST carries one MTU), into the receive
 * WQE or the WRITE's buffer, which are the message's until it completes. A
 * bitmap (sroce_psn.h) records it; when the hole is filled, ePSN moves
 * past the run of placed packets, and the message completes when its LAST
 * is reached. Nothing else is done ahead of ePSN: a FIRST or ONLY starts a
 * message whose receive WQE or RETH is not known yet, and a READ or atomic
 * must execute in order. They are dropped as before. A SEND's end is known
 * only at its LAST, so a MIDDLE placed before it may turn out to be the
 * next SEND's (that SEND is then resent from its FIRST, and the bytes lie
 * past the completed message's byte_len, in its receive WQE's buffers).
 *
 * May a MIDDLE or LAST @d PSNs after ePSN, with @len payload bytes, be
 * placed? The message's LAST is @last_d PSNs after ePSN and must carry
 * @last_len bytes (a WRITE, whose RETH says how much is left), or lies
 * at @last_d where a LAST was placed already (a SEND), or is not known
 * (SROCE_RESP_END_UNKNOWN; @last_len 0: any length up to the MTU). It
 * must be in the bitmap's reach and not in place already (a duplicate); a
 * MIDDLE carries the MTU and comes before the LAST, and a SEND's LAST
 * comes after every MIDDLE placed.
 */
#define SROCE_RESP_END_UNKNOWN (~0U)

static inline bool sroce_resp_ahead_ok(u8 pos, u32 d, u32 len, u32 mtu,
				       u32 last_d, u32 last_len, u64 have)
{
	if (!sroce_ahead_open(have, d, last_d))
		return false;
	if (pos == SROCE_POS_MIDDLE)
		return d < last_d && len == mtu;
	if (pos != SROCE_POS_LAST || !len || len > mtu)
		return false;
	if (last_d == SROCE_RESP_END_UNKNOWN)
		return !sroce_ahead_beyond(have, d);
	return d == last_d && (!last_len || len == last_len);
}

/*
 * Where the LAST of a WRITE with @resid bytes still to come (from the
 * awaited packet on, @resid > 0) is: @last_d PSNs after ePSN, carrying
 * @last_len bytes.
 */
static inline void sroce_resp_write_end(u32 resid, u32 mtu, u32 *last_d,
					u32 *last_len)
{
	*last_d = (resid - 1) / mtu;
	*last_len = resid - *last_d * mtu;
}

/* The outcome of executing one request with the expected PSN. */
enum sroce_resp_verdict {
	SROCE_RESP_OK,		/* executed; ACK if asked */
	SROCE_RESP_DONE,	/* executed and already answered */
	SROCE_RESP_RNR,		/* no receive WQE: RNR NAK, retried later */
	SROCE_RESP_NAK_INV,	/* class B: invalid request */
	SROCE_RESP_NAK_ACCESS,	/* class C: remote access error */
	SROCE_RESP_NAK_OP,	/* class B: remote operational error */
};

/* Whether a packet at position @pos starts, or ends, its message. */
static inline bool sroce_pos_first(u8 pos)
{
	return pos == SROCE_POS_FIRST || pos == SROCE_POS_ONLY;
}

static inline bool sroce_pos_last(u8 pos)
{
	return pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY;
}

/*
 * Whether a SEND or WRITE packet at position @pos with @len payload bytes
 * fits the message the responder is in (@in_msg: its FIRST came, its LAST
 * not yet) on a path MTU of @mtu. A FIRST or ONLY may only start a message
 * and a MIDDLE or LAST only continue one (else: an opcode sequence error);
 * FIRST and MIDDLE carry exactly the PMTU, ONLY and LAST at most that
 * (IBTA C9-92). Either failure is an invalid request.
 */
static inline bool sroce_resp_segment_ok(u8 pos, bool in_msg, u32 len,
					 u32 mtu)
{
	if (sroce_pos_first(pos) == in_msg)
		return false;
	return sroce_pos_last(pos) ? len <= mtu : len == mtu;
}

/* The NAK code an error verdict is answered with (the AETH NAK codes). */
static inline u8 sroce_resp_verdict_nak(enum sroce_resp_verdict v)
{
	switch (v) {
	case SROCE_RESP_NAK_ACCESS:
		return SROCE_NAK_REMOTE_ACCESS_ERR;
	case SROCE_RESP_NAK_OP:
		return SROCE_NAK_REMOTE_OP_ERR;
	default:
		return SROCE_NAK_INVALID_REQ;
	}
}

/*
 * Whether verdict @v is a class B or C error, after which the responder's
 * QP goes to the error state too (IBTA 9.9.3.1); RNR is not an error.
 */
static inline bool sroce_resp_verdict_fatal(enum sroce_resp_verdict v)
{
	return v == SROCE_RESP_NAK_INV || v == SROCE_RESP_NAK_ACCESS ||
	       v == SROCE_RESP_NAK_OP;
}

#endif /* SROCE_RESPONDER_H */
