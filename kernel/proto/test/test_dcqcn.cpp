// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// DCQCN arithmetic against the algorithm's equations, on deterministic event
// traces: rate after k CNPs, the alpha EWMA, the recovery curve (fast
// recovery, additive, hyper increase), the byte counter path, and the clamps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

extern "C" {
#include "sroce_dcqcn.h"
}

namespace {

constexpr u32 kLine = 10000000; // 10 Gbit/s in kbit/s
constexpr u64 kUs = 1000;

sroce_dcqcn_params defaults()
{
	sroce_dcqcn_params p;
	std::memset(&p, 0xa5, sizeof(p));
	sroce_dcqcn_params_default(&p);
	return p;
}

} // namespace

TEST(Dcqcn, KnobTableHasMlx5NamesAndDefaults)
{
	const struct {
		const char *name;
		u32 def;
	} want[] = {
		{"rpg_time_reset", 300},
		{"rpg_byte_reset", 32767},
		{"rpg_threshold", 1},
		{"rpg_ai_rate", 5},
		{"rpg_hai_rate", 50},
		{"rpg_max_rate", 0},
		{"rpg_gd", 11},
		{"rpg_min_dec_fac", 50},
		{"rpg_min_rate", 1},
		{"rate_to_set_on_first_cnp", 0},
		{"dce_tcp_g", 1019},
		{"dce_tcp_rtt", 1},
		{"initial_alpha_value", 1023},
		{"rate_reduce_monitor_period", 4},
		{"clamp_tgt_rate", 0},
		{"clamp_tgt_rate_after_time_inc", 1},
		{"min_time_between_cnps", 4},
		{"cnp_dscp", 48},
		{"cnp_802p_prio", 6},
		{"rp_enable", 1},
		{"np_enable", 1},
	};
	EXPECT_EQ(sroce_dcqcn_nknobs, sizeof(want) / sizeof(want[0]));
	auto p = defaults();
	for (auto &w : want) {
		const sroce_dcqcn_knob *k = sroce_dcqcn_knob_find(w.name);
		ASSERT_NE(k, nullptr) << w.name;
		EXPECT_EQ(k->def, w.def) << w.name;
		EXPECT_EQ(*sroce_dcqcn_knob_ptr(&p, k), w.def) << w.name;
		EXPECT_EQ(sroce_dcqcn_knob_check(k, k->def), 0) << w.name;
		EXPECT_EQ(sroce_dcqcn_knob_check(k, k->min), 0) << w.name;
		EXPECT_EQ(sroce_dcqcn_knob_check(k, k->max), 0) << w.name;
		if (k->min > 0) {
			EXPECT_NE(sroce_dcqcn_knob_check(k, k->min - 1), 0) << w.name;
		}
		EXPECT_NE(sroce_dcqcn_knob_check(k, k->max + 1), 0) << w.name;
	}
	EXPECT_EQ(sroce_dcqcn_knob_find("no_such_knob"), nullptr);
	// Every field of the struct is a knob (no field left at 0xa5a5a5a5).
	const u32 *f = reinterpret_cast<const u32 *>(&p);
	for (size_t i = 0; i < sizeof(p) / sizeof(u32); i++)
		EXPECT_NE(f[i], 0xa5a5a5a5u) << "field " << i << " has no knob";
}

TEST(Dcqcn, StartsUnlimitedAtLineRate)
{
	auto p = defaults();
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	EXPECT_EQ(rp.rc, kLine);
	EXPECT_EQ(rp.rt, kLine);
	EXPECT_FALSE(rp.limited);
	EXPECT_EQ(rp.alpha, 1023u);
	// Timer and byte events do nothing while unlimited.
	sroce_dcqcn_rp_timer(&rp, &p, 300 * kUs);
	sroce_dcqcn_rp_sent(&rp, &p, 1 << 20);
	EXPECT_EQ(rp.rc, kLine);
	EXPECT_FALSE(rp.limited);

	p.rpg_max_rate = 2000; // 2 Gbit/s caps the line
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	EXPECT_EQ(rp.rc, 2000000u);
	EXPECT_EQ(rp.max, 2000000u);
}

