// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Go-back-N beyond the IBTA minimum (sroce_gbn.h): how long a requester
// waits after each timeout, how far it may run ahead after one, and which
// packets ask for an ACK.
#include <initializer_list>
#include <utility>

#include <gtest/gtest.h>

extern "C" {
#include "sroce_gbn.h"
}

namespace {

constexpr uint64_t kBase10 = 4096ull << 10; // IBTA value for timeout 10 (~4.2 ms)

// The first wait is the IBTA value: 4.096 us x 2^timeout.
TEST(GbnRto, NoBackoffIsTheIbtaValue)
{
	EXPECT_EQ(sroce_rto_ns(10, 0), kBase10);
	EXPECT_EQ(sroce_rto_ns(14, 0), 4096ull << 14);
}

// Timeout 0 means no timer, whatever the backoff.
TEST(GbnRto, TimeoutZeroStaysDisabled)
{
	for (uint8_t b = 0; b < 8; b++)
		EXPECT_EQ(sroce_rto_ns(0, b), 0u);
}

// Each consecutive timeout doubles the wait; the wait stays at its
// largest after that.
TEST(GbnRto, DoublesPerConsecutiveTimeout)
{
	EXPECT_EQ(sroce_rto_ns(10, 1), 2 * kBase10);
	EXPECT_EQ(sroce_rto_ns(10, 2), 4 * kBase10);
	EXPECT_EQ(sroce_rto_ns(10, 3), 8 * kBase10);
	EXPECT_EQ(sroce_rto_ns(10, 7), 128 * kBase10);
	EXPECT_EQ(sroce_rto_ns(10, 9), 128 * kBase10);
}

// The wait that ends the doubling: timeout 15's (134 ms), except that
// every timeout may double three times (x8) and none more often than the
// retry count allows.
TEST(GbnRto, LargestWaitByTimeoutAndRetryCount)
{
	struct {
		uint8_t timeout, retry_cnt, want_max;
	} cases[] = {
		{8, 7, 7},  // 1 ms grows to 134 ms
		{10, 7, 5}, // 4 ms grows to 134 ms
		{12, 7, 3}, // 17 ms grows to 134 ms
		{13, 7, 3}, // 34 ms: x8 whatever the timeout
		{14, 7, 3}, // 67 ms
		{20, 7, 3},
		{8, 2, 2},  // never beyond the retry count
		{8, 0, 0},
		{14, 1, 1},
	};
	for (auto c : cases) {
		uint8_t b = 0;

		for (int i = 0; i < 10; i++)
			b = sroce_rto_backoff_next(b, c.timeout, c.retry_cnt);
		EXPECT_EQ(b, c.want_max) << "timeout " << int(c.timeout)
					 << " retry_cnt " << int(c.retry_cnt);
		EXPECT_EQ(sroce_rto_max_backoff(c.timeout, c.retry_cnt), c.want_max);
	}
}

// A retry count of n allows at most n doublings: the wait never exceeds
// the IBTA value x 2^retry_cnt the user asked for.
TEST(GbnRto, BackoffNeverBeyondTheRetryCount)
{
	for (uint8_t timeout = 1; timeout < 32; timeout++) {
		for (uint8_t retry_cnt = 0; retry_cnt < 8; retry_cnt++) {
			uint8_t b = 0;

			for (int i = 0; i < 10; i++) {
				b = sroce_rto_backoff_next(b, timeout, retry_cnt);
				EXPECT_LE(b, retry_cnt);
				EXPECT_LE(sroce_rto_ns(timeout, b),
					  sroce_rto_ns(timeout, 0) << retry_cnt);
			}
		}
	}
}

// The time a dead peer takes to be declared dead (retry_cnt 7: eight
// timeouts, in IBTA values): 8 without backoff; 47 for timeout 12 and
// longer; more for shorter timeouts, never more than 255.
TEST(GbnRto, TimeToRetryExceeded)
{
	struct {
		uint8_t timeout;
		uint64_t want;
	} cases[] = {{8, 255}, {9, 191}, {10, 127}, {11, 79}, {12, 47}, {14, 47}};
	for (auto c : cases) {
		uint64_t total = 0;
		uint8_t b = 0;

		for (int i = 0; i < 8; i++) {
			total += sroce_rto_ns(c.timeout, b);
			b = sroce_rto_backoff_next(b, c.timeout, 7);
		}
		EXPECT_EQ(total, c.want * sroce_rto_ns(c.timeout, 0))
			<< "timeout " << int(c.timeout);
	}
}

// After a timeout the window restarts small and doubles with each ACK that
// makes progress, back to the full window.
TEST(GbnWindow, GrowsBackToTheFullWindow)
{
	uint32_t w = SROCE_GBN_RESTART_WINDOW;
	int acks = 0;

	while (w < SROCE_GBN_MAX_WINDOW) {
		uint32_t n = sroce_gbn_window_grow(w);

		EXPECT_EQ(n, std::min<uint32_t>(2 * w, SROCE_GBN_MAX_WINDOW));
		w = n;
		acks++;
	}
	EXPECT_EQ(acks, 5);
	EXPECT_EQ(sroce_gbn_window_grow(SROCE_GBN_MAX_WINDOW), uint32_t(SROCE_GBN_MAX_WINDOW));
	EXPECT_EQ(sroce_gbn_window_grow(0), uint32_t(SROCE_GBN_RESTART_WINDOW));
}

// The requester sends new PSNs while fewer than a window of them are
// unacknowledged, and waits at the window's end; across the wrap too.
TEST(GbnWindow, FullAtTheWindowsEnd)
{
	struct {
		uint32_t next, oldest, window;
		bool full;
	} cases[] = {
		{100, 100, 16, false},		// nothing in flight
		{115, 100, 16, false},		// 15 in flight: one more may go
		{116, 100, 16, true},		// 16 in flight
		{117, 100, 16, true},		// beyond (the window shrank)
		{0x000005, 0xfffff6, 16, false}, // 15 in flight across the wrap
		{0x000006, 0xfffff6, 16, true},
		{90, 100, 16, false},		// acknowledged beyond what is next
		{100 + 511, 100, 512, false},
		{100 + 512, 100, 512, true},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_gbn_window_full(c.next, c.oldest, c.window), c.full)
			<< "next " << c.next << " oldest " << c.oldest
			<< " window " << c.window;
}

// Going back N after a timeout or a probe leaves at most a restart window
// in flight; a window that small already stays, and is no slow restart.
TEST(GbnWindow, RestartsSmallAfterATimeout)
{
	struct {
		uint32_t window, after;
		bool shrank;
	} cases[] = {
		{SROCE_GBN_MAX_WINDOW, SROCE_GBN_RESTART_WINDOW, true},
		{SROCE_GBN_RESTART_WINDOW + 1, SROCE_GBN_RESTART_WINDOW, true},
		{SROCE_GBN_RESTART_WINDOW, SROCE_GBN_RESTART_WINDOW, false},
		{4, 4, false},
	};
	for (auto c : cases) {
		uint32_t w = c.window;

		EXPECT_EQ(sroce_gbn_window_restart(&w), c.shrank) << c.window;
		EXPECT_EQ(w, c.after) << c.window;
	}
}

// After a packet is sent: the ACK timeout runs from the newest packet that
// asks for an ACK; what is resent while it runs (after a probe, a NAK, an
// implied NAK) leaves it where it is and times only a probe; nothing
// started it yet (or it fired: the timeout's own resend): it starts.
TEST(GbnTimer, AfterSendingAPacket)
{
	struct {
		bool ack_req, resent, rto_running;
		sroce_gbn_timer want;
		const char *why;
	} cases[] = {
		{true, false, true, SROCE_GBN_TIMER_RESTART, "a new packet asking for an ACK"},
		{false, false, true, SROCE_GBN_TIMER_KEEP, "a new packet in a burst"},
		{true, true, true, SROCE_GBN_TIMER_PROBE, "a resend asking for an ACK"},
		{false, true, true, SROCE_GBN_TIMER_KEEP, "a resend in a burst"},
		{true, false, false, SROCE_GBN_TIMER_RESTART, "the first packet"},
		{false, false, false, SROCE_GBN_TIMER_RESTART, "the first packet, no AckReq"},
		{true, true, false, SROCE_GBN_TIMER_RESTART, "the timeout's resend"},
		{false, true, false, SROCE_GBN_TIMER_RESTART, "the timeout's resend, no AckReq"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_gbn_timer_sent(c.ack_req, c.resent, c.rto_running),
			  c.want) << c.why;
}

// After a response: only progress pushes the ACK timeout back; with
// nothing outstanding, or waiting out an RNR NAK, neither timer runs.
TEST(GbnTimer, AfterAResponse)
{
	struct {
		bool idle, rnr_wait, progressed, fatal;
		sroce_gbn_timer want;
		const char *why;
	} cases[] = {
		{false, false, true, false, SROCE_GBN_TIMER_RESTART, "progress, more outstanding"},
		{false, false, false, false, SROCE_GBN_TIMER_KEEP, "a duplicate, stale or forged response"},
		{false, false, true, true, SROCE_GBN_TIMER_KEEP, "progress, then an error NAK"},
		{true, false, true, false, SROCE_GBN_TIMER_STOP, "everything acknowledged"},
		{true, false, false, true, SROCE_GBN_TIMER_STOP, "nothing left after an error"},
		{false, true, false, false, SROCE_GBN_TIMER_STOP, "an RNR NAK: the RNR timer's wait"},
		{false, true, true, false, SROCE_GBN_TIMER_STOP, "an RNR NAK after progress"},
	};
	for (auto c : cases)
		EXPECT_EQ(sroce_gbn_timer_heard(c.idle, c.rnr_wait, c.progressed,
						c.fatal), c.want) << c.why;
}

// A message's last packet asks for an ACK.
TEST(GbnAckReq, LastPacketOfAMessage)
{
	EXPECT_TRUE(sroce_gbn_ack_req(100, 100, 100, 512, 64, true));
	EXPECT_FALSE(sroce_gbn_ack_req(100, 100, 100, 512, 64, false));
}

// Every 64th packet of a long message does, counted from its first PSN.
TEST(GbnAckReq, EveryNthPacketOfALongMessage)
{
	for (uint32_t i = 0; i < 200; i++)
		EXPECT_EQ(sroce_gbn_ack_req(1000 + i, 1000, 1000 + i, 512, 64, false),
			  (i + 1) % 64 == 0)
			<< i;
}

// The packet that fills the window does, so that a burst of duplicates the
// peer already has still gets one answer.
TEST(GbnAckReq, PacketThatFillsTheWindow)
{
	// oldest unacknowledged 500, window 16: PSN 515 is the 16th in flight
	EXPECT_FALSE(sroce_gbn_ack_req(514, 400, 500, 16, 64, false));
	EXPECT_TRUE(sroce_gbn_ack_req(515, 400, 500, 16, 64, false));
}

// PSNs wrap at 2^24.
TEST(GbnAckReq, AcrossThePsnWrap)
{
	EXPECT_TRUE(sroce_gbn_ack_req(0x00003e, 0xffffff, 0xffffff, 512, 64, false));
	EXPECT_TRUE(sroce_gbn_ack_req(0x00000e, 0xfffff0, 0xffffff, 16, 64, false));
}

// Going back N: the oldest unacknowledged WQE (PSNs from 100, 4 MTUs)
// resumes where the peer's knowledge ends.
TEST(GbnResume, WhereTheOldestWqeResumes)
{
	constexpr uint32_t mtu = 1024, len = 4 * mtu;
	struct {
		bool is_read, rd_atomic;
		uint32_t resid, oldest, psn, offset;
		const char *why;
	} cases[] = {
		{false, false, 0, 100, 100, 0, "a SEND nothing of which arrived"},
		{false, false, 0, 102, 102, 2 * mtu, "a SEND of which 2 packets arrived"},
		{false, false, 0, 90, 100, 0, "acknowledged up to before it"},
		{true, true, len, 100, 100, 0, "a READ no response of which came"},
		{true, true, len - 2 * mtu, 100, 102, 2 * mtu,
		 "a READ of which 2 responses came: the rest only"},
		{true, true, len, 103, 100, 0, "a READ never restarts mid-way on an ACK"},
		{true, true, 0, 100, 100, 0, "a READ with nothing missing restarts whole"},
		{false, true, 0, 101, 100, 0, "an atomic restarts whole"},
	};
	for (auto c : cases) {
		auto r = sroce_gbn_resume(c.is_read, c.rd_atomic, len, c.resid,
					  100, c.oldest, mtu);
		EXPECT_EQ(r.psn, c.psn) << c.why;
		EXPECT_EQ(r.offset, c.offset) << c.why;
	}
	// across the 24-bit wrap
	auto r = sroce_gbn_resume(false, false, len, 0, 0xffffff, 1, mtu);
	EXPECT_EQ(r.psn, 1u);
	EXPECT_EQ(r.offset, 2 * mtu);
}

// The round-trip estimate (RFC 6298): the first sample sets srtt and half
// of it as the variation; later ones move srtt by 1/8 of the difference
// and the variation by 1/4 towards it.
TEST(GbnTlp, RoundTripEstimate)
{
	sroce_rtt r = {};

	sroce_rtt_sample(&r, 800);
	EXPECT_EQ(r.srtt_us, 800u);
	EXPECT_EQ(r.rttvar_us, 400u);
	sroce_rtt_sample(&r, 1600);
	EXPECT_EQ(r.srtt_us, 900u);	// 800 - 100 + 200
	EXPECT_EQ(r.rttvar_us, 500u);	// 400 - 100 + 800 / 4
	sroce_rtt r0 = {};
	sroce_rtt_sample(&r0, 0);
	EXPECT_EQ(r0.srtt_us, 1u) << "a sample of 0 counts as 1 us: measured";
}

// A probe waits 2 srtt + 4 rttvar, at least 10 ms and twice the last
// response gap, twice as long each time; none before a round trip was measured, after SROCE_TLP_MAX, with
// nothing or more than SROCE_TLP_INFLIGHT PSNs outstanding, or where it
// would not come well before the ACK timeout (the RoCE timeout RDMA CM
// sets, 18 + 1: 2.1 s, has room for all of them; a 17 ms timeout none), or
// while DCQCN paces the requester.
TEST(GbnTlp, ProbeWait)
{
	const u64 ms = 1000000, cm_rto = sroce_rto_ns(19, 0);
	sroce_rtt none = {}, lan = {5000, 1000}, fast = {50, 10};

	EXPECT_EQ(sroce_tlp_pto_ns(&none, 0, 1, 0, cm_rto, false), 0u) << "no round trip yet";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 0, cm_rto, false), 14 * ms);
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 1, 1, 0, cm_rto, false), 28 * ms);
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 2, 1, 0, cm_rto, false), 56 * ms);
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, SROCE_TLP_MAX, 1, 0, cm_rto, false), 0u)
		<< "at most SROCE_TLP_MAX probes without progress";
	EXPECT_EQ(sroce_tlp_pto_ns(&fast, 0, 1, 0, cm_rto, false), SROCE_TLP_MIN_NS)
		<< "TCP's floor";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 0, 0, cm_rto, false), 0u) << "nothing outstanding";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, SROCE_TLP_INFLIGHT, 0, cm_rto, false), 14 * ms)
		<< "the tail of a burst";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, SROCE_TLP_INFLIGHT + 1, 0, cm_rto, false), 0u)
		<< "a longer burst: the packets after a loss reveal it";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 0, sroce_rto_ns(12, 0), false), 0u)
		<< "a 17 ms ACK timeout: no room for a probe";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 0, 28 * ms, false), 14 * ms)
		<< "twice the wait fits in the timeout";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 0, 28 * ms - 1, false), 0u);
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 33 * ms, cm_rto, false), 66 * ms)
		<< "READ responses paced 33 ms apart: twice that";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 5 * ms, cm_rto, false), 14 * ms)
		<< "a gap shorter than the round trip's wait changes nothing";
	EXPECT_EQ(sroce_tlp_pto_ns(&lan, 0, 1, 0, cm_rto, true), 0u)
		<< "DCQCN slows the requester: the round trip is a congested queue's, no probe";
}


