// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RNR NAK timer table: IBTA Table 45 (via ib_verbs.h enum
 * ib_rnr_timeout); note that rxe_comp.c rnrnak_usec[] has 61410 for code
 * 25, which is 61.44 ms in the spec.
 */
#include "sroce_aeth.h"

static const u32 sroce_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

u32 sroce_rnr_timer_usec(u8 code)
{
	return sroce_rnr_usec[code & SROCE_AETH_VALUE_MASK];
}