// RC <- RC (1 - alpha / 2) per CNP, alpha <- (1 - g) alpha + g per period
// with a CNP: a double-precision model of k CNPs spaced 50 us apart.
TEST(Dcqcn, RateAfterKCnpsFollowsTheEquations)
{
	auto p = defaults();
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	double rc = kLine, alpha = 1023.0 / 1024, g = 1019.0 / 1024;
	u64 t = 1000 * kUs;
	double alpha_t = 0; // start of the model's alpha period
	bool first = true;
	for (int k = 1; k <= 12; k++) {
		// alpha periods (1 us) elapsed since the last event: the first
		// had a CNP (except before the first CNP), the others none.
		double n = std::floor((static_cast<double>(t) - alpha_t) / 1000.0);
		if (first) {
			alpha = 1023.0 / 1024; // a new episode starts at initial alpha
			alpha_t = static_cast<double>(t);
			first = false;
		} else if (n >= 1) {
			alpha = g * alpha + (1 - g);
			alpha *= std::pow(g, n - 1);
			alpha_t += n * 1000.0;
		}
		ASSERT_TRUE(sroce_dcqcn_rp_cnp(&rp, &p, t)) << "CNP " << k;
		rc = std::max(rc * (1 - alpha / 2), rc * 0.5);
		rc = std::max(rc, 1000.0);
		EXPECT_NEAR(rp.rc, rc, rc * 0.01 + 2) << "after CNP " << k;
		EXPECT_NEAR(rp.alpha, alpha * 1024, 3) << "alpha at CNP " << k;
		EXPECT_TRUE(rp.limited);
		t += 50 * kUs;
	}
	// The first cut about halves the rate: alpha starts near 1.
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 10 * kUs);
	EXPECT_NEAR(rp.rc, kLine * (1 - 1023.0 / 2048), 2);
	EXPECT_EQ(rp.rt, kLine);
}

TEST(Dcqcn, OneCutPerMonitorPeriod)
{
	auto p = defaults(); // rate_reduce_monitor_period 4 us
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	EXPECT_TRUE(sroce_dcqcn_rp_cnp(&rp, &p, 100 * kUs));
	u32 after = rp.rc;
	EXPECT_FALSE(sroce_dcqcn_rp_cnp(&rp, &p, 101 * kUs));
	EXPECT_FALSE(sroce_dcqcn_rp_cnp(&rp, &p, 103 * kUs + 999));
	EXPECT_EQ(rp.rc, after);
	EXPECT_TRUE(sroce_dcqcn_rp_cnp(&rp, &p, 104 * kUs));
	EXPECT_LT(rp.rc, after);
	// Period 0: every CNP cuts.
	p.rate_reduce_monitor_period = 0;
	u32 before = rp.rc;
	EXPECT_TRUE(sroce_dcqcn_rp_cnp(&rp, &p, 104 * kUs));
	EXPECT_LT(rp.rc, before);
}

TEST(Dcqcn, AlphaDecaysWithoutCnpsAndLazilyOverManyPeriods)
{
	auto p = defaults();
	p.dce_tcp_rtt = 55; // 55 us periods, as in the paper
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0); // alpha 1023, CNP in the period
	const double g = 1019.0 / 1024;
	double a = 1023.0 / 1024;
	// One period with the CNP, then 99 without.
	sroce_dcqcn_rp_alpha(&rp, &p, 100 * 55 * kUs);
	a = g * a + (1 - g);
	a *= std::pow(g, 99);
	EXPECT_NEAR(rp.alpha, a * 1024, 2);
	EXPECT_FALSE(rp.cnp_in_period);
	// A very long idle time decays it to 0, in O(log n) steps.
	sroce_dcqcn_rp_alpha(&rp, &p, 1000000000000ull);
	EXPECT_EQ(rp.alpha, 0u);
	// Within a period nothing changes.
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	u32 a0 = rp.alpha;
	sroce_dcqcn_rp_alpha(&rp, &p, 54 * kUs);
	EXPECT_EQ(rp.alpha, a0);
	// g = 0: alpha is 1 after a period with a CNP, 0 after one without.
	p.dce_tcp_g = 0;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	sroce_dcqcn_rp_alpha(&rp, &p, 55 * kUs);
	EXPECT_EQ(rp.alpha, 1024u);
	sroce_dcqcn_rp_alpha(&rp, &p, 110 * kUs);
	EXPECT_EQ(rp.alpha, 0u);
}