// The ACK timeout and the probe count only the time the host ran (a
// stalled host's timers fire late, before it received what waited): a
// wait runs in steps, and a late step counts as a step. The timer wheel's
// own lateness (a tick, an eighth of a long step) is not a stall.
//
// Runs a wait of @wait ticks whose steps fire @ran[i] ticks after they
// were armed; returns {the steps it took to run out (0: it did not), the
// late steps among them before the last}.
static std::pair<int, int> run_wait(u32 wait, std::initializer_list<u32> ran)
{
	struct sroce_wait w;
	u32 armed = sroce_wait_start(&w, wait), next = 0;
	int n = 0, stalled = 0;

	for (u32 r : ran) {
		n++;
		EXPECT_GE(r, armed) << "step " << n << " fires before it is due";
		switch (sroce_wait_step(&w, r, &next)) {
		case SROCE_WAIT_OVER:
			return {n, stalled};
		case SROCE_WAIT_STALLED:
			stalled++;
			/* fall through */
		case SROCE_WAIT_ON:
			armed = next;
			break;
		}
	}
	return {0, stalled};
}

// {steps to run out, late steps}
static std::pair<int, int> steps(int n, int stalled)
{
	return {n, stalled};
}

TEST(GbnStall, AWaitRunsInQuarterSteps)
{
	struct sroce_wait w;
	u32 next;

	// 67 ms ACK timeout at HZ 250: 17 ticks, steps of 5, the last of 2.
	EXPECT_EQ(sroce_wait_start(&w, 17), 5u);
	EXPECT_EQ(sroce_wait_step(&w, 5, &next), SROCE_WAIT_ON);
	EXPECT_EQ(next, 5u);
	EXPECT_EQ(sroce_wait_step(&w, 5, &next), SROCE_WAIT_ON);
	EXPECT_EQ(sroce_wait_step(&w, 5, &next), SROCE_WAIT_ON);
	EXPECT_EQ(next, 2u) << "the last step is what is left";
	EXPECT_EQ(sroce_wait_step(&w, 2, &next), SROCE_WAIT_OVER);
	// A 10 ms probe at HZ 250: 3 ticks, steps of one tick.
	EXPECT_EQ(sroce_wait_start(&w, 3), 1u);
	EXPECT_EQ(sroce_wait_start(&w, 0), 1u) << "a wait is at least a tick";
}

