// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The RC requester's completion rules (sroce_completer.h): what each
// acknowledgment means, which are taken, which WQEs an ACK completes, when
// a response is known lost, how a READ response is checked, and the retry
// and RNR retry budgets.
#include <gtest/gtest.h>

extern "C" {
#include "sroce_completer.h"
}

namespace {

constexpr uint32_t kMtu = 1024;

// An ACK makes progress, an RNR NAK waits, a sequence NAK resends at once;
// the three error NAKs are fatal, each with its completion status, and so
// is any code the requester does not know (it must not retry an unknown
// error for ever): an invalid request. A reserved AETH type is dropped;
// the reserved bit 7 is ignored.
TEST(CompleterAck, EachSyndromeHasOneFate)
{
	struct {
		uint8_t syndrome;
		sroce_ack_fate want;
		sroce_wc_status status;	// SUCCESS: not fatal
	} cases[] = {
		{sroce_aeth_ack(0), SROCE_ACK_PROGRESS, SROCE_WC_SUCCESS},
		{sroce_aeth_ack(SROCE_CREDIT_INVALID), SROCE_ACK_PROGRESS, SROCE_WC_SUCCESS},
		{sroce_aeth_rnr_nak(0), SROCE_ACK_RNR, SROCE_WC_SUCCESS},
		{sroce_aeth_rnr_nak(31), SROCE_ACK_RNR, SROCE_WC_SUCCESS},
		{sroce_aeth_nak(SROCE_NAK_PSN_SEQ_ERR), SROCE_ACK_SEQ, SROCE_WC_SUCCESS},
		{sroce_aeth_nak(SROCE_NAK_INVALID_REQ), SROCE_ACK_REM_INV,
		 SROCE_WC_REM_INV_REQ_ERR},
		{sroce_aeth_nak(SROCE_NAK_REMOTE_ACCESS_ERR), SROCE_ACK_REM_ACCESS,
		 SROCE_WC_REM_ACCESS_ERR},
		{sroce_aeth_nak(SROCE_NAK_REMOTE_OP_ERR), SROCE_ACK_REM_OP,
		 SROCE_WC_REM_OP_ERR},
		{sroce_aeth_nak(SROCE_NAK_INVALID_RD_REQ), SROCE_ACK_REM_INV,
		 SROCE_WC_REM_INV_REQ_ERR},
		{sroce_aeth_syndrome(SROCE_AETH_NAK, 17), SROCE_ACK_REM_INV,
		 SROCE_WC_REM_INV_REQ_ERR},
		{sroce_aeth_syndrome(SROCE_AETH_RESERVED, 0), SROCE_ACK_BAD, SROCE_WC_SUCCESS},
		{uint8_t(0x80 | sroce_aeth_ack(3)), SROCE_ACK_PROGRESS, SROCE_WC_SUCCESS},
		{uint8_t(0x80 | sroce_aeth_nak(SROCE_NAK_REMOTE_OP_ERR)), SROCE_ACK_REM_OP,
		 SROCE_WC_REM_OP_ERR},
	};
	for (auto c : cases) {
		sroce_ack_fate fate = sroce_ack_classify(c.syndrome);

		EXPECT_EQ(fate, c.want) << "syndrome 0x" << std::hex << +c.syndrome;
		EXPECT_EQ(sroce_ack_status(fate), c.status)
			<< "syndrome 0x" << std::hex << +c.syndrome;
		EXPECT_EQ(sroce_ack_fatal(fate), c.status != SROCE_WC_SUCCESS)
			<< "syndrome 0x" << std::hex << +c.syndrome;
	}
}

// An ACK covers its own PSN; a NAK only those before it.
TEST(CompleterAck, AnAckCoversItsPsnANakOnlyThoseBefore)
{
	EXPECT_EQ(sroce_ack_next(10, true), 11u);
	EXPECT_EQ(sroce_ack_next(10, false), 10u);
	EXPECT_EQ(sroce_ack_next(0xffffff, true), 0u);
}

// With PSNs 100..109 sent and 100 the oldest unacknowledged: an
// acknowledgment must cover something sent, may cover nothing new, and a
// NAK must name a PSN that was sent.
TEST(CompleterAck, OnlyAcknowledgementsOfWhatWasSentAreTaken)
{
	const uint32_t oldest = 100, sent = 110;
	struct {
		uint32_t next;
		bool inclusive, want;
		const char *why;
	} cases[] = {
		{101, true, true, "ACK of the oldest"},
		{110, true, true, "ACK of the newest sent"},
		{100, true, true, "duplicate ACK of what came before"},
		{99, true, false, "stale: before the oldest"},
		{111, true, false, "ghost: ACK of a PSN never sent"},
		{105, false, true, "NAK of a PSN sent"},
		{100, false, true, "NAK of the oldest"},
		{110, false, false, "NAK of the next PSN to send"},
		{111, false, false, "NAK of a PSN never sent"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_ack_valid(c.next, oldest, sent, c.inclusive),
			  c.want)
			<< c.why;
	// the same across the 24-bit wrap
	EXPECT_TRUE(sroce_ack_valid(1, 0xfffffe, 3, true));
	EXPECT_FALSE(sroce_ack_valid(0xfffffd, 0xfffffe, 3, true));
	EXPECT_FALSE(sroce_ack_valid(4, 0xfffffe, 3, true));
}

// A SEND/WRITE of PSNs 10..13 completes once 13 is covered; a READ or an
// atomic never completes with an ACK, and an ACK past its first PSN means
// its response was lost.
TEST(CompleterAck, AnAckCompletesWholeSendsAndWritesOnly)
{
	struct {
		bool done, rd_atomic, sent;
		uint32_t next;
		sroce_ack_wqe want;
		const char *why;
	} cases[] = {
		{true, false, true, 20, SROCE_ACKW_SKIP, "already complete"},
		{false, false, true, 14, SROCE_ACKW_COMPLETE, "last PSN covered"},
		{false, false, true, 20, SROCE_ACKW_COMPLETE, "covered and more"},
		{false, false, true, 13, SROCE_ACKW_STOP, "last PSN not covered"},
		{false, false, true, 10, SROCE_ACKW_STOP, "nothing of it covered"},
		{false, false, false, 20, SROCE_ACKW_STOP, "never sent"},
		{false, true, true, 10, SROCE_ACKW_STOP, "READ: ACK up to it"},
		{false, true, true, 11, SROCE_ACKW_LOST, "READ: ACK past it"},
		{false, true, true, 20, SROCE_ACKW_LOST, "READ: ACK far past"},
		{false, true, false, 20, SROCE_ACKW_STOP, "READ never sent"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_ack_wqe_fate(c.done, c.rd_atomic, c.sent, 10, 13,
					c.next),
			  c.want)
			<< c.why;
	// a WRITE whose PSNs wrap around
	EXPECT_EQ(sroce_ack_wqe_fate(false, false, true, 0xfffffe, 1, 2),
		  SROCE_ACKW_COMPLETE);
	EXPECT_EQ(sroce_ack_wqe_fate(false, false, true, 0xfffffe, 1, 0),
		  SROCE_ACKW_STOP);
}

// After an ACK of 20 was taken, the oldest unacknowledged PSN is 21 unless
// a READ or atomic stopped the ACK short: its response was lost.
TEST(CompleterAck, AnAckStoppedShortImpliesALostResponse)
{
	EXPECT_FALSE(sroce_ack_implies_nak(20, 21));
	EXPECT_TRUE(sroce_ack_implies_nak(20, 15));
	EXPECT_FALSE(sroce_ack_implies_nak(0xffffff, 0));
}

// A responder NAKs a gap once and then waits for the PSN it asked for: a
// second NAK of the same oldest PSN, with nothing acknowledged in between,
// is a copy or a forgery and does not send the window again. Progress, or
// a NAK of a later PSN, is a new gap.
TEST(CompleterAck, ANakIsGoneBackForOnce)
{
	EXPECT_FALSE(sroce_nak_repeats(false, 0, 0));
	EXPECT_FALSE(sroce_nak_repeats(false, 40, 40));
	EXPECT_TRUE(sroce_nak_repeats(true, 40, 40));
	EXPECT_FALSE(sroce_nak_repeats(true, 40, 41));
	EXPECT_TRUE(sroce_nak_repeats(true, 0xffffff, 0xffffff));
	EXPECT_FALSE(sroce_nak_repeats(true, 0xffffff, 0));
}

// The retry budget: each ACK timeout takes one, none left is an error;
// 7 is seven retries, not "for ever" (that is the RNR retry count's 7).
TEST(CompleterRetry, EachTimeoutTakesOneSevenIsSeven)
{
	uint8_t budget = 7;
	int retries = 0;

	while (sroce_retry_take(&budget))
		retries++;
	EXPECT_EQ(retries, 7);
	EXPECT_EQ(budget, 0);
	EXPECT_FALSE(sroce_retry_take(&budget));
	EXPECT_EQ(budget, 0);
}

// The RNR retry budget: each RNR NAK takes one, none left is an error, and
// 7 never runs out.
TEST(CompleterRnr, SevenRetriesForEver)
{
	uint8_t budget = 2;

	EXPECT_TRUE(sroce_rnr_retry_take(&budget));
	EXPECT_EQ(budget, 1);
	EXPECT_TRUE(sroce_rnr_retry_take(&budget));
	EXPECT_EQ(budget, 0);
	EXPECT_FALSE(sroce_rnr_retry_take(&budget));
	EXPECT_EQ(budget, 0);

	budget = 7;
	for (int i = 0; i < 100; i++)
		EXPECT_TRUE(sroce_rnr_retry_take(&budget));
	EXPECT_EQ(budget, 7);
}

// A READ's responses carry one MTU each, the last the rest; byte off comes
// in the response with PSN first + off / MTU.
TEST(CompleterRead, ResponsesCarryOneMtuTheLastTheRest)
{
	EXPECT_EQ(sroce_read_resp_psn(10, 0, kMtu), 10u);
	EXPECT_EQ(sroce_read_resp_psn(10, kMtu - 1, kMtu), 10u);
	EXPECT_EQ(sroce_read_resp_psn(10, 3 * kMtu, kMtu), 13u);
	EXPECT_EQ(sroce_read_resp_psn(0xffffff, kMtu, kMtu), 0u);

	struct {
		sroce_op_pos pos;
		uint32_t len, resid;
		bool want;
		const char *why;
	} cases[] = {
		{SROCE_POS_FIRST, kMtu, 3 * kMtu, true, "FIRST of one MTU"},
		{SROCE_POS_FIRST, kMtu - 1, 3 * kMtu, false, "short FIRST"},
		{SROCE_POS_MIDDLE, kMtu, 2 * kMtu, true, "MIDDLE of one MTU"},
		{SROCE_POS_MIDDLE, 100, 2 * kMtu, false, "short MIDDLE"},
		{SROCE_POS_MIDDLE, kMtu + 1, 3 * kMtu, false, "MIDDLE over the MTU"},
		{SROCE_POS_LAST, 100, 100, true, "LAST with the rest"},
		{SROCE_POS_LAST, 99, 100, false, "LAST short of the rest"},
		{SROCE_POS_LAST, kMtu, 2 * kMtu, false, "LAST with rest to come"},
		{SROCE_POS_ONLY, 0, 0, true, "ONLY of a zero-byte READ"},
		{SROCE_POS_ONLY, 10, 5, false, "more than was asked for"},
		{SROCE_POS_ONLY, kMtu + 1, kMtu + 1, false, "ONLY over the MTU"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_read_resp_len_ok(c.pos, c.len, c.resid, kMtu),
			  c.want)
			<< c.why;
}

// Awaiting response 12 of a READ, with 20 the next PSN to send: a later
// response that was sent means 12 was lost - ask again from it, once; an
// earlier one, or one never sent, is no reason to.
TEST(CompleterRead, AGapInTheResponsesAsksAgainOnce)
{
	struct {
		uint32_t psn;
		bool asked;
		uint32_t asked_psn;
		bool want;
		const char *why;
	} cases[] = {
		{13, false, 0, true, "the next response came first"},
		{19, false, 0, true, "a later response came"},
		{13, true, 12, false, "asked again from 12 already"},
		{13, true, 11, true, "asked from another PSN before"},
		{11, false, 0, false, "a duplicate of an earlier response"},
		{20, false, 0, false, "a PSN never sent"},
		{25, false, 0, false, "far beyond what was sent"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_read_resp_gap(c.psn, 12, 20, c.asked,
					      c.asked_psn),
			  c.want)
			<< c.why;
}

// Awaiting response 12 of a READ whose last response is 20 (8 after it): one
// that comes ahead is put in place at once if the bitmap reaches it, it is
// not there already and its position is the one a stream gives its PSN (a
// MIDDLE before the READ's last PSN, the LAST at it: the requester only asks
// from the awaited response, so no FIRST or ONLY is ever ahead of it).
TEST(CompleterRead, AResponseAheadIsPlacedOnce)
{
	const sroce_op_pos M = SROCE_POS_MIDDLE, L = SROCE_POS_LAST;
	struct {
		sroce_op_pos pos;
		uint32_t d;
		uint64_t have;
		bool want;
		const char *why;
	} cases[] = {
		{M, 1, 0, true, "the one after the awaited one"},
		{L, 8, 0, true, "the READ's last"},
		{M, 3, 0x3, true, "after two in place"},
		{M, 2, 0x2, false, "in place already (a duplicate)"},
		{M, 0, 0, false, "the awaited one is not ahead"},
		{L, 9, 0, false, "past the READ's last response"},
		{SROCE_POS_FIRST, 1, 0, false, "a FIRST is never ahead"},
		{SROCE_POS_ONLY, 8, 0, false, "an ONLY is never ahead"},
		{L, 5, 0, false, "a LAST before the READ's last PSN"},
		{M, 8, 0, false, "a MIDDLE at the READ's last PSN"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_read_resp_ahead(c.pos, c.d, 8, c.have), c.want)
			<< c.why;
	EXPECT_TRUE(sroce_read_resp_ahead(M, SROCE_AHEAD_MAX, 1000, 0))
		<< "the bitmap's last bit";
	EXPECT_FALSE(sroce_read_resp_ahead(M, SROCE_AHEAD_MAX + 1, 1000, 0))
		<< "beyond the bitmap: dropped, asked for again later";
	EXPECT_FALSE(sroce_read_resp_ahead(M, SROCE_AHEAD_MAX, 1000, 1ULL << 63))
		<< "the bitmap's last bit, in place already";
}

// When the awaited response is placed, the run of responses right after it
// that were in place already is done with too, and the bitmap moves on to
// the new awaited PSN (the first one not in place).
TEST(CompleterRead, ThePlacedAwaitedOneTakesTheRunAfterIt)
{
	struct {
		uint64_t have;
		uint32_t run;
		uint64_t after;
		const char *why;
	} cases[] = {
		{0, 0, 0, "nothing ahead"},
		{0x1, 1, 0, "the next one"},
		{0x7, 3, 0, "three in a row"},
		{0xb, 2, 0x1, "two, a hole, one more"},
		{0x2, 0, 0x1, "a hole right after it"},
		{~0ULL, 64, 0, "the whole bitmap"},
		{~0ULL >> 1, 63, 0, "all but the last bit"},
		{1ULL << 63, 0, 1ULL << 62, "only the farthest"},
	};
	for (auto c : cases) {
		u64 have = c.have;

		EXPECT_EQ(sroce_ahead_run(&have), c.run) << c.why;
		EXPECT_EQ(have, c.after) << c.why;
	}
}

// Awaiting response 12, asked for again from 12: the READ's last response
// has come twice since (the old stream's, then the re-request's) and 12 is
// still missing - ask once more; not after the first, not before the
// re-request went out, not twice, not for a hole never asked for.
TEST(CompleterRead, TheReRequestsLastResponsePastTheHoleAsksOnceMore)
{
	struct {
		uint32_t lasts;
		bool sent, asked;
		uint32_t asked_psn;
		bool reasked;
		bool want;
		const char *why;
	} cases[] = {
		{2, true, true, 12, false, true, "the second last response, 12 missing"},
		{3, true, true, 12, false, true, "a later last response"},
		{1, true, true, 12, false, false, "only the old stream's last yet"},
		{2, false, true, 12, false, false, "the re-request not sent yet"},
		{2, true, true, 12, true, false, "asked once more already"},
		{2, true, false, 0, false, false, "never asked (the gap rule asks)"},
		{2, true, true, 11, false, false, "asked for another PSN"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_read_resp_reask(c.lasts, c.sent, 12, c.asked,
						c.asked_psn, c.reasked),
			  c.want)
			<< c.why;
}

// The tracker applies those rules to the READ as its responses come, each
// ask once: awaiting 12 of a READ whose last response is 20, MTU 1024,
// 9 KiB still missing (12 to 19 full, 20 the last 1 KiB), 21 next to send.
struct ReadTrack {
	sroce_read_track t{};
	sroce_read_ahead r{};

	void resp(uint32_t psn, sroce_op_pos pos, uint32_t len = 1024,
		  bool sent = true)
	{
		r = sroce_read_track_ahead(&t, psn, pos, len, 12, 20, 9 * 1024,
					   1024, 21, sent);
		if (r.place)
			sroce_read_track_placed(&t, r.d);
	}
};

TEST(CompleterRead, TheTrackerAsksOncePerGapAndOnceMoreAfterTheLast)
{
	const sroce_op_pos M = SROCE_POS_MIDDLE, L = SROCE_POS_LAST;
	ReadTrack rt;

	rt.resp(13, M);
	EXPECT_TRUE(rt.r.ask) << "13 before 12: 12 was lost, ask again";
	EXPECT_TRUE(rt.r.place) << "13 fits where it belongs: placed now";
	EXPECT_EQ(rt.r.d, 1u);
	rt.resp(14, M);
	EXPECT_FALSE(rt.r.ask) << "the same gap: asked already";
	EXPECT_TRUE(rt.r.place);
	rt.resp(14, M);
	EXPECT_FALSE(rt.r.place) << "14 again: a duplicate";
	rt.resp(20, L, 1024);
	EXPECT_FALSE(rt.r.ask) << "the old stream's last: the re-request may still fill 12";
	EXPECT_TRUE(rt.r.place);
	rt.resp(20, L, 1024, false);
	EXPECT_FALSE(rt.r.ask) << "the re-request not sent yet";
	rt.resp(20, L, 1024);
	EXPECT_TRUE(rt.r.ask) << "the re-request's last came and 12 is still missing: once more";
	EXPECT_FALSE(rt.r.place) << "20 in place already";
	rt.resp(20, L, 1024);
	EXPECT_FALSE(rt.r.ask) << "only once more";
	EXPECT_EQ(sroce_read_track_took(&rt.t), 2u) << "12 placed: 13 and 14 taken with it";

	sroce_read_track_rewound(&rt.t);
	rt.resp(16, M);
	EXPECT_TRUE(rt.r.ask) << "after a rewind a gap is asked for afresh";
}

TEST(CompleterRead, TheTrackerPlacesOnlyWhatFits)
{
	const sroce_op_pos M = SROCE_POS_MIDDLE, L = SROCE_POS_LAST;
	struct {
		uint32_t psn;
		sroce_op_pos pos;
		uint32_t len;
		bool place;
		const char *why;
	} cases[] = {
		{13, M, 1024, true, "a full MIDDLE ahead"},
		{13, M, 1000, false, "a short MIDDLE"},
		{20, L, 1024, true, "the LAST with the READ's last KiB"},
		{20, L, 512, false, "a LAST of the wrong length"},
		{21, L, 1024, false, "past the READ's last response"},
		{12, M, 1024, false, "the awaited one is not ahead"},
		{11, M, 1024, false, "an earlier one"},
	};
	for (auto c : cases) {
		ReadTrack rt;

		rt.resp(c.psn, c.pos, c.len);
		EXPECT_EQ(rt.r.place, c.place) << c.why;
	}
}

// Another READ awaited: what was in place was the last one's.
TEST(CompleterRead, TheTrackerForgetsAnotherREADsResponses)
{
	ReadTrack rt;

	sroce_read_track_at(&rt.t, 3);
	rt.resp(13, SROCE_POS_MIDDLE);
	sroce_read_track_at(&rt.t, 3);
	EXPECT_EQ(rt.t.have, 1u) << "the same READ keeps them";
	sroce_read_track_at(&rt.t, 4);
	EXPECT_EQ(rt.t.have, 0u) << "another READ starts afresh";
	rt.resp(13, SROCE_POS_MIDDLE);
	sroce_read_track_done(&rt.t);
	EXPECT_EQ(rt.t.have, 0u) << "a completed READ leaves nothing ahead";
}

} // namespace
