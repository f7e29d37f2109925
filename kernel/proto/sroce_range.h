/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Validators for remote addresses taken from RETH and AtomicETH. Both the
 * VA and the length come from the network, so every sum is checked for
 * wrap-around before it is compared: "va + len <= end" alone accepts a
 * huge len that wraps to a small end.
 */
#ifndef SROCE_RANGE_H
#define SROCE_RANGE_H

#include "sroce_proto.h"

/* IB maximum message size (2^31 bytes; RXE_MAX_MSG_SIZE as well). */
#define SROCE_MAX_MSG_SIZE	0x80000000u
/* Atomic operands are naturally aligned u64s (rxe: ERR_MISALIGNED_ATOMIC). */
#define SROCE_ATOMIC_SIZE	8

/*
 * True if [va, va + len) lies inside the region [start, start + length).
 * False if either range wraps past 2^64. A zero-length access is inside if
 * va is in [start, start + length].
 */
static inline bool sroce_range_within(u64 start, u64 length, u64 va, u64 len)
{
	if (start + length < start || va + len < va)
		return false;
	return va >= start && va + len <= start + length;
}

static inline bool sroce_atomic_aligned(u64 va)
{
	return !(va & (SROCE_ATOMIC_SIZE - 1));
}

static inline bool sroce_msg_len_ok(u64 len, u64 max_len)
{
	return len <= max_len && len <= SROCE_MAX_MSG_SIZE;
}

/* Packets a message of @len bytes needs at @mtu bytes each (>= 1). */
static inline u32 sroce_msg_pkts(u32 len, u32 mtu)
{
	if (!mtu || !len)
		return 1;
	return len / mtu + !!(len % mtu);
}

#endif /* SROCE_RANGE_H */