TEST(GbnStall, OnTimeStepsFindASilentPeerAfterTheWait)
{
	EXPECT_EQ(run_wait(17, {5, 5, 5, 2}), steps(4, 0));
	// The wheel fires a tick late: that tick was waited, and counts.
	EXPECT_EQ(run_wait(17, {6, 6, 6}), steps(3, 0));
	EXPECT_EQ(run_wait(3, {2, 2}), steps(2, 0)) << "probe, a tick late";
}

TEST(GbnStall, AStalledHostCountsOnlyTheTimeItRan)
{
	// A 75 ms stall (19 ticks) right after the wait started: the first
	// step counts 5 ticks, not 19, and 12 are still to run after it.
	EXPECT_EQ(run_wait(17, {19, 5, 5, 2}), steps(4, 1));
	// A 100 ms stall and a 1 s stall alike.
	EXPECT_EQ(run_wait(17, {25, 5, 5, 2}), steps(4, 1));
	EXPECT_EQ(run_wait(17, {250, 5, 5, 2}), steps(4, 1));
	// Two stalls, two steps that count as steps.
	EXPECT_EQ(run_wait(17, {25, 25, 5, 2}), steps(4, 2));
}

TEST(GbnStall, AStallAtTheEndOfAWaitLeavesAStepAfterIt)
{
	// The last step fires late: one step more is waited, for what may
	// wait in the receive queue...
	EXPECT_EQ(run_wait(17, {5, 5, 5, 20, 5}), steps(5, 1));
	// ...once per wait: a host late at every step still finds the peer
	// silent, after the wait plus at most one step (four steps of 5
	// ticks for a wait of 17).
	EXPECT_EQ(run_wait(17, {20, 20, 20, 20, 20, 20}), steps(4, 3))
		<< "the fourth is the timeout";
	// A probe's one-tick steps: late means by more than a tick.
	EXPECT_EQ(run_wait(3, {1, 1, 5, 1}), steps(4, 1));
}

TEST(GbnStall, TheWheelsSlackIsNotAStall)
{
	// RDMA CM's 2.1 s timeout at HZ 250: 537 ticks, steps of 135, on
	// the wheel's level 1 (8 ticks granularity): up to an eighth of the
	// step and a tick late is the wheel's (17 ticks; 11 for the last
	// step, of the 81 left); 18 is a stall.
	EXPECT_EQ(run_wait(537, {152, 152, 152, 92}), steps(4, 0));
	EXPECT_EQ(run_wait(537, {153, 135, 135, 132}), steps(4, 1));
	// The bottom of a level: a step of 63 ticks is on level 1 and may
	// fire 8 late; one of 504 on level 2, 64 late (the last steps: what
	// is left, 39 and 312 ticks, with their own slack).
	EXPECT_EQ(run_wait(252, {71, 71, 71, 44}), steps(4, 0));
	EXPECT_EQ(run_wait(252, {72, 63, 63, 63}), steps(4, 1));
	EXPECT_EQ(run_wait(2016, {568, 568, 568, 352}), steps(4, 0));
}

} // namespace
