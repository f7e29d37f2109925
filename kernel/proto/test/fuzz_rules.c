// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the transport's rules (sroce_responder.h,
 * sroce_completer.h, sroce_gbn.h): the input drives a READ's responder
 * state through retries a peer chooses, and feeds arbitrary PSNs,
 * syndromes and lengths to the completer's and go-back-N's decisions.
 * Beyond "no crash, no undefined behaviour" it checks what each rule
 * promises: an accepted READ retry names exactly the rest of the READ and
 * never moves backwards, an honest retry is never refused, an ACK is taken
 * only for what was sent, a WQE completes only when wholly covered, a
 * READ response is never over the MTU or the rest, and the resume point
 * after going back N lies inside the message, a SEND or WRITE segment is
 * taken only in sequence and within the PMTU; a sequence NAK is gone back
 * for once per gap and a READ response asked for again once, a packet
 * placed ahead is within reach, new and of the size its place needs, the
 * round-trip estimate settles, a probe's wait keeps to its bounds, the
 * window grows back, each request packet's wire opcode is a request of
 * its transport at its place in the message, and the send queue's walks
 * (sroce_sendq.h) complete and resume only where the rules say.
 */
#include <stdlib.h>
#include <string.h>

#include "sroce_completer.h"
#include "sroce_gbn.h"
#include "sroce_responder.h"
#include "sroce_sendq.h"
#include "sroce_wr.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

/* The input as a stream of fields; zeros once it runs out. */
struct in {
	const u8 *p;
	size_t n;
};