// After a cut: F timer events of fast recovery (RC halfway to RT), then
// additive increase (RT += R_AI), and once both counters pass F, hyper
// increase (RT += R_HAI); back at the line rate the QP is unlimited.
TEST(Dcqcn, RecoveryCurve)
{
	auto p = defaults();
	p.rpg_threshold = 3;
	p.rpg_byte_reset = 1 << 20;
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	u32 rt = rp.rt;
	ASSERT_EQ(rt, kLine);
	u64 t = 0;
	// Fast recovery: 3 timer events, RT unchanged.
	for (int i = 0; i < 3; i++) {
		u32 rc = rp.rc;
		t += 300 * kUs;
		sroce_dcqcn_rp_timer(&rp, &p, t);
		EXPECT_EQ(rp.rt, rt) << "fast recovery " << i;
		EXPECT_EQ(rp.rc, rc + (rt - rc + 1) / 2) << "fast recovery " << i;
	}
	EXPECT_EQ(rp.t_stage, 3u);
	// A cut in between starts over.
	p.clamp_tgt_rate = 1;
	sroce_dcqcn_rp_cnp(&rp, &p, t + 1);
	EXPECT_EQ(rp.t_stage, 0u);
	EXPECT_EQ(rp.b_stage, 0u);
	rt = rp.rt;
	EXPECT_LT(rt, kLine) << "clamp_tgt_rate: RT takes RC before the cut";
	for (int i = 0; i < 3; i++) {
		t += 300 * kUs;
		sroce_dcqcn_rp_timer(&rp, &p, t);
	}
	// Additive increase: timer stage reached F, byte stage not.
	for (int i = 0; i < 4; i++) {
		u32 rc = rp.rc;
		t += 300 * kUs;
		sroce_dcqcn_rp_timer(&rp, &p, t);
		rt += 5000;
		EXPECT_EQ(rp.rt, rt) << "additive " << i;
		EXPECT_EQ(rp.rc, rc + (rt - rc + 1) / 2) << "additive " << i;
	}
	// Byte counter: 1 MiB per event; 4 events bring b_stage past F too.
	for (int i = 0; i < 4; i++) {
		sroce_dcqcn_rp_sent(&rp, &p, 1 << 20);
		rt += 5000;
	}
	EXPECT_EQ(rp.b_stage, 4u);
	EXPECT_EQ(rp.rt, rt);
	// Both above F: hyper increase.
	u32 rc = rp.rc;
	t += 300 * kUs;
	sroce_dcqcn_rp_timer(&rp, &p, t);
	rt += 50000;
	EXPECT_EQ(rp.rt, rt);
	EXPECT_EQ(rp.rc, rc + (rt - rc + 1) / 2);
	// Enough increases reach the line rate, and the QP is unlimited.
	for (int i = 0; i < 1000 && rp.limited; i++) {
		t += 300 * kUs;
		sroce_dcqcn_rp_timer(&rp, &p, t);
	}
	EXPECT_FALSE(rp.limited);
	EXPECT_EQ(rp.rc, kLine);
	EXPECT_EQ(rp.rt, kLine);
	EXPECT_EQ(rp.t_stage, 0u);
}

TEST(Dcqcn, TargetRateClamping)
{
	auto p = defaults(); // clamp_tgt_rate 0, after_time_inc 1
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	EXPECT_EQ(rp.rt, kLine);
	// A second cut with no timer increase in between: RT stays.
	sroce_dcqcn_rp_cnp(&rp, &p, 10 * kUs);
	EXPECT_EQ(rp.rt, kLine);
	// A timer increase, then a cut: RT takes RC first.
	sroce_dcqcn_rp_timer(&rp, &p, 300 * kUs);
	u32 rc = rp.rc;
	sroce_dcqcn_rp_cnp(&rp, &p, 310 * kUs);
	EXPECT_EQ(rp.rt, rc);
	// A byte counter increase does not clamp (only the timer does).
	p.rpg_byte_reset = 1000;
	sroce_dcqcn_rp_sent(&rp, &p, 1000);
	u32 rt = rp.rt;
	sroce_dcqcn_rp_cnp(&rp, &p, 320 * kUs);
	EXPECT_EQ(rp.rt, rt);
	// clamp_tgt_rate_after_time_inc 0: never.
	p.clamp_tgt_rate_after_time_inc = 0;
	sroce_dcqcn_rp_timer(&rp, &p, 620 * kUs);
	rt = rp.rt;
	sroce_dcqcn_rp_cnp(&rp, &p, 630 * kUs);
	EXPECT_EQ(rp.rt, rt);
}

TEST(Dcqcn, Clamps)
{
	auto p = defaults();
	sroce_dcqcn_rp rp;
	// Minimum rate: a storm of CNPs never goes below rpg_min_rate.
	p.rpg_min_rate = 100; // 100 Mbit/s
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	for (u64 t = 0; t < 10000 * kUs; t += 5 * kUs)
		sroce_dcqcn_rp_cnp(&rp, &p, t);
	EXPECT_EQ(rp.rc, 100000u);
	EXPECT_TRUE(rp.limited);
	// Minimum decrease factor: gd 10 would cut RC by alpha (~all of it);
	// min_dec_fac 50 keeps half.
	p = defaults();
	p.rpg_gd = 10;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	EXPECT_EQ(rp.rc, kLine / 2);
	p.rpg_min_dec_fac = 90;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	EXPECT_EQ(rp.rc, kLine / 10 * 9);
	// rate_to_set_on_first_cnp: the first CNP of an episode sets RC (and
	// RT) before cutting.
	p = defaults();
	p.rate_to_set_on_first_cnp = 1000; // 1 Gbit/s
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	EXPECT_EQ(rp.rt, 1000000u);
	EXPECT_NEAR(rp.rc, 1000000 * (1 - 1023.0 / 2048), 2);
	// The cap: increases never pass rpg_max_rate.
	p = defaults();
	p.rpg_max_rate = 3000;
	p.rpg_hai_rate = 100000;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	for (int i = 0; i < 100; i++) {
		sroce_dcqcn_rp_timer(&rp, &p, (u64)(i + 1) * 300 * kUs);
		EXPECT_LE(rp.rc, 3000000u);
		EXPECT_LE(rp.rt, 3000000u);
	}
	EXPECT_FALSE(rp.limited);
}

