/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * 24-bit sequence arithmetic for PSNs and MSNs. Comparisons are modular with
 * a +-2^23 window, like rxe's psn_compare(): the shift puts bit 23 in the
 * sign bit, so "a is after b" survives the wrap from 0xffffff to 0.
 * The shifts are done unsigned; only the result is converted to s32, which
 * avoids undefined signed left shifts in host builds.
 */
#ifndef SROCE_PSN_H
#define SROCE_PSN_H

#include "sroce_proto.h"

#define SROCE_PSN_MASK		0xffffffu

static inline u32 sroce_psn_mask(u32 psn)
{
	return psn & SROCE_PSN_MASK;
}

static inline u32 sroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SROCE_PSN_MASK;
}

static inline u32 sroce_psn_sub(u32 psn, u32 n)
{
	return (psn - n) & SROCE_PSN_MASK;
}

/* a - b as a signed distance in [-2^23, 2^23). */
static inline s32 sroce_psn_diff(u32 a, u32 b)
{
	u32 d = ((a - b) & SROCE_PSN_MASK) << 8;

	return (s32)d / 256;
}

static inline bool sroce_psn_before(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) < 0;
}

static inline bool sroce_psn_after(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) > 0;
}

/*
 * Packets that come ahead of the awaited PSN and are placed at once (READ
 * responses at the requester, the rest of a SEND or WRITE at the
 * responder) are remembered in a bitmap: bit i set means PSN awaited + 1 + i
 * is in place. It reaches SROCE_AHEAD_MAX PSNs.
 */
#define SROCE_AHEAD_MAX 64

/* Is the PSN @d after the awaited one (1 <= @d <= SROCE_AHEAD_MAX) placed? */
static inline bool sroce_ahead_has(u64 have, u32 d)
{
	return d >= 1 && d <= SROCE_AHEAD_MAX && ((have >> (d - 1)) & 1);
}

/*
 * May the PSN @d after the awaited one be placed, with the message's (or
 * READ's) last PSN @last_d after it? Within the bitmap's reach, not past
 * the last PSN, and not in place already (a duplicate).
 */
static inline bool sroce_ahead_open(u64 have, u32 d, u32 last_d)
{
	return d >= 1 && d <= SROCE_AHEAD_MAX && d <= last_d &&
	       !sroce_ahead_has(have, d);
}

/* Is any PSN more than @d after the awaited one in place? */
static inline bool sroce_ahead_beyond(u64 have, u32 d)
{
	return d < SROCE_AHEAD_MAX && (have >> d);
}

/*
 * The awaited PSN and the @k after it are done with: the bits of those @k
 * in a bitmap of the PSNs after the awaited one (@bits: which were placed,
 * or which of them asked for something), and the bitmap moved on to the
 * PSN after them.
 */
static inline u64 sroce_ahead_consume(u64 *bits, u32 k)
{
	u64 done = k >= SROCE_AHEAD_MAX ? *bits : *bits & ((1ULL << k) - 1);

	*bits = k + 1 >= SROCE_AHEAD_MAX ? 0 : *bits >> (k + 1);
	return done;
}

/*
 * The awaited PSN has arrived: how many right after it were in place
 * already (they are done with too), and the bitmap moved on to the new
 * awaited PSN.
 */
static inline u32 sroce_ahead_run(u64 *have)
{
	u32 k = 0;

	while (k < SROCE_AHEAD_MAX && ((*have >> k) & 1))
		k++;
	sroce_ahead_consume(have, k);
	return k;
}

/* MSNs (AETH) are 24-bit counters with the same arithmetic. */
static inline u32 sroce_msn_inc(u32 msn)
{
	return sroce_psn_add(msn, 1);
}

#endif /* SROCE_PSN_H */