static u32 take(struct in *in, unsigned int bytes)
{
	u32 v = 0;

	while (bytes--) {
		v = v << 8 | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

/* Eight bytes, high half first (in one expression the order is unspecified). */
static u64 take64(struct in *in)
{
	u64 hi = take(in, 4);

	return hi << 32 | take(in, 4);
}

static u32 take_psn(struct in *in)
{
	return take(in, 3);
}

static u32 take_mtu(struct in *in)
{
	return 256u << (take(in, 1) % 5);
}

/* A READ streamed and retried as a peer chooses. */
static void fuzz_read_retries(struct in *in)
{
	struct sroce_read_span r, before;
	u32 mtu = take_mtu(in);
	u32 len = take(in, 4) & 0x7fffffff;
	u32 first = take_psn(in);
	u64 va = take64(in);
	u32 rkey = take(in, 4);
	u32 npkts = sroce_msg_pkts(len, mtu);
	bool streaming = true;
	int steps = 64;

	sroce_read_span_init(&r, first, va, rkey, len, mtu);
	CHECK(sroce_psn_sub(r.last_psn, r.first_psn) == npkts - 1);
	CHECK(sroce_read_span_has(&r, first));
	CHECK(sroce_read_span_has(&r, r.last_psn));
	CHECK(!sroce_read_span_has(&r, sroce_psn_add(r.last_psn, 1)));
	CHECK(!sroce_read_span_has(&r, sroce_psn_sub(first, 1)));

	while (in->n && steps--) {
		u8 ev = take(in, 1);
		u32 k, psn, off, got = 0;
		u64 rva;
		u32 rrkey, rlen;
		enum sroce_retry v;

		switch (ev % 4) {
		case 0:	/* the stream sends responses */
			if (streaming && r.next_psn != sroce_psn_add(r.last_psn, 1))
				r.next_psn = sroce_psn_add(r.next_psn, 1);
			else
				streaming = false;
			continue;
		case 1:	/* an honest retry from a PSN inside the READ */
			k = take(in, 4) % npkts;
			psn = sroce_psn_add(first, k);
			off = k * mtu;
			rva = va + off;
			rrkey = rkey;
			rlen = len - off;
			break;
		default: /* anything a peer sends */
			psn = take(in, 1) & 1 ? sroce_psn_add(first, take(in, 1)) :
						take_psn(in);
			rva = take(in, 1) & 1 ? va + take(in, 4) :
						take64(in);
			rrkey = take(in, 1) & 1 ? rkey : take(in, 4);
			rlen = take(in, 4);
			break;
		}
		before = r;
		v = sroce_read_retry(&r, mtu, streaming, psn, rva, rrkey, rlen,
				     &got);
		CHECK(!memcmp(&before, &r, sizeof(r)));
		CHECK((v == SROCE_RETRY_NONE) == !sroce_read_span_has(&r, psn));
		if (v == SROCE_RETRY_OK) {
			/* exactly the rest of the READ, from its PSN */
			k = sroce_psn_sub(psn, first);
			CHECK(got == k * mtu);
			CHECK(!got || got < len);
			CHECK(rva == va + got && rrkey == rkey &&
			      rlen == len - got);
			/* never backwards, never what the stream will send */
			CHECK(sroce_psn_diff(psn, r.resume_psn) >= 0);
			CHECK(!streaming || sroce_psn_diff(psn, r.next_psn) < 0);
			sroce_read_resume(&r, psn);
			CHECK(r.resume_psn == psn && r.next_psn == psn);
			streaming = true;
		} else if (ev % 4 == 1 &&
			   sroce_psn_diff(psn, r.resume_psn) >= 0 &&
			   (!streaming || sroce_psn_diff(psn, r.next_psn) < 0)) {
			/* an honest retry of a response already sent */
			CHECK(0);
		}

		/* a duplicate READ arriving during the stream */
		if (streaming) {
			bool in_read = take(in, 1) & 1;
			enum sroce_busy_action a;

			a = sroce_resp_busy_action(&r, sroce_read_span_has(&r, psn),
						   in_read, psn);
			if (a == SROCE_BUSY_REDUNDANT)
				CHECK(sroce_read_span_has(&r, psn) &&
				      sroce_psn_diff(psn, r.next_psn) >= 0);
			if (a == SROCE_BUSY_RETRY_NOW)
				CHECK(in_read && sroce_psn_diff(psn, r.next_psn) < 0);
		}
	}
}

/*
 * A stream of request PSNs as the network delivers them (lost, reordered,
 * duplicated) against the responder's state as the kernel keeps it: one
 * sequence NAK per gap (a gap ends when the awaited PSN comes), duplicates
 * ACKed only when they ask, and a UC message whose packet went missing
 * dropped to its end, whatever PSN the next FIRST has. Read after
 * fuzz_responder_misc's fields.
 */
static void fuzz_responder_streams(struct in *in)
{
	u32 epsn = take_psn(in), uc_epsn = epsn, ack_psn = 0;
	bool nak_sent = false, in_gap = false, dropping = false;
	int steps = 64, naks = 0, gaps = 0;

	while (steps-- > 0 && in->n) {
		u8 b = take(in, 1);
		u32 psn = sroce_psn_add(epsn, (b & 7) - 3);
		enum sroce_psn_class c = sroce_resp_classify(psn, epsn);
		bool first = b & 8, ack_req = b & 16, newest_rd = b & 32;

		if (c == SROCE_PSN_AHEAD && !in_gap) {
			in_gap = true;
			gaps++;
		}
		if (sroce_resp_gap_nak(c, &nak_sent))
			naks++;
		CHECK(naks == gaps);
		if (c == SROCE_PSN_EXPECTED) {
			in_gap = false;
			epsn = sroce_psn_add(epsn, 1);
		}
		CHECK(nak_sent == in_gap);
		if (c == SROCE_PSN_DUPLICATE &&
		    sroce_resp_dup_ack(ack_req, newest_rd, psn, epsn, &ack_psn))
			CHECK(ack_req && sroce_psn_before(ack_psn, epsn) &&
			      (newest_rd ? ack_psn == psn :
			       ack_psn == sroce_psn_sub(epsn, 1)));

		/* UC: a packet is taken in sequence, or a FIRST after a loss */
		psn = sroce_psn_add(uc_epsn, (b >> 6) & 1);
		if (sroce_uc_take(first, psn, uc_epsn, &dropping)) {
			CHECK(first || psn == uc_epsn);
			CHECK(!dropping);
			uc_epsn = sroce_psn_add(psn, 1);
		} else {
			CHECK(!first && dropping);
		}
	}
}

static void fuzz_responder_misc(struct in *in)
{
	u32 psn = take_psn(in), epsn = take_psn(in);
	s32 d = sroce_psn_diff(psn, epsn);
	enum sroce_psn_class c = sroce_resp_classify(psn, epsn);
	u32 slots = take(in, 2);
	s32 bd = (s32)take(in, 4);
	enum sroce_resp_verdict v = (enum sroce_resp_verdict)(take(in, 1) % 6);
	u8 nak = sroce_resp_verdict_nak(v);
	u8 pos = take(in, 1) % 4;
	bool in_msg = take(in, 1) & 1;
	u32 mtu = take_mtu(in), len = take(in, 2);

	CHECK(c == (d < 0 ? SROCE_PSN_DUPLICATE :
		    d > 0 ? SROCE_PSN_AHEAD : SROCE_PSN_EXPECTED));
	CHECK(sroce_resp_backlog_reaches(bd, slots) ==
	      ((s64)bd < (s64)slots && (s64)bd > -(s64)slots));
	CHECK(nak == SROCE_NAK_INVALID_REQ ||
	      nak == SROCE_NAK_REMOTE_ACCESS_ERR ||
	      nak == SROCE_NAK_REMOTE_OP_ERR);
	CHECK(sroce_resp_verdict_fatal(v) == (v >= SROCE_RESP_NAK_INV));
	/* A segment taken is in sequence and never over the PMTU. */
	if (sroce_resp_segment_ok(pos, in_msg, len, mtu)) {
		CHECK(sroce_pos_first(pos) != in_msg);
		CHECK(len <= mtu);
		CHECK(sroce_pos_last(pos) || len == mtu);
	}
	fuzz_responder_streams(in);
}

static void fuzz_completer(struct in *in)
{
	u8 syn = take(in, 1);
	enum sroce_ack_fate fate = sroce_ack_classify(syn);
	u32 oldest = take_psn(in), sent = sroce_psn_add(oldest, take(in, 2));
	u32 psn = take_psn(in);
	bool inclusive = take(in, 1) & 1;
	u32 next = sroce_ack_next(psn, inclusive);
	u32 first = take_psn(in), last = sroce_psn_add(first, take(in, 2));
	bool done = take(in, 1) & 1, rd_atomic = take(in, 1) & 1;
	bool was_sent = take(in, 1) & 1;
	enum sroce_ack_wqe w;
	u32 mtu = take_mtu(in), resid = take(in, 4), len = take(in, 2);
	enum sroce_op_pos pos = (enum sroce_op_pos)(take(in, 1) % 4);
	u32 expect = take_psn(in);
	u8 budget = take(in, 1) % 8, b = budget;

	CHECK((fate == SROCE_ACK_PROGRESS) ==
	      (sroce_aeth_type(syn) == SROCE_AETH_ACK));
	CHECK((fate == SROCE_ACK_BAD) ==
	      (sroce_aeth_type(syn) == SROCE_AETH_RESERVED));
	CHECK(!sroce_ack_fatal(fate) ||
	      sroce_aeth_type(syn) == SROCE_AETH_NAK);
	/* an error NAK's status is an error's; the rest complete nothing */
	CHECK(sroce_ack_fatal(fate) ==
	      (sroce_ack_status(fate) != SROCE_WC_SUCCESS));
	CHECK(sroce_ack_classify(syn ^ 0x80) == fate);

	if (sroce_ack_valid(next, oldest, sent, inclusive)) {
		CHECK(sroce_psn_diff(next, oldest) >= 0);
		CHECK(sroce_psn_diff(next, sent) <= 0);
		CHECK(inclusive || next != sent);
	}

	w = sroce_ack_wqe_fate(done, rd_atomic, was_sent, first, last, next);
	CHECK((w == SROCE_ACKW_SKIP) == done);
	/* (before(), not after(): half the PSN space away is neither) */
	if (w == SROCE_ACKW_COMPLETE)
		CHECK(!rd_atomic && was_sent && sroce_psn_before(last, next));
	if (w == SROCE_ACKW_LOST)
		CHECK(rd_atomic && was_sent &&
		      sroce_psn_diff(next, first) > 0);

	if (sroce_read_resp_len_ok(pos, len, resid, mtu))
		CHECK(len <= resid && len <= mtu &&
		      (pos == SROCE_POS_LAST || pos == SROCE_POS_ONLY ?
		       len == resid : len == mtu));
	if (sroce_read_resp_gap(psn, expect, sent, true, expect))
		CHECK(0);	/* asked from @expect already: never twice */
	if (sroce_read_resp_gap(psn, expect, sent, false, 0))
		CHECK(sroce_psn_diff(psn, expect) > 0 &&
		      sroce_psn_diff(psn, sent) < 0);

	if (sroce_rnr_retry_take(&b))
		CHECK(budget == 7 ? b == 7 : b == budget - 1);
	else
		CHECK(!budget && !b);
	b = budget;
	if (sroce_retry_take(&b))
		CHECK(b == budget - 1);
	else
		CHECK(!budget && !b);
}

static void fuzz_gbn(struct in *in)
{
	u32 mtu = take_mtu(in), len = take(in, 3);
	u32 npkts = sroce_msg_pkts(len, mtu);
	u32 first = take_psn(in), k = take(in, 2) % npkts;
	u32 got = (take(in, 2) % npkts) * mtu;
	bool is_read = take(in, 1) & 1;
	struct sroce_gbn_resume r;
	u8 timeout = take(in, 1) % 32, retry_cnt = take(in, 1) % 8, bo = 0;
	int i;

	/* a SEND/WRITE: at the packet of the oldest unacknowledged PSN */
	r = sroce_gbn_resume(false, false, len, 0, first,
			     sroce_psn_add(first, k), mtu);
	CHECK(r.offset == k * mtu && (!r.offset || r.offset < len));
	CHECK(r.psn == sroce_psn_add(first, k));
	/* a READ or atomic: whole, or a READ the rest after what came */
	r = sroce_gbn_resume(is_read, true, len, len - got, first,
			     sroce_psn_add(first, k), mtu);
	if (is_read && got) {
		CHECK(r.offset == got && r.offset < len);
		CHECK(r.psn == sroce_psn_add(first, got / mtu));
	} else {
		CHECK(!r.offset && r.psn == first);
	}

	/* the backed-off timeout stays within the IBTA value x 2^retry_cnt */
	for (i = 0; i < 10; i++) {
		bo = sroce_rto_backoff_next(bo, timeout, retry_cnt);
		CHECK(bo <= retry_cnt && bo <= SROCE_RTO_MAX_BACKOFF);
		/* beyond 3 doublings only while within timeout 15's wait */
		CHECK(bo <= SROCE_RTO_MIN_BACKOFF ||
		      sroce_rto_ns(timeout, bo) <= SROCE_RTO_GROW_NS);
		CHECK(sroce_rto_ns(timeout, bo) <=
		      sroce_rto_ns(timeout, 0) << retry_cnt);
	}
	CHECK(sroce_gbn_ack_req(take_psn(in), take_psn(in), take_psn(in),
				take(in, 2), take(in, 1) | 1, true));
}

/*
 * The completer's once-only go-back, as the kernel keeps its state: a
 * sequence NAK is gone back for once per oldest PSN until progress or an
 * RNR NAK (sroce_comp.c). The READ's asks: fuzz_read_track().
 */
static void fuzz_completer_once(struct in *in)
{
	bool rewound = false;
	u32 oldest = take_psn(in), nak_psn = 0, psn = take_psn(in);
	int steps = 64, backs = 0;

	CHECK(!sroce_ack_implies_nak(psn, sroce_psn_add(psn, 1)));
	CHECK(sroce_ack_implies_nak(psn, sroce_psn_add(psn, 2)));
	while (in->n && steps--) {
		switch (take(in, 1) % 3) {
		case 0:	/* a sequence NAK of the oldest unacknowledged PSN */
			if (sroce_nak_repeats(rewound, nak_psn, oldest)) {
				/* never the first since progress or RNR */
				CHECK(backs == 1);
				break;
			}
			rewound = true;
			nak_psn = oldest;
			CHECK(++backs == 1);
			break;
		case 1:	/* progress: something new is acknowledged */
			oldest = sroce_psn_add(oldest, 1 + take(in, 1));
			rewound = false;
			backs = 0;
			break;
		default: /* an RNR NAK: the responder awaits the PSN afresh */
			rewound = false;
			backs = 0;
			break;
		}
	}
}

/*
 * A READ's responses in any order, lost, duplicated, of any length, with
 * rewinds between (sroce_read_track_ahead(), the state the completer keeps):
 * the awaited PSN is asked for again once per gap and once more after the
 * READ's last response at most, until a rewind; nothing is placed twice,
 * outside the bitmap, past the READ's end or at the wrong length.
 */
static void fuzz_read_track(struct in *in)
{
	struct sroce_read_track t = { 0 };
	u32 first = take_psn(in), mtu = take_mtu(in);
	u32 npsn = 1 + take(in, 1), last_len = 1 + take(in, 2) % mtu;
	u32 last = sroce_psn_add(first, npsn - 1), got = 0, asked_at = 0;
	int steps = 96, asks = 0;

	while (in->n && steps-- && got < npsn) {
		u32 expect = sroce_psn_add(first, got);
		u32 resid = (npsn - 1 - got) * mtu + last_len;
		u32 psn = sroce_psn_add(expect, take(in, 1) % (npsn + 4) - 2);
		u8 pos = take(in, 1) % 4;
		u32 len = take(in, 1) & 1 ? take(in, 2) : mtu;
		bool sent = take(in, 1) & 1, reasked = t.reasked;
		struct sroce_read_ahead r;

		if (take(in, 1) % 8 == 0) {	/* a rewind */
			sroce_read_track_rewound(&t);
			asks = 0;
			continue;
		}
		if (psn == expect) {		/* the awaited one, placed */
			got += 1 + sroce_read_track_took(&t);
			continue;
		}
		r = sroce_read_track_ahead(&t, psn, (enum sroce_op_pos)pos, len,
					   expect, last, resid, mtu,
					   sroce_psn_add(last, 1), sent);
		if (r.ask) {
			if (asked_at != expect)
				asks = 0;
			asked_at = expect;
			/* once per gap, and once more after the READ's last */
			CHECK(++asks <= 2);
			CHECK(t.gap && t.gap_psn == expect);
			if (t.reasked && !reasked)
				CHECK(asks == 2 && psn == last && sent &&
				      t.lasts >= 2);
			else
				CHECK(asks == 1 && !t.reasked && !t.lasts &&
				      sroce_psn_diff(psn, expect) > 0);
		}
		if (r.place) {
			CHECK(r.d >= 1 && r.d <= SROCE_AHEAD_MAX);
			CHECK(sroce_psn_diff(psn, last) <= 0);
			CHECK(!sroce_ahead_has(t.have, r.d));
			CHECK(pos == (psn == last ? SROCE_POS_LAST : SROCE_POS_MIDDLE));
			CHECK(len == (psn == last ? last_len : mtu));
			sroce_read_track_placed(&t, r.d);
		}
	}
}

/*
 * Packets placed ahead of the awaited one (the requester's READ responses,
 * the responder's SEND and WRITE packets): never outside the bitmap, never
 * twice, never past the message's end, and of the size their place needs.
 */
static void fuzz_placement(struct in *in)
{
	u64 have = take64(in), bits = have, done;
	u32 d = take(in, 1), last_d = take(in, 1), len = take(in, 2);
	u32 mtu = take_mtu(in), resid = take(in, 4), k, i;
	u32 last_len = take(in, 1) & 1 ? 0 : take(in, 2);
	u32 first = take_psn(in), off = take(in, 3);
	u8 pos = take(in, 1) % 4;
	u32 wd, wlen;

	CHECK(sroce_psn_sub(sroce_read_resp_psn(first, off, mtu), first) ==
	      off / mtu);
	if (sroce_read_resp_ahead((enum sroce_op_pos)pos, d, last_d, have)) {
		CHECK(d >= 1 && d <= SROCE_AHEAD_MAX && d <= last_d);
		CHECK(!sroce_ahead_has(have, d));
		CHECK(pos == (d == last_d ? SROCE_POS_LAST : SROCE_POS_MIDDLE));
	}
	if (take(in, 1) & 1)
		last_d = SROCE_RESP_END_UNKNOWN;
	if (sroce_resp_ahead_ok(pos, d, len, mtu, last_d, last_len, have)) {
		CHECK(d >= 1 && d <= SROCE_AHEAD_MAX && d <= last_d);
		CHECK(!sroce_ahead_has(have, d));
		CHECK(pos == SROCE_POS_MIDDLE || pos == SROCE_POS_LAST);
		if (pos == SROCE_POS_MIDDLE)
			CHECK(len == mtu && d < last_d);
		else if (last_d == SROCE_RESP_END_UNKNOWN)
			CHECK(len && len <= mtu && !sroce_ahead_beyond(have, d));
		else
			CHECK(len && len <= mtu && d == last_d &&
			      (!last_len || len == last_len));
	}
	if (resid) {
		sroce_resp_write_end(resid, mtu, &wd, &wlen);
		CHECK(wlen >= 1 && wlen <= mtu);
		CHECK((u64)wd * mtu + wlen == resid);
	}
	/* The awaited one arrives: the run after it is done with too. */
	k = sroce_ahead_run(&bits);
	for (i = 0; i < k; i++)
		CHECK(have >> i & 1);
	CHECK(k == SROCE_AHEAD_MAX || !(have >> k & 1));
	CHECK(bits == (k + 1 >= SROCE_AHEAD_MAX ? 0 : have >> (k + 1)));
	bits = have;
	k = take(in, 1) % (SROCE_AHEAD_MAX + 2);
	done = sroce_ahead_consume(&bits, k);
	CHECK(!(done & ~have));
	CHECK(k >= SROCE_AHEAD_MAX || !(done >> k));
}

/*
 * The round-trip estimate settles on a steady sample; a probe's wait is
 * never below its floors nor beyond half the ACK timeout, and doubles with
 * each probe; the window grows back to its largest within five ACKs.
 */
/*
 * The window's end and its restart, and what the requester does with its
 * timers after a packet or a response (read after fuzz_timers' fields).
 */
static void fuzz_timer_decisions(struct in *in)
{
	u32 oldest = take_psn(in), next = sroce_psn_add(oldest, take(in, 2));
	u32 win = take(in, 2), w = win;
	u8 bits = take(in, 1);
	bool ack_req = bits & 1, resent = bits & 2, running = bits & 4;
	bool idle = bits & 8, rnr_wait = bits & 16, progressed = bits & 32;
	bool fatal = bits & 64;
	enum sroce_gbn_timer t;

	/* a full window holds @win PSNs from the oldest unacknowledged */
	CHECK(sroce_gbn_window_full(next, oldest, win) ==
	      (sroce_psn_diff(next, oldest) >= (s32)win));
	if (win && win <= SROCE_GBN_MAX_WINDOW)
		CHECK(!sroce_gbn_window_full(oldest, oldest, win) &&
		      sroce_gbn_window_full(sroce_psn_add(oldest, win),
					    oldest, win));
	CHECK(sroce_gbn_window_restart(&w) ==
	      (win > SROCE_GBN_RESTART_WINDOW));
	CHECK(w == (win > SROCE_GBN_RESTART_WINDOW ?
		    SROCE_GBN_RESTART_WINDOW : win));

	/* sending never stops a timer; only a new AckReq pushes one back */
	t = sroce_gbn_timer_sent(ack_req, resent, running);
	CHECK(t != SROCE_GBN_TIMER_STOP);
	if (running && t == SROCE_GBN_TIMER_RESTART)
		CHECK(ack_req && !resent);
	if (!running)
		CHECK(t == SROCE_GBN_TIMER_RESTART);
	/* a response pushes the ACK timeout back only when it progressed */
	t = sroce_gbn_timer_heard(idle, rnr_wait, progressed, fatal);
	CHECK(t != SROCE_GBN_TIMER_PROBE);
	if (t == SROCE_GBN_TIMER_RESTART)
		CHECK(progressed && !fatal && !idle && !rnr_wait);
	CHECK((t == SROCE_GBN_TIMER_STOP) == (idle || rnr_wait));
}

static void fuzz_timers(struct in *in)
{
	struct sroce_rtt r;
	u32 us, win;
	u64 gap, rto;
	s32 inflight;
	bool paced;
	u64 pto, prev = 0;
	u8 p;
	int i;

	/* one field after another, in the order a replay reads them */
	r.srtt_us = take(in, 4);
	r.rttvar_us = take(in, 4);
	us = take(in, 4);
	win = take(in, 2);
	gap = (u64)take(in, 4) * 1000;
	rto = (u64)take(in, 4) << 12;
	inflight = (s32)take(in, 2) - 8;
	paced = take(in, 1) & 1;

	for (p = 0; p <= SROCE_TLP_MAX; p++) {
		pto = sroce_tlp_pto_ns(&r, p, inflight, gap, rto, paced);
		if (pto) {
			CHECK(!paced && r.srtt_us && p < SROCE_TLP_MAX);
			CHECK(inflight >= 1 && inflight <= SROCE_TLP_INFLIGHT);
			CHECK(pto >= SROCE_TLP_MIN_NS << p);
			CHECK(pto >= (2 * gap) << p);
			CHECK(2 * pto <= rto);
			CHECK(!prev || pto == 2 * prev);
		}
		prev = pto;
	}
	for (i = 0; i < 400; i++) {
		sroce_rtt_sample(&r, us);
		CHECK(r.srtt_us);
	}
	us = us ? us : 1;
	CHECK(r.srtt_us / 8 == us / 8 && r.rttvar_us <= 8);
	win = sroce_gbn_window_grow(win);
	CHECK(win >= SROCE_GBN_RESTART_WINDOW && win <= SROCE_GBN_MAX_WINDOW);
	for (i = 0; i < 5; i++)
		win = sroce_gbn_window_grow(win);
	CHECK(win == SROCE_GBN_MAX_WINDOW);
	fuzz_timer_decisions(in);
}

/*
 * Every request packet's wire opcode is one the parser knows as a request
 * of that transport, at the packet's place in its message (a READ or an
 * atomic is one packet), and UD sends one-packet messages only.
 */
static void fuzz_wr(struct in *in)
{
	static const u8 transports[] = { SROCE_TRANSPORT_RC, SROCE_TRANSPORT_UC,
					 SROCE_TRANSPORT_UD, SROCE_TRANSPORT_XRC };
	static const u8 qpts[] = { SROCE_QPT_RC, SROCE_QPT_UC, SROCE_QPT_UD,
				   SROCE_QPT_XRC };
	u8 t = take(in, 1), tr = take(in, 1);
	u32 wr_op = t & 0x40 ? take(in, 4) : take(in, 1) % 32;
	bool first = take(in, 1) & 1, last = take(in, 1) & 1;
	const struct sroce_opcode_info *info;
	unsigned int i;
	int op;

	if (!(t & 0x80))
		tr = transports[t % 4];
	op = sroce_wr_wire_opcode(tr, wr_op, first, last);
	if (op < 0)
		return;
	for (i = 0; i < 4 && transports[i] != tr; i++)
		;
	CHECK(i < 4 && op <= 0xff && (op & 0xe0) == tr);
	CHECK(tr != SROCE_TRANSPORT_UD || (first && last));
	info = sroce_opcode_info((u8)op);
	CHECK(info && info->request && (info->qpts & qpts[i]));
	switch (wr_op) {
	case SROCE_WR_SEND:
	case SROCE_WR_SEND_WITH_IMM:
	case SROCE_WR_SEND_WITH_INV:
		CHECK(info->kind == SROCE_KIND_SEND);
		break;
	case SROCE_WR_RDMA_WRITE:
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		CHECK(info->kind == SROCE_KIND_WRITE);
		break;
	case SROCE_WR_RDMA_READ:
		CHECK(info->kind == SROCE_KIND_READ_REQ);
		break;
	case SROCE_WR_ATOMIC_WRITE:
		CHECK(info->kind == SROCE_KIND_ATOMIC_WRITE);
		break;
	default:
		CHECK(info->kind == SROCE_KIND_ATOMIC);
		break;
	}
	/* the immediate data and the invalidated rkey on the last packet */
	CHECK(!!(info->hdrs & SROCE_HDR_IMMDT) ==
	      (last && (wr_op == SROCE_WR_SEND_WITH_IMM ||
			wr_op == SROCE_WR_RDMA_WRITE_WITH_IMM)));
	CHECK(!!(info->hdrs & SROCE_HDR_IETH) ==
	      (last && wr_op == SROCE_WR_SEND_WITH_INV));
	if (info->kind == SROCE_KIND_SEND || info->kind == SROCE_KIND_WRITE)
		CHECK(info->pos == (first ? (last ? SROCE_POS_ONLY : SROCE_POS_FIRST)
					  : (last ? SROCE_POS_LAST : SROCE_POS_MIDDLE)));
	else
		CHECK(info->pos == SROCE_POS_ONLY);
}

/*
 * A send queue of up to eight WQEs as the requester left it (a prefix sent,
 * with consecutive PSNs; any of those done), then an acknowledgment the
 * peer chooses and a rewind: the acknowledgment covers no more than it
 * says, completes only SENDs and WRITEs wholly before what it covers, in
 * posting order, and leaves done WQEs as they were; the rewind stands at
 * the first WQE not done, resumes inside its PSNs at a packet boundary,
 * and leaves every later WQE not done to be sent again.
 */
static void fuzz_sendq(struct in *in)
{
	struct sroce_wqe_st ring[8], before[8];
	struct sroce_sendq q = { ring, 7, take(in, 4), 0 };
	u32 mtu = take_mtu(in), n = take(in, 1) % 9, nsent, i;
	u32 psn = take_psn(in), oldest, next, covers, idx;
	struct sroce_sendq_resume r;
	bool stopped = false;

	q.fetched = q.acked + n;
	nsent = n ? take(in, 1) % (n + 1) : 0;
	oldest = psn;
	for (i = 0; i < n; i++) {
		struct sroce_wqe_st *st = sroce_sendq_at(&q, q.acked + i);
		enum sroce_wqe_kind kind = (enum sroce_wqe_kind)(take(in, 1) % 4);
		u32 in_mtus;

		sroce_wqe_st_init(st, kind == SROCE_WQEK_ATOMIC ? 8 :
				  kind == SROCE_WQEK_LOCAL ? 0 : take(in, 2),
				  kind);
		if (i >= nsent)
			continue;
		if (kind == SROCE_WQEK_LOCAL) {
			/* ran in order, once: done, without PSNs */
			st->state = SROCE_WQE_DONE;
			continue;
		}
		st->psn_valid = 1;
		st->first_psn = psn;
		psn = sroce_psn_add(psn, sroce_wqe_st_npsn(st, mtu));
		st->last_psn = sroce_psn_sub(psn, 1);
		st->state = SROCE_WQE_SENT;
		/* a READ: whole MTUs of it in, or all of it */
		in_mtus = mtu * (take(in, 1) % 8);
		st->resid = kind != SROCE_WQEK_READ ? 0 :
			    in_mtus < st->len ? st->len - in_mtus : 0;
		if (take(in, 1) & 1) {
			st->state = SROCE_WQE_DONE;
			st->status = (u8)(take(in, 1) % 3);
		}
		if (st->state == SROCE_WQE_DONE && oldest == st->first_psn)
			oldest = psn;
	}
	memcpy(before, ring, sizeof(ring));

	next = sroce_psn_add(oldest, take(in, 3) %
			     ((u32)sroce_psn_diff(psn, oldest) + 1));
	covers = sroce_sendq_ack(&q, next);
	CHECK(sroce_psn_diff(covers, next) <= 0);
	for (idx = q.acked; idx != q.fetched; idx++) {
		const struct sroce_wqe_st *was = &before[idx & 7];
		const struct sroce_wqe_st *st = sroce_sendq_at(&q, idx);

		if (was->state == SROCE_WQE_DONE) {
			CHECK(!memcmp(was, st, sizeof(*st)));
			continue;
		}
		if (st->state != SROCE_WQE_DONE) {
			CHECK(!memcmp(was, st, sizeof(*st)));
			stopped = true;
			continue;
		}
		/* newly complete: in order, wholly acknowledged, not a READ */
		CHECK(!stopped && !sroce_wqe_st_rd_atomic(st) && st->psn_valid);
		CHECK(sroce_psn_before(st->last_psn, covers));
		CHECK(st->status == SROCE_WC_SUCCESS);
	}

	memcpy(before, ring, sizeof(ring));
	r = sroce_sendq_rewind(&q, covers, mtu);
	for (idx = q.acked; idx != r.cur; idx++)
		CHECK(sroce_sendq_at(&q, idx)->state == SROCE_WQE_DONE);
	for (idx = r.cur; idx != q.fetched; idx++) {
		const struct sroce_wqe_st *st = sroce_sendq_at(&q, idx);

		if (before[idx & 7].state == SROCE_WQE_DONE)
			CHECK(!memcmp(&before[idx & 7], st, sizeof(*st)));
		else
			CHECK(st->state == SROCE_WQE_POSTED);
	}
	if (r.cur == q.fetched) {
		CHECK(r.psn == covers && !r.offset);
		return;
	}
	CHECK(sroce_sendq_at(&q, r.cur)->state == SROCE_WQE_POSTED);
	if (!sroce_sendq_at(&q, r.cur)->psn_valid) {
		CHECK(r.psn == covers && !r.offset);
	} else {
		const struct sroce_wqe_st *st = sroce_sendq_at(&q, r.cur);

		CHECK(r.offset % mtu == 0);
		CHECK(!r.offset || r.offset < st->len);
		CHECK(sroce_psn_diff(r.psn, st->first_psn) >= 0 &&
		      sroce_psn_diff(r.psn, st->last_psn) <= 0);
		CHECK(r.psn == sroce_psn_add(st->first_psn, r.offset / mtu));
	}
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct in in = { data, size };

	if (!size)
		return 0;
	switch (take(&in, 1) % 10) {
	case 0:
		fuzz_read_retries(&in);
		break;
	case 1:
		fuzz_responder_misc(&in);
		break;
	case 2:
		fuzz_completer(&in);
		break;
	case 3:
		fuzz_gbn(&in);
		break;
	case 4:
		fuzz_completer_once(&in);
		break;
	case 5:
		fuzz_placement(&in);
		break;
	case 6:
		fuzz_timers(&in);
		break;
	case 8:
		fuzz_read_track(&in);
		break;
	case 9:
		fuzz_sendq(&in);
		break;
	default:
		fuzz_wr(&in);
		break;
	}
	return 0;
}
