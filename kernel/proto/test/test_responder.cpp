// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The RC responder's rules (sroce_responder.h): PSN classification against
// the expected PSN, when a duplicate READ is a retry and from which byte,
// what a duplicate READ does while a READ is streamed, how far the backlog
// reaches, which NAK each execution verdict becomes, one sequence NAK per
// gap, which duplicates are re-acknowledged, and UC's resynchronisation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

extern "C" {
#include "sroce_responder.h"
}

namespace {

constexpr uint32_t kMtu = 1024;

// The expected PSN executes, one before it is a duplicate,
// one after it means a packet was lost - also across the 24-bit wrap.
TEST(ResponderPsn, ClassifiedAgainstTheExpectedPsn)
{
	struct {
		uint32_t psn, epsn;
		sroce_psn_class want;
	} cases[] = {
		{100, 100, SROCE_PSN_EXPECTED},
		{99, 100, SROCE_PSN_DUPLICATE},
		{101, 100, SROCE_PSN_AHEAD},
		{0xffffff, 0, SROCE_PSN_DUPLICATE},	// just before, across the wrap
		{0, 0xffffff, SROCE_PSN_AHEAD},		// just after, across the wrap
		{0x7fffff + 100, 100, SROCE_PSN_AHEAD},	// the far edge of "ahead"
		{0x800000 + 100, 100, SROCE_PSN_DUPLICATE}, // half the space away: behind
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_resp_classify(c.psn, c.epsn), c.want)
			<< "psn " << c.psn << " epsn " << c.epsn;
}

// A gap is NAKed once (C9-106): the first request ahead of the expected
// PSN is NAKed, the rest of the burst behind the loss is not, duplicates
// change nothing, and the expected PSN ends the gap, so the next loss is
// NAKed again. The request that ends a NAKed gap is ACKed, whether it
// asked for an ACK or not: the requester is resending what came ahead.
TEST(ResponderPsn, OneSequenceNakPerGapAndAnAckAtItsEnd)
{
	struct {
		sroce_psn_class c;
		bool nak, ack;
		const char *why;
	} steps[] = {
		{SROCE_PSN_EXPECTED, false, false, "in sequence"},
		{SROCE_PSN_AHEAD, true, false, "a loss: the first packet after it"},
		{SROCE_PSN_AHEAD, false, false, "the rest of the burst"},
		{SROCE_PSN_DUPLICATE, false, false, "a duplicate during the gap"},
		{SROCE_PSN_AHEAD, false, false, "still the same gap"},
		{SROCE_PSN_EXPECTED, false, true, "the resend fills the gap"},
		{SROCE_PSN_EXPECTED, false, false, "in sequence after it"},
		{SROCE_PSN_DUPLICATE, false, false, "a duplicate after it"},
		{SROCE_PSN_AHEAD, true, false, "a new loss"},
		{SROCE_PSN_EXPECTED, false, true, "its resend"},
	};
	bool nak_sent = false;

	for (auto s : steps) {
		EXPECT_EQ(sroce_resp_gap_ends(s.c, nak_sent), s.ack) << s.why;
		EXPECT_EQ(sroce_resp_gap_nak(s.c, &nak_sent), s.nak) << s.why;
	}
}

// Duplicates of SEND and WRITE packets are answered only when they ask
// for an ACK; the ACK names the newest PSN received (ePSN 100: 99), or the
// duplicate's own PSN when the newest was a READ's or an atomic's.
TEST(ResponderDuplicate, ReAcknowledgedWhenAskedOnly)
{
	struct {
		bool ack_req, newest_rd;
		uint32_t psn, epsn;
		bool ack;
		uint32_t ack_psn;
		const char *why;
	} cases[] = {
		{false, false, 95, 100, false, 0, "one of a resent burst"},
		{false, true, 95, 100, false, 0, "one of a resent burst, after a READ"},
		{true, false, 95, 100, true, 99, "a message's last"},
		{true, true, 95, 100, true, 95, "after a READ: its own PSN"},
		{true, false, 0xfffffe, 0, true, 0xffffff, "across the wrap"},
	};
	for (auto c : cases) {
		uint32_t got = 0;

		EXPECT_EQ(sroce_resp_dup_ack(c.ack_req, c.newest_rd, c.psn, c.epsn,
					     &got), c.ack) << c.why;
		if (c.ack) {
			EXPECT_EQ(got, c.ack_psn) << c.why;
		}
	}
}

// UC: a packet with an unexpected PSN loses its message; its MIDDLEs and
// LAST are dropped, and the next FIRST or ONLY (any PSN) starts afresh.
TEST(ResponderUc, ALossDropsTheMessageUntilTheNextFirst)
{
	struct {
		bool first;
		uint32_t psn, epsn;
		bool take;
		const char *why;
	} steps[] = {
		{true, 10, 10, true, "FIRST in sequence"},
		{false, 11, 11, true, "MIDDLE in sequence"},
		{false, 13, 12, false, "a MIDDLE after a loss"},
		{false, 12, 12, false, "in sequence again, but its message is lost"},
		{false, 14, 12, false, "its LAST"},
		{true, 20, 12, true, "the next FIRST resynchronises"},
		{false, 21, 21, true, "its LAST"},
		{true, 30, 22, true, "a FIRST after a lost ONLY"},
	};
	bool dropping = false;

	for (auto s : steps)
		EXPECT_EQ(sroce_uc_take(s.first, s.psn, s.epsn, &dropping), s.take)
			<< s.why;
}

sroce_read_span read_at(uint32_t psn, uint32_t len)
{
	sroce_read_span r;

	sroce_read_span_init(&r, psn, 0x10000, 0x1234, len, kMtu);
	return r;
}

// A READ of len bytes uses one response PSN per MTU (at least one), and
// its stream starts at the first.
TEST(ResponderRead, SpanIsOnePsnPerMtu)
{
	auto r = read_at(10, 4 * kMtu);
	EXPECT_EQ(r.first_psn, 10u);
	EXPECT_EQ(r.last_psn, 13u);
	EXPECT_EQ(r.next_psn, 10u);
	EXPECT_EQ(r.resume_psn, 10u);
	EXPECT_EQ(read_at(10, 0).last_psn, 10u);
	EXPECT_EQ(read_at(10, 1).last_psn, 10u);
	EXPECT_EQ(read_at(10, kMtu + 1).last_psn, 11u);
	EXPECT_EQ(read_at(0xfffffe, 4 * kMtu).last_psn, 1u); // wraps
	EXPECT_TRUE(sroce_read_span_has(&r, 10));
	EXPECT_TRUE(sroce_read_span_has(&r, 13));
	EXPECT_FALSE(sroce_read_span_has(&r, 9));
	EXPECT_FALSE(sroce_read_span_has(&r, 14));
}

struct Retry {
	uint32_t psn;
	uint64_t va;
	uint32_t rkey, len;
};

sroce_retry ask(const sroce_read_span &r, Retry q, bool streaming, uint32_t *off)
{
	return sroce_read_retry(&r, kMtu, streaming, q.psn, q.va, q.rkey, q.len, off);
}

// C9-106: a READ may be asked for again from any PSN inside it, for the
// rest of the data; the RETH must name exactly that rest.
TEST(ResponderRead, RetryFromAnyPsnForTheRest)
{
	auto r = read_at(10, 4 * kMtu);
	uint32_t off = 99;

	EXPECT_EQ(ask(r, {10, 0x10000, 0x1234, 4 * kMtu}, false, &off), SROCE_RETRY_OK);
	EXPECT_EQ(off, 0u);
	EXPECT_EQ(ask(r, {12, 0x10000 + 2 * kMtu, 0x1234, 2 * kMtu}, false, &off),
		  SROCE_RETRY_OK);
	EXPECT_EQ(off, 2 * kMtu);
	EXPECT_EQ(ask(r, {13, 0x10000 + 3 * kMtu, 0x1234, kMtu}, false, &off),
		  SROCE_RETRY_OK);
	EXPECT_EQ(off, 3 * kMtu);
}

// A request outside the READ's PSNs is not about it at all.
TEST(ResponderRead, OutsideTheSpanIsNoneOfItsBusiness)
{
	auto r = read_at(10, 4 * kMtu);
	uint32_t off;

	EXPECT_EQ(ask(r, {9, 0x10000, 0x1234, 4 * kMtu}, false, &off), SROCE_RETRY_NONE);
	EXPECT_EQ(ask(r, {14, 0x10000, 0x1234, 4 * kMtu}, false, &off), SROCE_RETRY_NONE);
}

// Inside the span, a RETH other than "the rest" is refused: another rkey,
// another address or length (rdma_rxe would read what the RETH names).
TEST(ResponderRead, ARethThatIsNotTheRestIsRefused)
{
	auto r = read_at(10, 4 * kMtu);
	uint32_t off;
	Retry bad[] = {
		{11, 0x10000 + kMtu, 0x9999, 3 * kMtu},	// other rkey
		{11, 0x10000, 0x1234, 3 * kMtu},		// va not advanced
		{11, 0x10000 + kMtu, 0x1234, 4 * kMtu},	// whole length again
		{11, 0x10000 + kMtu, 0x1234, 1},		// shorter
	};
	for (auto q : bad)
		EXPECT_EQ(ask(r, q, false, &off), SROCE_RETRY_REFUSE)
			<< "va " << q.va << " rkey " << q.rkey << " len " << q.len;
}

// A zero-length READ has one PSN and can be asked for again from it.
TEST(ResponderRead, ZeroLengthReadCanBeRetried)
{
	auto r = read_at(10, 0);
	uint32_t off = 7;

	EXPECT_EQ(ask(r, {10, 0x10000, 0x1234, 0}, false, &off), SROCE_RETRY_OK);
	EXPECT_EQ(off, 0u);
}

// The requester's first missing response never moves backwards: a retry
// from before the newest restart is refused (amplification: one small
// packet each would make the QP send the same data again and again).
TEST(ResponderRead, NeverBehindTheNewestRestart)
{
	auto r = read_at(10, 4 * kMtu);
	uint32_t off;

	sroce_read_resume(&r, 12);
	EXPECT_EQ(r.resume_psn, 12u);
	EXPECT_EQ(r.next_psn, 12u);
	EXPECT_EQ(ask(r, {11, 0x10000 + kMtu, 0x1234, 3 * kMtu}, false, &off),
		  SROCE_RETRY_REFUSE);
	EXPECT_EQ(ask(r, {12, 0x10000 + 2 * kMtu, 0x1234, 2 * kMtu}, false, &off),
		  SROCE_RETRY_OK);
}

// While the READ is streamed, only a PSN the stream has already sent may be
// asked for again (one was lost); not the one it is about to send, nor one
// it has not reached. Once the stream is over, any of them may.
TEST(ResponderRead, WhileStreamedOnlyWhatWasSent)
{
	auto r = read_at(10, 4 * kMtu);
	uint32_t off;

	r.next_psn = 12; // 10 and 11 are sent
	EXPECT_EQ(ask(r, {11, 0x10000 + kMtu, 0x1234, 3 * kMtu}, true, &off),
		  SROCE_RETRY_OK);
	EXPECT_EQ(ask(r, {12, 0x10000 + 2 * kMtu, 0x1234, 2 * kMtu}, true, &off),
		  SROCE_RETRY_REFUSE);
	EXPECT_EQ(ask(r, {13, 0x10000 + 3 * kMtu, 0x1234, kMtu}, true, &off),
		  SROCE_RETRY_REFUSE);
	EXPECT_EQ(ask(r, {13, 0x10000 + 3 * kMtu, 0x1234, kMtu}, false, &off),
		  SROCE_RETRY_OK);
}

// A duplicate READ arriving during a stream: a retry of what the stream has
// passed goes now; a retry of what it is about to send is redundant; a
// retry of a later READ (or none known) waits behind the stream.
TEST(ResponderBusy, DuplicateReadDuringAStream)
{
	auto s = read_at(10, 4 * kMtu);

	s.next_psn = 12;
	struct {
		bool in_stream, in_read;
		uint32_t psn;
		sroce_busy_action want;
	} cases[] = {
		{true, true, 11, SROCE_BUSY_RETRY_NOW},	 // the stream's, sent
		{true, true, 12, SROCE_BUSY_REDUNDANT},	 // the stream's, next
		{true, true, 13, SROCE_BUSY_REDUNDANT},	 // the stream's, not reached
		{false, true, 5, SROCE_BUSY_RETRY_NOW},	 // an older READ
		{false, true, 20, SROCE_BUSY_QUEUE},	 // a later READ
		{false, false, 5, SROCE_BUSY_QUEUE},	 // none known
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_resp_busy_action(&s, c.in_stream, c.in_read, c.psn), c.want)
			<< "psn " << c.psn;
}

// The backlog holds requests within its own size of the expected PSN,
// either way; further ahead cannot be in sequence, further behind is old.
TEST(ResponderBusy, BacklogReachesItsSizeEitherWay)
{
	EXPECT_TRUE(sroce_resp_backlog_reaches(0, 64));
	EXPECT_TRUE(sroce_resp_backlog_reaches(63, 64));
	EXPECT_FALSE(sroce_resp_backlog_reaches(64, 64));
	EXPECT_TRUE(sroce_resp_backlog_reaches(-63, 64));
	EXPECT_FALSE(sroce_resp_backlog_reaches(-64, 64));
}

// Each error verdict is answered with its NAK code.
TEST(ResponderVerdict, ErrorsBecomeTheirNak)
{
	EXPECT_EQ(sroce_resp_verdict_nak(SROCE_RESP_NAK_INV), SROCE_NAK_INVALID_REQ);
	EXPECT_EQ(sroce_resp_verdict_nak(SROCE_RESP_NAK_ACCESS), SROCE_NAK_REMOTE_ACCESS_ERR);
	EXPECT_EQ(sroce_resp_verdict_nak(SROCE_RESP_NAK_OP), SROCE_NAK_REMOTE_OP_ERR);
}

// After a class B or C error the responder's QP goes to the error state too;
// success, an answer already sent and RNR (a retry later) leave it running.
TEST(ResponderVerdict, OnlyErrorsAreFatal)
{
	EXPECT_FALSE(sroce_resp_verdict_fatal(SROCE_RESP_OK));
	EXPECT_FALSE(sroce_resp_verdict_fatal(SROCE_RESP_DONE));
	EXPECT_FALSE(sroce_resp_verdict_fatal(SROCE_RESP_RNR));
	EXPECT_TRUE(sroce_resp_verdict_fatal(SROCE_RESP_NAK_INV));
	EXPECT_TRUE(sroce_resp_verdict_fatal(SROCE_RESP_NAK_ACCESS));
	EXPECT_TRUE(sroce_resp_verdict_fatal(SROCE_RESP_NAK_OP));
}

// A SEND or WRITE packet must fit the message the responder is in: FIRST
// and ONLY start one, MIDDLE and LAST continue one; FIRST and MIDDLE carry
// exactly the PMTU, ONLY and LAST at most that (IBTA C9-92).
TEST(ResponderSegment, FitsTheMessageAndThePmtu)
{
	const u32 mtu = 1024;
	struct {
		u8 pos;
		bool in_msg;
		u32 len;
		bool ok;
	} rules[] = {
		{ SROCE_POS_FIRST, false, mtu, true },
		{ SROCE_POS_FIRST, false, mtu - 1, false },	// short FIRST
		{ SROCE_POS_FIRST, true, mtu, false },		// FIRST inside a message
		{ SROCE_POS_MIDDLE, true, mtu, true },
		{ SROCE_POS_MIDDLE, true, mtu + 1, false },	// over the PMTU
		{ SROCE_POS_MIDDLE, false, mtu, false },	// MIDDLE with no FIRST
		{ SROCE_POS_LAST, true, 1, true },
		{ SROCE_POS_LAST, true, 0, true },
		{ SROCE_POS_LAST, true, mtu + 1, false },
		{ SROCE_POS_LAST, false, 1, false },		// LAST with no FIRST
		{ SROCE_POS_ONLY, false, 0, true },
		{ SROCE_POS_ONLY, false, mtu, true },
		{ SROCE_POS_ONLY, false, mtu + 1, false },
		{ SROCE_POS_ONLY, true, 1, false },		// ONLY inside a message
	};
	for (const auto &r : rules)
		EXPECT_EQ(sroce_resp_segment_ok(r.pos, r.in_msg, r.len, mtu), r.ok)
			<< "pos " << int(r.pos) << " in_msg " << r.in_msg << " len " << r.len;
	EXPECT_TRUE(sroce_pos_first(SROCE_POS_ONLY) && sroce_pos_last(SROCE_POS_ONLY));
	EXPECT_FALSE(sroce_pos_first(SROCE_POS_MIDDLE) || sroce_pos_last(SROCE_POS_MIDDLE));
}

// A packet of the message being received that comes ahead of ePSN is
// placed when it is surely the one a stream sends at that PSN: within the
// bitmap's reach, not placed already, a MIDDLE of one MTU before the LAST,
// the LAST where the message ends (a WRITE's RETH says where, with how many
// bytes; a SEND's end is known once its LAST was placed) and never before a
// MIDDLE placed already. A FIRST or ONLY is never placed ahead.
TEST(ResponderAhead, OnlyTheRestOfTheMessageAsAStreamSendsIt)
{
	const u32 mtu = 1024, U = SROCE_RESP_END_UNKNOWN;
	const u8 M = SROCE_POS_MIDDLE, L = SROCE_POS_LAST;
	struct {
		u8 pos;
		u32 d, len, last_d, last_len;
		u64 have;
		bool ok;
		const char *why;
	} rules[] = {
		{M, 1, mtu, U, 0, 0, true, "a SEND's next MIDDLE"},
		{M, 1, mtu - 1, U, 0, 0, false, "a short MIDDLE"},
		{M, 0, mtu, U, 0, 0, false, "the awaited PSN is not ahead"},
		{M, 64, mtu, U, 0, 0, true, "the bitmap's last bit"},
		{M, 65, mtu, U, 0, 0, false, "beyond the bitmap"},
		{M, 2, mtu, U, 0, 0x2, false, "placed already (a duplicate)"},
		{M, 3, mtu, 3, 0, 0x4, false, "a MIDDLE where the SEND's LAST is"},
		{M, 4, mtu, 3, 0, 0x4, false, "a MIDDLE after the SEND's LAST"},
		{L, 3, 10, U, 0, 0x3, true, "a SEND's LAST after its MIDDLEs"},
		{L, 2, 10, U, 0, 0x4, false, "a SEND's LAST before a MIDDLE placed"},
		{L, 2, 0, U, 0, 0, false, "an empty LAST is left to come in order"},
		{L, 2, mtu + 1, U, 0, 0, false, "a LAST over the PMTU"},
		{L, 5, 100, 5, 100, 0, true, "a WRITE's LAST, where and as long as the RETH says"},
		{L, 5, 99, 5, 100, 0, false, "a WRITE's LAST of the wrong length"},
		{L, 4, 100, 5, 100, 0, false, "a WRITE's LAST too early"},
		{M, 5, mtu, 5, 100, 0, false, "a MIDDLE where the WRITE's LAST is"},
		{M, 6, mtu, 5, 100, 0, false, "past the WRITE's end"},
		{SROCE_POS_FIRST, 1, mtu, U, 0, 0, false, "a FIRST starts a message"},
		{SROCE_POS_ONLY, 1, 10, U, 0, 0, false, "so does an ONLY"},
	};
	for (const auto &r : rules)
		EXPECT_EQ(sroce_resp_ahead_ok(r.pos, r.d, r.len, mtu, r.last_d,
					      r.last_len, r.have), r.ok)
			<< r.why;
}

// A WRITE with resid bytes still to come, from the awaited packet on, ends
// (resid - 1) / MTU PSNs after it with the bytes that are left.
TEST(ResponderAhead, WhereAWriteEnds)
{
	const u32 mtu = 1024;
	struct {
		u32 resid, last_d, last_len;
	} cases[] = {
		{1, 0, 1}, {mtu, 0, mtu}, {mtu + 1, 1, 1}, {16 * mtu, 15, mtu},
		{16 * mtu - 5, 15, mtu - 5},
	};
	for (auto c : cases) {
		u32 d, len;

		sroce_resp_write_end(c.resid, mtu, &d, &len);
		EXPECT_EQ(d, c.last_d) << c.resid;
		EXPECT_EQ(len, c.last_len) << c.resid;
	}
}

// The rules above, composed: a responder that executes packets at ePSN
// and places the rest of the current message ahead of it (as
// sroce_resp.c does with them), fed WRITE and SEND messages by a
// go-back-N requester over a path that shuffles, loses and duplicates
// every pass. Whatever the order, every message must end up whole where
// it belongs, complete once with its length, and nothing may be written
// outside it - except that a SEND's MIDDLE placed before its LAST came
// may turn out to be the next SEND's, past the completed byte_len.
struct AheadModel {
	static constexpr u32 mtu = 64;
	struct Pkt {
		u32 psn, msg, off, len;
		u8 pos;
	};
	struct Msg {
		bool send;
		u32 len, first_psn;
	};
	std::vector<Msg> msgs;
	std::vector<Pkt> pkts;
	std::vector<std::vector<u8>> src, dst;	// per message
	std::vector<int> completions;
	std::vector<u32> byte_len;
	// responder state
	u32 epsn = 0, cur = 0, resid = 0, woff = 0;
	bool in_msg = false;
	u64 have = 0;
	bool last_known = false;
	u32 last_psn = 0, last_len = 0;

