/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 invariant CRC (Annex A17.3.3): CRC-32 over a pseudo-LRH of 8 bytes
 * of ones, then IP, UDP, BTH, extension headers, payload and pad, with every
 * field a router may rewrite forced to ones first (IPv4 TOS/TTL/checksum,
 * IPv6 traffic class/flow label/hop limit, UDP checksum, BTH FECN/BECN/resv6).
 * So CE marking on the path leaves the ICRC valid.
 *
 * Incremental, because the receive path walks non-linear skbs:
 *	crc = sroce_icrc_hdrs(ip, ipv6, udp, bth);
 *	crc = sroce_icrc_update(crc, ext_hdrs_payload_pad, n);	(repeat)
 *	icrc = sroce_icrc_final(crc);
 * and compare with sroce_icrc_get(trailer).
 */
#ifndef SROCE_ICRC_H
#define SROCE_ICRC_H

#include "sroce_proto.h"
#include "sroce_crc32.h"
#include "sroce_wire.h"

#define SROCE_IPV4_HDR_LEN	20
#define SROCE_IPV6_HDR_LEN	40
#define SROCE_UDP_HDR_LEN	8

/* CRC state after ~0 and the 8-byte pseudo-LRH: ~crc32(8 x 0xff). */
#define SROCE_ICRC_SEED		0xdebb20e3u

/*
 * Start an ICRC over the masked headers. @ip is a 20-byte IPv4 header
 * (RoCEv2 has no IP options) or a 40-byte IPv6 header (no extension
 * headers), @udp the 8-byte UDP header, @bth the 12-byte BTH. They need not
 * be contiguous. Nothing is written to the packet.
 */
u32 sroce_icrc_hdrs(const u8 *ip, bool ipv6, const u8 *udp, const u8 *bth);

static inline u32 sroce_icrc_update(u32 crc, const void *p, u32 len)
{
	return sroce_crc32_le(crc, p, len);
}

static inline u32 sroce_icrc_final(u32 crc)
{
	return ~crc;
}

/* The ICRC travels least-significant byte first (rxe, scapy). */
static inline u32 sroce_icrc_get(const u8 *p)
{
	return sroce_get_le32(p);
}

static inline void sroce_icrc_put(u8 *p, u32 icrc)
{
	sroce_put_le32(p, icrc);
}

/*
 * ICRC of a whole IP packet, @len bytes from the IP header up to but not
 * including the ICRC. IP and UDP length fields are covered as they are, not
 * interpreted. False if the packet is not IPv4 (IHL 5) or IPv6 carrying UDP
 * directly, or shorter than IP + UDP + BTH.
 */
bool sroce_icrc_packet(const u8 *ip, u32 len, u32 *icrc);

/* What a received packet's ICRC says (the receive path counts each). */
enum sroce_icrc_check {
	SROCE_ICRC_OK,		/* its trailing 4 bytes are its ICRC */
	SROCE_ICRC_MALFORMED,	/* not a packet sroce_icrc_packet() takes */
	SROCE_ICRC_MISMATCH,	/* corrupted, or not sent as RoCE */
};

/* Check the ICRC in the trailing 4 bytes of the @len-byte IP packet @ip. */
enum sroce_icrc_check sroce_icrc_verify(const u8 *ip, u32 len);

#endif /* SROCE_ICRC_H */