TEST(Dcqcn, ByteCounterWorkIsBounded)
{
	auto p = defaults();
	p.rpg_byte_reset = 64;
	p.rpg_ai_rate = 1;
	p.rpg_hai_rate = 1;
	p.clamp_tgt_rate = 1; // the second cut brings RT well below the line
	sroce_dcqcn_rp rp;
	sroce_dcqcn_rp_init(&rp, &p, kLine, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 0);
	sroce_dcqcn_rp_cnp(&rp, &p, 10 * kUs);
	sroce_dcqcn_rp_sent(&rp, &p, 0xffffffffu);
	EXPECT_TRUE(rp.limited);
	EXPECT_EQ(rp.b_stage, 64u); // at most 64 events per call
	EXPECT_LT(rp.bytes, 64u);
	sroce_dcqcn_rp_sent(&rp, &p, 63);
	EXPECT_EQ(rp.b_stage, 65u); // 63 + the carried remainder
}

TEST(Dcqcn, PacingAndCnpSpacing)
{
	EXPECT_EQ(sroce_dcqcn_tx_ns(1000000, 1500), 12000u); // 1 Gbit/s
	EXPECT_EQ(sroce_dcqcn_tx_ns(10000000, 1024), 820u);  // 819.2, rounded up
	EXPECT_EQ(sroce_dcqcn_tx_ns(1000, 125), 1000000u);   // 1 Mbit/s: 1 ms
	EXPECT_GT(sroce_dcqcn_tx_ns(0, 1), 0u);
	auto p = defaults(); // 4 us
	EXPECT_TRUE(sroce_dcqcn_np_may_send(&p, 0, 5));
	EXPECT_FALSE(sroce_dcqcn_np_may_send(&p, 1000, 4999));
	EXPECT_TRUE(sroce_dcqcn_np_may_send(&p, 1000, 5000));
	p.min_time_between_cnps = 0;
	EXPECT_TRUE(sroce_dcqcn_np_may_send(&p, 1000, 1000));
}

TEST(Dcqcn, PacerSpacesPacketsAndBoundsCatchUp)
{
	constexpr u32 k10M = 10000; // 10 Mbit/s: 4000 B take 3.2 ms
	constexpr u64 kPkt = 3200 * kUs;
	// Back to back on time: exactly one packet time apart.
	u64 next = sroce_dcqcn_pace_next(0, 0, k10M, 4000);
	EXPECT_EQ(next, kPkt);
	EXPECT_EQ(sroce_dcqcn_pace_next(next, next, k10M, 4000), 2 * kPkt);
	// Woken 5 ms late: the credit covers it, the schedule keeps its
	// phase (32 KiB at 10 Mbit/s is 26.2 ms).
	EXPECT_EQ(sroce_dcqcn_pace_next(next, next + 5000 * kUs, k10M, 4000),
		  2 * kPkt);
	// Idle for a second: at most 32 KiB of credit, so at most 8 more
	// packets go before the pacer holds the QP again.
	u64 now = 1000000 * kUs, due = 0;
	int sent = 0;
	next = kPkt;
	while ((s64)(next - now) <= 0 && sent < 100) {
		next = sroce_dcqcn_pace_next(next, now, k10M, 4000);
		sent++;
	}
	EXPECT_EQ(sent, 9); // the one due now, and 8 x 4000 B <= 32768 B
	due = now - sroce_dcqcn_tx_ns(k10M, SROCE_DCQCN_PACE_BURST_BYTES);
	EXPECT_EQ(next, due + 9 * kPkt);
	// A fast rate gets the 100 us floor: 32 KiB at 100 Gbit/s is 2.6 us.
	next = sroce_dcqcn_pace_next(0, 10000000, 100000000, 1000);
	EXPECT_EQ(next, 10000000 - SROCE_DCQCN_PACE_BURST_NS + 80);
}