	AheadModel(std::mt19937 &rng, int n)
	{
		u32 psn = 0;

		for (int m = 0; m < n; m++) {
			u32 len = 1 + rng() % (6 * mtu);
			u32 npk = (len + mtu - 1) / mtu;

			msgs.push_back({bool(rng() & 1), len, psn});
			src.emplace_back(len);
			for (auto &b : src.back())
				b = u8(rng());
			// a receive WQE or MR larger than the message
			dst.emplace_back(len + 3 * mtu, 0xee);
			for (u32 i = 0; i < npk; i++) {
				u8 pos = npk == 1 ? SROCE_POS_ONLY :
					 i == 0 ? SROCE_POS_FIRST :
					 i == npk - 1 ? SROCE_POS_LAST :
					 SROCE_POS_MIDDLE;
				pkts.push_back({psn++, u32(m), i * mtu,
						std::min(mtu, len - i * mtu), pos});
			}
		}
		completions.assign(n, 0);
		byte_len.assign(n, 0);
	}

	void place(const Pkt &p, u32 at)
	{
		std::copy_n(src[p.msg].begin() + p.off, p.len,
			    dst[cur].begin() + at);
	}

	// The message in progress moves past one packet of @len bytes.
	void advance(u32 len, bool last)
	{
		woff += len;
		if (!msgs[cur].send)
			resid -= len;
		if (last) {
			completions[cur]++;
			byte_len[cur] = woff;
			in_msg = false;
			cur++;
		}
	}

