// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * AETH tables. Credits: rdmavt/rc.c credit_table. RNR timer: IBTA Table 45
 * (via ib_verbs.h enum ib_rnr_timeout); note that rxe_comp.c rnrnak_usec[]
 * has 61410 for code 25, which is 61.44 ms in the spec.
 */
#include "sroce_aeth.h"

static const u16 sroce_credit_table[SROCE_CREDIT_INVALID] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
	384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768,
};

static const u32 sroce_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

bool sroce_aeth_syndrome_valid(u8 syndrome)
{
	if (syndrome & 0x80)
		return false;
	switch (sroce_aeth_type(syndrome)) {
	case SROCE_AETH_RESERVED:
		return false;
	case SROCE_AETH_NAK:
		return sroce_aeth_value(syndrome) <= SROCE_NAK_INVALID_RD_REQ;
	default:
		return true;
	}
}

u32 sroce_credits(u8 code)
{
	return code < SROCE_CREDIT_INVALID ? sroce_credit_table[code] : 0;
}

u8 sroce_credit_code(u32 credits)
{
	u8 lo = 0, hi = SROCE_CREDIT_INVALID - 1, mid;

	/* Binary search for the last entry <= credits; table[0] is 0. */
	while (lo < hi) {
		mid = (u8)((lo + hi + 1) / 2);
		if (sroce_credit_table[mid] <= credits)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

u32 sroce_rnr_timer_usec(u8 code)
{
	return sroce_rnr_usec[code & SROCE_AETH_VALUE_MASK];
}

u8 sroce_rnr_timer_code(u32 usec)
{
	u8 code;

	/* Codes 1..31 increase monotonically; code 0 is the longest. */
	for (code = 1; code < 32; code++)
		if (sroce_rnr_usec[code] >= usec)
			return code;
	return 0;
}
