// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// AETH syndromes, RNR timer table, local ACK timeout.
#include <gtest/gtest.h>

extern "C" {
#include "sroce_aeth.h"
}

TEST(Aeth, SyndromeEncoding)
{
	EXPECT_EQ(sroce_aeth_ack(0x1f), 0x1f);
	EXPECT_EQ(sroce_aeth_rnr_nak(0), 0x20);
	EXPECT_EQ(sroce_aeth_rnr_nak(31), 0x3f);
	EXPECT_EQ(sroce_aeth_nak(SROCE_NAK_PSN_SEQ_ERR), 0x60);
	EXPECT_EQ(sroce_aeth_nak(SROCE_NAK_INVALID_REQ), 0x61);
	EXPECT_EQ(sroce_aeth_nak(SROCE_NAK_REMOTE_ACCESS_ERR), 0x62);
	EXPECT_EQ(sroce_aeth_nak(SROCE_NAK_REMOTE_OP_ERR), 0x63);
	EXPECT_EQ(sroce_aeth_nak(SROCE_NAK_INVALID_RD_REQ), 0x64);
	EXPECT_EQ(sroce_aeth_ack(0xff), 0x1f);	// value masked to 5 bits

	for (int s = 0; s < 256; s++) {
		u8 syn = (u8)s;

		EXPECT_EQ(sroce_aeth_type(syn), (s >> 5) & 3);
		EXPECT_EQ(sroce_aeth_value(syn), s & 0x1f);
		if (!(s & 0x80)) {
			EXPECT_EQ(sroce_aeth_syndrome(sroce_aeth_type(syn),
						      sroce_aeth_value(syn)),
				  syn);
		}
	}
}

TEST(Aeth, RnrTimerTable)
{
	// IBTA RNR NAK timer field (ms * 100), code 0 = 655.36 ms.
	const u32 ms100[32] = { 65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48,
				64, 96, 128, 192, 256, 384, 512, 768, 1024,
				1536, 2048, 3072, 4096, 6144, 8192, 12288,
				16384, 24576, 32768, 49152 };

	for (u8 c = 0; c < 32; c++)
		EXPECT_EQ(sroce_rnr_timer_usec(c), ms100[c] * 10) << (int)c;
	// rxe_comp.c rnrnak_usec[25] says 61410; the spec value is 61.44 ms.
	EXPECT_EQ(sroce_rnr_timer_usec(25), 61440u);
	EXPECT_EQ(sroce_rnr_timer_usec(0x20 | 1), 10u);	// 5-bit field
}

TEST(Aeth, AckTimeout)
{
	EXPECT_EQ(sroce_ack_timeout_ns(0), 0u);
	EXPECT_EQ(sroce_ack_timeout_ns(1), 8192u);
	EXPECT_EQ(sroce_ack_timeout_ns(14), 67108864u);	// ~67 ms
	EXPECT_EQ(sroce_ack_timeout_ns(31), 4096ull << 31);
	EXPECT_EQ(sroce_ack_timeout_ns(31), 8796093022208ull);
	EXPECT_EQ(sroce_ack_timeout_ns(32), 4096ull << 31);
	EXPECT_EQ(sroce_ack_timeout_ns(255), 4096ull << 31);
	for (u8 n = 1; n < 31; n++)
		EXPECT_EQ(sroce_ack_timeout_ns(n + 1),
			  2 * sroce_ack_timeout_ns(n));
}
