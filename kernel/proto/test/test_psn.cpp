// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// 24-bit PSN/MSN arithmetic at the wrap boundaries.
#include <gtest/gtest.h>

extern "C" {
#include "sroce_psn.h"
}

// The rxe formulation, on a 32-bit two's complement host.
static s32 rxe_psn_compare(u32 a, u32 b)
{
	return (s32)((a - b) << 8);
}

TEST(Psn, AddSubWrap)
{
	EXPECT_EQ(sroce_psn_add(0xffffff, 1), 0u);
	EXPECT_EQ(sroce_psn_add(0xfffffe, 5), 3u);
	EXPECT_EQ(sroce_psn_add(0, 0x1000000), 0u);
	EXPECT_EQ(sroce_psn_sub(0, 1), 0xffffffu);
	EXPECT_EQ(sroce_psn_sub(3, 5), 0xfffffeu);
	EXPECT_EQ(sroce_psn_mask(0x12345678), 0x345678u);
	EXPECT_EQ(sroce_msn_inc(0xffffff), 0u);
	EXPECT_EQ(sroce_msn_inc(41), 42u);
}

TEST(Psn, Diff)
{
	EXPECT_EQ(sroce_psn_diff(0, 0xffffff), 1);
	EXPECT_EQ(sroce_psn_diff(0xffffff, 0), -1);
	EXPECT_EQ(sroce_psn_diff(5, 0xfffffb), 10);
	EXPECT_EQ(sroce_psn_diff(0x7fffff, 0), 0x7fffff);
	EXPECT_EQ(sroce_psn_diff(0x800000, 0), -0x800000);
	EXPECT_EQ(sroce_psn_diff(0, 0x800000), -0x800000);
	EXPECT_EQ(sroce_psn_diff(0, 0x7fffff), -0x7fffff);
	EXPECT_EQ(sroce_psn_diff(123, 123), 0);
	// Upper bits of the inputs are ignored.
	EXPECT_EQ(sroce_psn_diff(0xff000001, 0xab000000), 1);
}

TEST(Psn, MatchesRxeSign)
{
	const u32 pts[] = { 0, 1, 2, 0x7ffffe, 0x7fffff, 0x800000, 0x800001,
			    0xfffffe, 0xffffff, 0x123456 };

	for (u32 a : pts)
		for (u32 b : pts) {
			s32 r = rxe_psn_compare(a, b);

			EXPECT_EQ(sroce_psn_diff(a, b), r / 256) << a << " " << b;
			EXPECT_EQ(sroce_psn_before(a, b), r < 0);
			EXPECT_EQ(sroce_psn_after(a, b), r > 0);
		}
}

// The awaited PSN and k after it are done: the bits of those k come back
// (which of them asked for an ACK, say), and the bitmap moves past them.
TEST(PsnAhead, ConsumedRunAndTheRestMovedOn)
{
	struct {
		uint64_t bits;
		uint32_t k;
		uint64_t done, after;
	} cases[] = {
		{0xb, 2, 0x3, 0x1},		// two done; bit 3 is now bit 0
		{0xb, 0, 0x0, 0x5},		// only the awaited one
		{~0ULL, 64, ~0ULL, 0},		// the whole bitmap
		{~0ULL, 63, ~0ULL >> 1, 0},	// all but the last bit, then past it
	};
	for (auto c : cases) {
		u64 bits = c.bits;

		EXPECT_EQ(sroce_ahead_consume(&bits, c.k), c.done) << c.k;
		EXPECT_EQ(bits, c.after) << c.k;
	}
	EXPECT_TRUE(sroce_ahead_open(0, 1, 1));
	EXPECT_FALSE(sroce_ahead_open(0, 0, 5)) << "the awaited one is not ahead";
	EXPECT_FALSE(sroce_ahead_open(0, 6, 5)) << "past the last PSN";
	EXPECT_FALSE(sroce_ahead_open(0, 65, 100)) << "past the bitmap";
	EXPECT_FALSE(sroce_ahead_open(0x2, 2, 5)) << "in place already";
}
