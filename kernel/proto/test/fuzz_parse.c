// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target for the receive-side entry points: sroce_pkt_parse() on
 * the input as a UDP payload and as the payload of an IP/UDP packet, and
 * the ICRC on the input as an IP packet. Beyond "no crash, no OOB read"
 * (ASan, UBSan) it checks that an accepted packet's lengths add up and that
 * rebuilding its headers reproduces the input bytes outside reserved fields.
 */
#include <stdlib.h>
#include <string.h>

#include "sroce_hdr.h"
#include "sroce_icrc.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

/* Bits of header byte @i that the builder reproduces (reserved are not). */
static u8 covered_bits(const struct sroce_opcode_info *info, u32 i)
{
	if (i == 4)
		return 0xc0;		/* FECN, BECN; resv6 */
	if (i == 8)
		return 0x80;		/* AckReq; resv7 */
	if ((info->hdrs & SROCE_HDR_DETH) && i == SROCE_BTH_LEN + 4)
		return 0;		/* DETH resv8 */
	/* XRCETH resv8: XRC carries no DETH, the XRCETH follows the BTH. */
	if ((info->hdrs & SROCE_HDR_XRCETH) && i == SROCE_BTH_LEN)
		return 0;
	if ((info->hdrs & SROCE_HDR_CNP_RSVD) && i >= SROCE_BTH_LEN)
		return 0;
	return 0xff;
}

static void fuzz_parse(const u8 *p, u32 len)
{
	u8 out[SROCE_MAX_HDR_LEN];
	struct sroce_pkt pkt, again;
	enum sroce_parse_err e;
	u32 i, n;

	e = sroce_pkt_parse(p, len, &pkt);
	CHECK((unsigned int)e < SROCE_PARSE_ERR_COUNT);
	CHECK(sroce_parse_err_name(e)[0] != '?');
	if (e != SROCE_PARSE_OK)
		return;

	CHECK(pkt.info && pkt.info == sroce_opcode_info(p[0]));
	CHECK(pkt.hdr_len == pkt.info->hdr_len);
	CHECK(pkt.hdr_len + pkt.payload_len + pkt.bth.pad + SROCE_ICRC_LEN ==
	      len);
	CHECK(pkt.payload_len <= SROCE_MAX_PAYLOAD);
	CHECK(pkt.info->payload || !pkt.payload_len);

	n = sroce_pkt_build_hdrs(out, sizeof(out), &pkt);
	CHECK(n == pkt.hdr_len);
	for (i = 0; i < n; i++) {
		u8 m = covered_bits(pkt.info, i);

		CHECK((out[i] & m) == (p[i] & m));
		CHECK(!(out[i] & ~m));
	}

	/* The rebuilt headers plus the original tail parse identically. */
	if (len <= 8192) {
		u8 *copy = malloc(len);

		CHECK(copy);
		memcpy(copy, p, len);
		memcpy(copy, out, n);
		CHECK(sroce_pkt_parse(copy, len, &again) == SROCE_PARSE_OK);
		CHECK(again.info == pkt.info);
		CHECK(again.payload_len == pkt.payload_len);
		CHECK(again.bth.psn == pkt.bth.psn);
		CHECK(again.bth.dqpn == pkt.bth.dqpn);
		CHECK(again.reth.len == pkt.reth.len);
		CHECK(again.xrc_srqn == pkt.xrc_srqn);
		CHECK(again.aeth.syndrome == pkt.aeth.syndrome);
		free(copy);
	}
}

static void fuzz_icrc(const u8 *p, u32 len)
{
	enum sroce_icrc_check c = sroce_icrc_verify(p, len);
	u32 icrc, crc, ip_len, hdrs, cut;
	bool v6;

	/* malformed exactly when its headers are not an ICRC's */
	CHECK((c == SROCE_ICRC_MALFORMED) ==
	      (len < SROCE_ICRC_LEN ||
	       !sroce_icrc_packet(p, len - SROCE_ICRC_LEN, &icrc)));
	if (!sroce_icrc_packet(p, len, &icrc))
		return;
	v6 = (p[0] >> 4) == 6;
	ip_len = v6 ? SROCE_IPV6_HDR_LEN : SROCE_IPV4_HDR_LEN;
	hdrs = ip_len + SROCE_UDP_HDR_LEN + SROCE_BTH_LEN;
	CHECK(len >= hdrs);
	cut = hdrs + (len - hdrs) / 3;
	crc = sroce_icrc_hdrs(p, v6, p + ip_len, p + ip_len + 8);
	crc = sroce_icrc_update(crc, p + hdrs, cut - hdrs);
	crc = sroce_icrc_update(crc, p + cut, len - cut);
	CHECK(sroce_icrc_final(crc) == icrc);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	u32 len = size > 65535 ? 65535 : (u32)size;
	u32 off;

	fuzz_parse(data, len);
	fuzz_icrc(data, len);
	if (!len)
		return 0;
	off = ((data[0] >> 4) == 6 ? SROCE_IPV6_HDR_LEN : SROCE_IPV4_HDR_LEN) +
	      SROCE_UDP_HDR_LEN;
	if (len >= off)
		fuzz_parse(data + off, len - off);
	return 0;
}
