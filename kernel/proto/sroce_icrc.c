// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ICRC computation. The masked headers are copied to a 60-byte stack buffer
 * and fed to the CRC in one call, as rxe does; payload is never copied.
 */
#include "sroce_icrc.h"
#include "sroce_hdr.h"

#define IPPROTO_UDP_NUM	17

u32 sroce_icrc_hdrs(const u8 *ip, bool ipv6, const u8 *udp, const u8 *bth)
{
	u8 h[SROCE_IPV6_HDR_LEN + SROCE_UDP_HDR_LEN + SROCE_BTH_LEN];
	u32 ip_len = ipv6 ? SROCE_IPV6_HDR_LEN : SROCE_IPV4_HDR_LEN;
	u8 *u = h + ip_len;
	u8 *b = u + SROCE_UDP_HDR_LEN;
	u32 i;

	for (i = 0; i < ip_len; i++)
		h[i] = ip[i];
	if (ipv6) {
		/* Traffic class and flow label: all but the version nibble. */
		h[0] |= 0x0f;
		h[1] = 0xff;
		h[2] = 0xff;
		h[3] = 0xff;
		h[7] = 0xff;		/* hop limit */
	} else {
		h[1] = 0xff;		/* TOS: DSCP + ECN */
		h[8] = 0xff;		/* TTL */
		h[10] = 0xff;		/* header checksum */
		h[11] = 0xff;
	}
	for (i = 0; i < SROCE_UDP_HDR_LEN; i++)
		u[i] = udp[i];
	u[6] = 0xff;			/* UDP checksum */
	u[7] = 0xff;
	for (i = 0; i < SROCE_BTH_LEN; i++)
		b[i] = bth[i];
	b[4] = 0xff;			/* FECN, BECN, resv6 */

	return sroce_crc32_le(SROCE_ICRC_SEED, h,
			      ip_len + SROCE_UDP_HDR_LEN + SROCE_BTH_LEN);
}

bool sroce_icrc_packet(const u8 *ip, u32 len, u32 *icrc)
{
	u32 ip_len, hdrs, crc;
	bool ipv6;

	if (!len)
		return false;
	switch (ip[0] >> 4) {
	case 4:
		if ((ip[0] & 0x0f) != SROCE_IPV4_HDR_LEN / 4)
			return false;
		ipv6 = false;
		ip_len = SROCE_IPV4_HDR_LEN;
		break;
	case 6:
		ipv6 = true;
		ip_len = SROCE_IPV6_HDR_LEN;
		break;
	default:
		return false;
	}
	hdrs = ip_len + SROCE_UDP_HDR_LEN + SROCE_BTH_LEN;
	if (len < hdrs)
		return false;
	if (ip[ipv6 ? 6 : 9] != IPPROTO_UDP_NUM)
		return false;

	crc = sroce_icrc_hdrs(ip, ipv6, ip + ip_len,
			      ip + ip_len + SROCE_UDP_HDR_LEN);
	crc = sroce_icrc_update(crc, ip + hdrs, len - hdrs);
	*icrc = sroce_icrc_final(crc);
	return true;
}

enum sroce_icrc_check sroce_icrc_verify(const u8 *ip, u32 len)
{
	u32 icrc;

	if (len < SROCE_ICRC_LEN ||
	    !sroce_icrc_packet(ip, len - SROCE_ICRC_LEN, &icrc))
		return SROCE_ICRC_MALFORMED;
	if (icrc != sroce_icrc_get(ip + len - SROCE_ICRC_LEN))
		return SROCE_ICRC_MISMATCH;
	return SROCE_ICRC_OK;
}
