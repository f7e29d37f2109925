/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce protocol core: kernel-independent RoCEv2 logic.
 *
 * Everything in proto/ is plain C with no kernel dependency beyond fixed-width
 * integer types, so the same sources build into sroce.ko and into the host
 * unit tests and fuzzers (user/ builds them with SROCE_PROTO_HOST defined).
 */
#ifndef SROCE_PROTO_H
#define SROCE_PROTO_H

#ifdef SROCE_PROTO_HOST
/* Host builds supply u8..u64 and bool from test/sroce_host_types.h. */
#include "sroce_host_types.h"
#else
#include <linux/types.h>
#endif

/*
 * Largest header overhead a RoCEv2 packet carrying a full path-MTU payload
 * can have on top of the payload: IPv6 (40) + UDP (8) + BTH (12) + the
 * largest extension-header set that travels with a payload (RETH 16 + ImmDt
 * 4, WRITE Only with immediate) + ICRC (4). The netdev MTU counts from the IP
 * header, so path MTU + this must fit in it.
 */
#define SROCE_MAX_PAYLOAD_HDR_LEN	(40 + 8 + 12 + 16 + 4 + 4)

/* IB MTU enumeration (IBTA): 1 = 256 ... 5 = 4096. 0 = none fits. */
enum sroce_ib_mtu {
	SROCE_IB_MTU_NONE = 0,
	SROCE_IB_MTU_256 = 1,
	SROCE_IB_MTU_512 = 2,
	SROCE_IB_MTU_1024 = 3,
	SROCE_IB_MTU_2048 = 4,
	SROCE_IB_MTU_4096 = 5,
};

/* Bytes of payload per packet for an IB MTU enum value, 0 if invalid. */
static inline u32 sroce_ib_mtu_bytes(unsigned int mtu)
{
	return (mtu >= SROCE_IB_MTU_256 && mtu <= SROCE_IB_MTU_4096) ?
		128u << mtu : 0;
}

/*
 * Largest IB MTU whose packets fit in a netdev MTU of @netdev_mtu bytes,
 * SROCE_IB_MTU_NONE if even 256 does not fit (RoCE needs IP MTU >= 340).
 */
static inline enum sroce_ib_mtu sroce_ib_mtu_for_netdev(u32 netdev_mtu)
{
	unsigned int m;

	if (netdev_mtu < SROCE_MAX_PAYLOAD_HDR_LEN)
		return SROCE_IB_MTU_NONE;
	for (m = SROCE_IB_MTU_4096; m >= SROCE_IB_MTU_256; m--)
		if (sroce_ib_mtu_bytes(m) <= netdev_mtu - SROCE_MAX_PAYLOAD_HDR_LEN)
			return (enum sroce_ib_mtu)m;
	return SROCE_IB_MTU_NONE;
}

#endif /* SROCE_PROTO_H */