	void rcv(const Pkt &p)
	{
		s32 d = sroce_psn_diff(p.psn, epsn);

		if (d > 0) {
			u32 last_d = SROCE_RESP_END_UNKNOWN, last_l = 0;

			if (!in_msg || p.msg < cur)
				return;
			if (!msgs[cur].send)
				sroce_resp_write_end(resid, mtu, &last_d, &last_l);
			else if (last_known)
				last_d = last_psn - epsn;
			if (!sroce_resp_ahead_ok(p.pos, d, p.len, mtu, last_d,
						 last_l, have))
				return;
			// ... and into the receive WQE's room (the MR's
			// bounds, for a WRITE, are the RETH's).
			if (woff + d * mtu + p.len > dst[cur].size())
				return;
			// Where the responder thinks it goes: d MTUs on, in
			// the current message (a SEND's may be the next one's).
			place(p, woff + d * mtu);
			have |= 1ULL << (d - 1);
			if (p.pos == SROCE_POS_LAST) {
				last_known = true;
				last_psn = p.psn;
				last_len = p.len;
			}
			return;
		}
		if (d < 0)
			return;
		ASSERT_EQ(p.msg, cur) << "in sequence, the packet is the current message's";
		ASSERT_TRUE(sroce_resp_segment_ok(p.pos, in_msg, p.len, mtu));
		if (sroce_pos_first(p.pos)) {
			in_msg = true;
			woff = 0;
			resid = msgs[cur].len;
			have = 0;
			last_known = false;
		}
		place(p, woff);
		epsn++;
		advance(p.len, sroce_pos_last(p.pos));
		if (!in_msg || p.pos != SROCE_POS_MIDDLE) {
			have = 0;
			last_known = false;
			return;
		}
		for (u32 k = sroce_ahead_run(&have); k; k--) {
			bool last = last_known && epsn == last_psn;

			epsn++;
			advance(last ? last_len : mtu, last);
			if (last) {
				have = 0;
				last_known = false;
				return;
			}
		}
	}
};

TEST(ResponderAhead, ShuffledLossyGoBackNDeliversEveryMessageWhole)
{
	for (unsigned seed = 1; seed <= 300; seed++) {
		std::mt19937 rng(seed);
		AheadModel m(rng, 6);
		int passes = 0;

		while (m.epsn < m.pkts.size() && passes++ < 2000) {
			// One go-back-N pass from ePSN, shuffled within a few
			// places (jitter), 15 % lost, 5 % duplicated.
			std::vector<AheadModel::Pkt> pass(m.pkts.begin() + m.epsn,
							  m.pkts.end());
			for (size_t i = 0; i + 1 < pass.size(); i++)
				std::swap(pass[i], pass[std::min(pass.size() - 1,
						i + rng() % 4)]);
			for (const auto &p : pass) {
				if (rng() % 100 < 15)
					continue;
				m.rcv(p);
				if (rng() % 100 < 5)
					m.rcv(p);
				if (::testing::Test::HasFatalFailure())
					return;
			}
		}
		ASSERT_EQ(m.epsn, m.pkts.size()) << "seed " << seed;
		for (size_t i = 0; i < m.msgs.size(); i++) {
			const auto &msg = m.msgs[i];

			EXPECT_EQ(m.completions[i], 1) << "seed " << seed << " msg " << i;
			EXPECT_EQ(m.byte_len[i], msg.len) << "seed " << seed << " msg " << i;
			EXPECT_TRUE(std::equal(m.src[i].begin(), m.src[i].end(),
					       m.dst[i].begin()))
				<< "seed " << seed << " msg " << i << " differs";
			if (!msg.send) {
				EXPECT_TRUE(std::all_of(m.dst[i].begin() + msg.len,
							m.dst[i].end(),
							[](u8 b) { return b == 0xee; }))
					<< "seed " << seed << ": a WRITE wrote past its end";
			}
		}
	}
}

} // namespace
