// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Opcode table, parser and builder tests.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "test_util.hpp"

namespace {

// BTH + extension header lengths per opcode, transcribed from rxe_opcode.c
// (RXE_BTH_BYTES + ...) independently of our table. XRC: the RC length plus
// the 4-byte XRCETH on requests (IB_EXT_XRC_BYTES in ib_pack.h), responses
// unchanged.
const std::map<int, int> kHdrLen = {
	{0x00, 12}, {0x01, 12}, {0x02, 12}, {0x03, 16}, {0x04, 12},
	{0x05, 16}, {0x06, 28}, {0x07, 12}, {0x08, 12}, {0x09, 16},
	{0x0a, 28}, {0x0b, 32}, {0x0c, 28}, {0x0d, 16}, {0x0e, 12},
	{0x0f, 16}, {0x10, 16}, {0x11, 16}, {0x12, 24}, {0x13, 40},
	{0x14, 40}, {0x16, 16}, {0x17, 16}, {0x1d, 28},
	{0xa0, 16}, {0xa1, 16}, {0xa2, 16}, {0xa3, 20}, {0xa4, 16},
	{0xa5, 20}, {0xa6, 32}, {0xa7, 16}, {0xa8, 16}, {0xa9, 20},
	{0xaa, 32}, {0xab, 36}, {0xac, 32}, {0xad, 16}, {0xae, 12},
	{0xaf, 16}, {0xb0, 16}, {0xb1, 16}, {0xb2, 24}, {0xb3, 44},
	{0xb4, 44}, {0xb6, 20}, {0xb7, 20}, {0xbd, 32},
	{0x20, 12}, {0x21, 12}, {0x22, 12}, {0x23, 16}, {0x24, 12},
	{0x25, 16}, {0x26, 28}, {0x27, 12}, {0x28, 12}, {0x29, 16},
	{0x2a, 28}, {0x2b, 32},
	{0x64, 20}, {0x65, 24},
	{0x81, 28},
};

u32 sum_hdrs(u16 h)
{
	u32 n = SROCE_BTH_LEN;

	if (h & SROCE_HDR_DETH)
		n += SROCE_DETH_LEN;
	if (h & SROCE_HDR_XRCETH)
		n += SROCE_XRCETH_LEN;
	if (h & SROCE_HDR_RETH)
		n += SROCE_RETH_LEN;
	if (h & SROCE_HDR_ATOMICETH)
		n += SROCE_ATOMICETH_LEN;
	if (h & SROCE_HDR_AETH)
		n += SROCE_AETH_LEN;
	if (h & SROCE_HDR_ATOMICACKETH)
		n += SROCE_ATOMICACKETH_LEN;
	if (h & SROCE_HDR_IMMDT)
		n += SROCE_IMMDT_LEN;
	if (h & SROCE_HDR_IETH)
		n += SROCE_IETH_LEN;
	if (h & SROCE_HDR_CNP_RSVD)
		n += SROCE_CNP_RSVD_LEN;
	return n;
}

// Parse from an exactly-sized heap copy so ASan flags any read past len.
enum sroce_parse_err parse(const bytes &b, struct sroce_pkt *pkt)
{
	std::unique_ptr<u8[]> p(new u8[b.size() ? b.size() : 1]);

	if (!b.empty())
		memcpy(p.get(), b.data(), b.size());
	return sroce_pkt_parse(p.get(), (u32)b.size(), pkt);
}

// A packet: BTH with opcode/pad, @ext extension bytes, @pl payload bytes,
// @pad pad bytes and a dummy ICRC.
bytes mk(u8 op, u32 ext, u32 pl, u8 pad)
{
	bytes b(SROCE_BTH_LEN + ext + pl + pad + SROCE_ICRC_LEN, 0);

	b[0] = op;
	b[1] = (u8)(pad << 4);
	b[2] = b[3] = 0xff;
	return b;
}

bytes mk_op(u8 op, u32 pl)
{
	return mk(op, sroce_opcode_info(op)->hdr_len - SROCE_BTH_LEN, pl,
		  sroce_pad_len(pl));
}

} // namespace

TEST(OpcodeTable, ExactlyTheSupportedOpcodes)
{
	for (int op = 0; op < 256; op++) {
		const struct sroce_opcode_info *info = sroce_opcode_info((u8)op);
		auto it = kHdrLen.find(op);

		if (it == kHdrLen.end()) {
			EXPECT_EQ(info, nullptr) << std::hex << op;
			continue;
		}
		ASSERT_NE(info, nullptr) << std::hex << op;
		EXPECT_EQ(info->hdr_len, it->second) << info->name;
		EXPECT_EQ(info->hdr_len, sum_hdrs(info->hdrs)) << info->name;
		EXPECT_LE(info->hdr_len, SROCE_MAX_HDR_LEN);
	}
}

TEST(OpcodeTable, Properties)
{
	const struct sroce_opcode_info *i;

	i = sroce_opcode_info(SROCE_OP_RC_SEND_ONLY);
	EXPECT_STREQ(i->name, "RC_SEND_ONLY");
	EXPECT_EQ(i->kind, SROCE_KIND_SEND);
	EXPECT_EQ(i->pos, SROCE_POS_ONLY);
	EXPECT_EQ(i->qpts, SROCE_QPT_RC);
	EXPECT_TRUE(i->payload);
	EXPECT_TRUE(i->request);

	i = sroce_opcode_info(SROCE_OP_RC_READ_RESP_MIDDLE);
	EXPECT_EQ(i->hdrs, 0);
	EXPECT_EQ(i->pos, SROCE_POS_MIDDLE);
	EXPECT_FALSE(i->request);
	EXPECT_TRUE(i->payload);

	i = sroce_opcode_info(SROCE_OP_RC_READ_REQ);
	EXPECT_EQ(i->hdrs, SROCE_HDR_RETH);
	EXPECT_FALSE(i->payload);
	EXPECT_TRUE(i->request);

	i = sroce_opcode_info(SROCE_OP_RC_ATOMIC_ACK);
	EXPECT_EQ(i->hdrs, SROCE_HDR_AETH | SROCE_HDR_ATOMICACKETH);
	EXPECT_EQ(i->kind, SROCE_KIND_ATOMIC_ACK);

	i = sroce_opcode_info(SROCE_OP_UC_WRITE_ONLY_IMM);
	EXPECT_EQ(i->hdrs, SROCE_HDR_RETH | SROCE_HDR_IMMDT);
	EXPECT_EQ(i->qpts, SROCE_QPT_UC);

	i = sroce_opcode_info(SROCE_OP_UD_SEND_ONLY_IMM);
	EXPECT_EQ(i->hdrs, SROCE_HDR_DETH | SROCE_HDR_IMMDT);
	EXPECT_EQ(i->qpts, SROCE_QPT_UD);

	i = sroce_opcode_info(SROCE_OP_RC_SEND_LAST_INV);
	EXPECT_EQ(i->hdrs, SROCE_HDR_IETH);
	EXPECT_EQ(i->pos, SROCE_POS_LAST);

	i = sroce_opcode_info(SROCE_OP_CNP);
	EXPECT_EQ(i->kind, SROCE_KIND_CNP);
	EXPECT_EQ(i->qpts, SROCE_QPT_RC | SROCE_QPT_UC | SROCE_QPT_UD |
			   SROCE_QPT_XRC);
	EXPECT_FALSE(i->payload);

	i = sroce_opcode_info(SROCE_OP_RC_ATOMIC_WRITE);
	EXPECT_STREQ(i->name, "RC_ATOMIC_WRITE");
	EXPECT_EQ(i->hdrs, SROCE_HDR_RETH);
	EXPECT_EQ(i->kind, SROCE_KIND_ATOMIC_WRITE);
	EXPECT_EQ(i->pos, SROCE_POS_ONLY);
	EXPECT_EQ(i->qpts, SROCE_QPT_RC & SROCE_ATOMIC_WRITE_QPTS);
	EXPECT_TRUE(i->payload);
	EXPECT_TRUE(i->request);

	i = sroce_opcode_info(SROCE_OP_XRC_WRITE_ONLY_IMM);
	EXPECT_STREQ(i->name, "XRC_WRITE_ONLY_IMM");
	EXPECT_EQ(i->hdrs, SROCE_HDR_XRCETH | SROCE_HDR_RETH | SROCE_HDR_IMMDT);
	EXPECT_EQ(i->qpts, SROCE_QPT_XRC);

	i = sroce_opcode_info(SROCE_OP_XRC_CMP_SWAP);
	EXPECT_EQ(i->hdrs, SROCE_HDR_XRCETH | SROCE_HDR_ATOMICETH);
	EXPECT_EQ(i->hdr_len, SROCE_MAX_HDR_LEN);

	i = sroce_opcode_info(SROCE_OP_XRC_ATOMIC_WRITE);
	EXPECT_EQ(i->hdrs, SROCE_HDR_XRCETH | SROCE_HDR_RETH);
	EXPECT_EQ(i->kind, SROCE_KIND_ATOMIC_WRITE);
	EXPECT_EQ(i->qpts, SROCE_QPT_XRC & SROCE_ATOMIC_WRITE_QPTS);

	// ATOMIC_WRITE is an RC/XRC operation when enabled at all.
	EXPECT_EQ(SROCE_ATOMIC_WRITE_QPTS & ~(SROCE_QPT_RC | SROCE_QPT_XRC), 0);

	// Native-IB CNP, RD, reserved, FLUSH, vendor, XRC reserved/masked
	// atomics/FLUSH: not ours.
	for (int op : {0x15, 0x18, 0x1c, 0x1f, 0x2c, 0x40, 0x4c, 0x60, 0x63,
		       0x66, 0x80, 0x82, 0xb5, 0xb8, 0xb9, 0xbc, 0xbe, 0xbf,
		       0xc0, 0xe0, 0xff})
		EXPECT_EQ(sroce_opcode_info((u8)op), nullptr) << op;
}

// XRC mirrors RC: same low bits, same kind/position/direction/payload, and
// the XRCETH on exactly the requests (IBTA: responses carry none).
TEST(OpcodeTable, XrcMirrorsRc)
{
	int n = 0;

	for (int op = 0; op < 0x20; op++) {
		const struct sroce_opcode_info *rc = sroce_opcode_info((u8)op);
		const struct sroce_opcode_info *x =
			sroce_opcode_info((u8)(op | SROCE_TRANSPORT_XRC));

		ASSERT_EQ(!rc, !x) << std::hex << op;
		if (!rc)
			continue;
		n++;
		EXPECT_EQ(x->kind, rc->kind) << x->name;
		EXPECT_EQ(x->pos, rc->pos) << x->name;
		EXPECT_EQ(x->payload, rc->payload) << x->name;
		EXPECT_EQ(x->request, rc->request) << x->name;
		EXPECT_EQ(std::string(x->name), "X" + std::string(rc->name));
		if (rc->request) {
			EXPECT_EQ(x->hdrs, rc->hdrs | SROCE_HDR_XRCETH);
			EXPECT_EQ(x->hdr_len, rc->hdr_len + SROCE_XRCETH_LEN);
		} else {
			EXPECT_EQ(x->hdrs, rc->hdrs);
			EXPECT_EQ(x->hdr_len, rc->hdr_len);
		}
	}
	EXPECT_EQ(n, 24);
}

TEST(OpcodeTable, TransportMatchesQpType)
{
	for (int op = 0; op < 256; op++) {
		const struct sroce_opcode_info *i = sroce_opcode_info((u8)op);

		if (!i || op == SROCE_OP_CNP)
			continue;
		// ATOMIC_WRITE is gated off for every QP type for now.
		int gate = i->kind == SROCE_KIND_ATOMIC_WRITE ?
			   SROCE_ATOMIC_WRITE_QPTS : 0xff;
		switch (op & SROCE_TRANSPORT_MASK) {
		case SROCE_TRANSPORT_RC:
			EXPECT_EQ(i->qpts, SROCE_QPT_RC & gate); break;
		case SROCE_TRANSPORT_UC:
			EXPECT_EQ(i->qpts, SROCE_QPT_UC); break;
		case SROCE_TRANSPORT_UD:
			EXPECT_EQ(i->qpts, SROCE_QPT_UD); break;
		case SROCE_TRANSPORT_XRC:
			EXPECT_EQ(i->qpts, SROCE_QPT_XRC & gate); break;
		default:
			ADD_FAILURE() << op;
		}
		// XRCETH iff an XRC request.
		EXPECT_EQ(!!(i->hdrs & SROCE_HDR_XRCETH),
			  (op & SROCE_TRANSPORT_MASK) == SROCE_TRANSPORT_XRC &&
			  i->request) << i->name;
		// Payload iff request that is SEND/WRITE/ATOMIC_WRITE, or a
		// read response.
		bool data = i->kind == SROCE_KIND_SEND ||
			    i->kind == SROCE_KIND_WRITE ||
			    i->kind == SROCE_KIND_ATOMIC_WRITE ||
			    i->kind == SROCE_KIND_READ_RESP;
		EXPECT_EQ(!!i->payload, data) << i->name;
	}
}

TEST(Parse, KnownAnswerSendOnly)
{
	// UDP payload of the reference RC SEND_ONLY vector, ICRC included.
	bytes b = from_hex("0400ffff0000001180000001"
			   "000102030405060708090a0b0c0d0e0f" "f71a20b9");
	struct sroce_pkt pkt;

	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.info, sroce_opcode_info(SROCE_OP_RC_SEND_ONLY));
	EXPECT_EQ(pkt.bth.opcode, 0x04);
	EXPECT_EQ(pkt.bth.se, 0);
	EXPECT_EQ(pkt.bth.mig_req, 0);
	EXPECT_EQ(pkt.bth.pad, 0);
	EXPECT_EQ(pkt.bth.pkey, 0xffff);
	EXPECT_EQ(pkt.bth.fecn, 0);
	EXPECT_EQ(pkt.bth.becn, 0);
	EXPECT_EQ(pkt.bth.dqpn, 0x11u);
	EXPECT_EQ(pkt.bth.ack_req, 1);
	EXPECT_EQ(pkt.bth.psn, 1u);
	EXPECT_EQ(pkt.hdr_len, 12u);
	EXPECT_EQ(pkt.payload_len, 16u);
}

TEST(Parse, AllBthBits)
{
	bytes b = from_hex("2bf08001c7abcdef9f654321"
			   "0123456789abcdef" "11223344" "00000005"
			   "dead0000" "0102030405000000" "00000000");
	struct sroce_pkt pkt;

	// 0x2b UC WRITE_ONLY_IMM, SE|MigReq|pad 3, FECN|BECN|resv6, AckReq|resv7.
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.bth.se, 1);
	EXPECT_EQ(pkt.bth.mig_req, 1);
	EXPECT_EQ(pkt.bth.pad, 3);
	EXPECT_EQ(pkt.bth.pkey, 0x8001);
	EXPECT_EQ(pkt.bth.fecn, 1);
	EXPECT_EQ(pkt.bth.becn, 1);
	EXPECT_EQ(pkt.bth.dqpn, 0xabcdefu);
	EXPECT_EQ(pkt.bth.ack_req, 1);
	EXPECT_EQ(pkt.bth.psn, 0x654321u);
	EXPECT_EQ(pkt.reth.va, 0x0123456789abcdefull);
	EXPECT_EQ(pkt.reth.rkey, 0x11223344u);
	EXPECT_EQ(pkt.reth.len, 5u);
	EXPECT_EQ(pkt.imm, 0xdead0000u);
	EXPECT_EQ(pkt.hdr_len, 32u);
	EXPECT_EQ(pkt.payload_len, 5u);	// 8 bytes - pad 3
}

TEST(Parse, ExtensionHeaders)
{
	struct sroce_pkt pkt;
	bytes b;

	b = from_hex("6400ffff00000001000000ff" "8001000000123456"
		     "aabbccdd" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.deth.qkey, 0x80010000u);
	EXPECT_EQ(pkt.deth.sqpn, 0x123456u);
	EXPECT_EQ(pkt.payload_len, 4u);

	b = from_hex("1300ffff0000000100000002" "0000000000010000" "00000088"
		     "1111111111111111" "2222222222222222" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.atomic.va, 0x10000u);
	EXPECT_EQ(pkt.atomic.rkey, 0x88u);
	EXPECT_EQ(pkt.atomic.swap_add, 0x1111111111111111ull);
	EXPECT_EQ(pkt.atomic.compare, 0x2222222222222222ull);
	EXPECT_EQ(pkt.payload_len, 0u);

	b = from_hex("1200ffff0000000100000002" "3fabcdef"
		     "0123456789abcdef" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.aeth.syndrome, 0x3f);
	EXPECT_EQ(pkt.aeth.msn, 0xabcdefu);
	EXPECT_EQ(pkt.atomic_orig, 0x0123456789abcdefull);

	b = from_hex("1700ffff0000000100000002" "cafebabe" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.ieth_rkey, 0xcafebabeu);

	// CNP from Annex A17 (Mellanox example bytes).
	b = from_hex("8100ffff400000d200000000" "0000000000000000"
		     "0000000000000000" "e42dad81");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.info->kind, SROCE_KIND_CNP);
	EXPECT_EQ(pkt.bth.becn, 1);
	EXPECT_EQ(pkt.bth.dqpn, 0xd2u);
	EXPECT_EQ(pkt.payload_len, 0u);
}

TEST(Parse, Errors)
{
	struct sroce_pkt pkt;
	bytes b;

	EXPECT_EQ(parse(bytes(), &pkt), SROCE_PARSE_ERR_TOO_SHORT);
	EXPECT_EQ(parse(bytes(15, 0), &pkt), SROCE_PARSE_ERR_TOO_SHORT);
	EXPECT_EQ(parse(bytes(16, 0), &pkt), SROCE_PARSE_ERR_PAYLOAD_LEN)
		<< "SEND_FIRST without payload";

	b = mk_op(SROCE_OP_RC_SEND_ONLY, 0);
	EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	for (u8 v = 1; v < 16; v++) {
		b[1] = v;
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_TVER);
	}
	for (int op : {0x15, 0x40, 0x80, 0x1c, 0xe0}) {
		b = mk((u8)op, 0, 0, 0);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_OPCODE) << op;
	}

	// Headers cut short: each opcode one word short of its headers.
	for (auto &[op, hl] : kHdrLen) {
		if (hl == SROCE_BTH_LEN) {
			b = mk((u8)op, 0, 0, 0);
			b.pop_back();
			EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_TOO_SHORT);
			continue;
		}
		b = mk((u8)op, (u32)hl - SROCE_BTH_LEN - 4, 0, 0);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_HDR_TRUNC) << op;
		if (b.size() > 16) {
			b.pop_back();	// unaligned as well: truncation wins
			EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_HDR_TRUNC);
		}
	}

	for (u32 extra = 1; extra < 4; extra++) {
		b = mk(SROCE_OP_RC_SEND_ONLY, 0, extra, 0);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_ALIGN);
		b = mk(SROCE_OP_RC_ACK, 4, extra, 0);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_ALIGN);
	}

	// PadCnt larger than what follows the headers: the underflow class.
	for (u8 pad = 1; pad < 4; pad++) {
		b = mk(SROCE_OP_RC_SEND_ONLY, 0, 0, 0);
		b[1] = (u8)(pad << 4);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_PAD);
		b = mk(SROCE_OP_RC_SEND_LAST_IMM, 4, 0, 0);
		b[1] = (u8)(pad << 4);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_PAD);
		b = mk(SROCE_OP_RC_ACK, 4, 0, 0);
		b[1] = (u8)(pad << 4);
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_PAD);
	}

	// No-payload opcodes with trailing bytes.
	for (u8 op : {SROCE_OP_RC_READ_REQ, SROCE_OP_RC_ACK,
		      SROCE_OP_RC_ATOMIC_ACK, SROCE_OP_RC_CMP_SWAP,
		      SROCE_OP_RC_FETCH_ADD, SROCE_OP_CNP,
		      SROCE_OP_XRC_READ_REQ, SROCE_OP_XRC_ACK,
		      SROCE_OP_XRC_ATOMIC_ACK, SROCE_OP_XRC_CMP_SWAP,
		      SROCE_OP_XRC_FETCH_ADD}) {
		u32 ext = sroce_opcode_info(op)->hdr_len - SROCE_BTH_LEN;

		EXPECT_EQ(parse(mk(op, ext, 0, 0), &pkt), SROCE_PARSE_OK);
		EXPECT_EQ(parse(mk(op, ext, 4, 0), &pkt),
			  SROCE_PARSE_ERR_PAYLOAD) << (int)op;
		EXPECT_EQ(parse(mk(op, ext, 1, 3), &pkt),
			  SROCE_PARSE_ERR_PAYLOAD) << (int)op;
	}
	// A CNP with 32 instead of 16 reserved bytes.
	EXPECT_EQ(parse(mk(SROCE_OP_CNP, 32, 0, 0), &pkt),
		  SROCE_PARSE_ERR_PAYLOAD);
}

TEST(Parse, PayloadLengthRules)
{
	struct sroce_pkt pkt;

	for (u8 op : {SROCE_OP_RC_SEND_FIRST, SROCE_OP_RC_SEND_MIDDLE,
		      SROCE_OP_RC_WRITE_FIRST, SROCE_OP_UC_WRITE_MIDDLE,
		      SROCE_OP_RC_READ_RESP_FIRST,
		      SROCE_OP_RC_READ_RESP_MIDDLE, SROCE_OP_XRC_SEND_FIRST,
		      SROCE_OP_XRC_WRITE_MIDDLE,
		      SROCE_OP_XRC_READ_RESP_MIDDLE}) {
		for (u32 n : {256u, 512u, 1024u, 2048u, 4096u})
			EXPECT_EQ(parse(mk_op(op, n), &pkt), SROCE_PARSE_OK);
		for (u32 n : {0u, 4u, 252u, 260u, 768u, 4092u, 8192u})
			EXPECT_EQ(parse(mk_op(op, n), &pkt),
				  SROCE_PARSE_ERR_PAYLOAD_LEN) << n;
		// 256 bytes after the headers, but PadCnt says 255 payload.
		bytes b = mk_op(op, 256);
		b[1] |= 0x10;
		EXPECT_EQ(parse(b, &pkt), SROCE_PARSE_ERR_PAYLOAD_LEN);
	}
	for (u8 op : {SROCE_OP_RC_SEND_LAST, SROCE_OP_RC_SEND_LAST_IMM,
		      SROCE_OP_RC_SEND_LAST_INV, SROCE_OP_UC_WRITE_LAST,
		      SROCE_OP_RC_READ_RESP_LAST}) {
		EXPECT_EQ(parse(mk_op(op, 0), &pkt),
			  SROCE_PARSE_ERR_PAYLOAD_LEN);
		for (u32 n : {1u, 3u, 4u, 255u, 4096u})
			EXPECT_EQ(parse(mk_op(op, n), &pkt), SROCE_PARSE_OK);
		EXPECT_EQ(parse(mk_op(op, 4097), &pkt),
			  SROCE_PARSE_ERR_PAYLOAD_LEN);
	}
	for (u8 op : {SROCE_OP_RC_SEND_ONLY, SROCE_OP_RC_WRITE_ONLY_IMM,
		      SROCE_OP_UD_SEND_ONLY, SROCE_OP_RC_READ_RESP_ONLY}) {
		for (u32 n : {0u, 1u, 2u, 3u, 5u, 4096u}) {
			ASSERT_EQ(parse(mk_op(op, n), &pkt), SROCE_PARSE_OK);
			EXPECT_EQ(pkt.payload_len, n);
			EXPECT_EQ(pkt.bth.pad, sroce_pad_len(n));
		}
		EXPECT_EQ(parse(mk_op(op, 4097), &pkt),
			  SROCE_PARSE_ERR_PAYLOAD_LEN);
	}
}

// Every opcode, every length up to 80 bytes, every PadCnt, every TVer
// nibble of 0/1: parse never reads past len (ASan), and when it accepts, the
// lengths add up exactly.
TEST(Parse, ExhaustiveSmallPackets)
{
	struct sroce_pkt pkt;
	int ok = 0;

	for (int op = 0; op < 256; op++)
		for (u32 len = 0; len <= 80; len++)
			for (u8 b1 = 0; b1 < 0x40; b1++) {
				bytes b(len, 0xa5);

				if (len > 0)
					b[0] = (u8)op;
				if (len > 1)
					b[1] = (u8)(b1 << 2 & 0xf0) | (b1 & 1);
				enum sroce_parse_err e = parse(b, &pkt);

				ASSERT_LT((unsigned)e, SROCE_PARSE_ERR_COUNT);
				if (e != SROCE_PARSE_OK)
					continue;
				ok++;
				ASSERT_EQ(pkt.hdr_len + pkt.payload_len +
					  pkt.bth.pad + SROCE_ICRC_LEN, len);
				ASSERT_EQ(pkt.hdr_len, pkt.info->hdr_len);
			}
	EXPECT_GT(ok, 0);
}

TEST(Parse, ErrNames)
{
	std::set<std::string> names;

	for (unsigned i = 0; i < SROCE_PARSE_ERR_COUNT; i++) {
		ASSERT_NE(sroce_parse_err_name(i), nullptr);
		names.insert(sroce_parse_err_name(i));
	}
	EXPECT_EQ(names.size(), (size_t)SROCE_PARSE_ERR_COUNT);
	EXPECT_STREQ(sroce_parse_err_name(SROCE_PARSE_ERR_COUNT), "?");
	EXPECT_STREQ(sroce_parse_err_name(0), "ok");
}

TEST(Build, WritesExactBytes)
{
	struct sroce_pkt pkt = {};
	u8 buf[SROCE_MAX_HDR_LEN];

	pkt.bth.opcode = SROCE_OP_RC_SEND_ONLY;
	pkt.bth.pkey = 0xffff;
	pkt.bth.dqpn = 0x11;
	pkt.bth.ack_req = 1;
	pkt.bth.psn = 1;
	pkt.bth.fecn = 0;
	pkt.payload_len = 16;
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 12u);
	EXPECT_EQ(bytes(buf, buf + 12), from_hex("0400ffff0000001180000001"));

	// 24-bit fields are masked, reserved bits stay zero, TVer forced 0,
	// PadCnt follows payload_len rather than bth.pad.
	pkt = {};
	pkt.bth.opcode = SROCE_OP_CNP;
	pkt.bth.pkey = 0xffff;
	pkt.bth.becn = 1;
	pkt.bth.dqpn = 0xff0000d2;
	pkt.bth.psn = 0xff000000;
	pkt.bth.tver = 5;
	pkt.bth.pad = 2;
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 28u);
	EXPECT_EQ(bytes(buf, buf + 28),
		  from_hex("8100ffff400000d200000000"
			   "00000000000000000000000000000000"));
	EXPECT_EQ(buf[28], 0x5a);

	pkt = {};
	pkt.bth.opcode = SROCE_OP_UD_SEND_ONLY;
	pkt.deth.qkey = 0x80010000;
	pkt.deth.sqpn = 0xff123456;
	pkt.payload_len = 1;
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 20u);
	EXPECT_EQ(bytes(buf, buf + 20),
		  from_hex("64300000000000000000000080010000" "00123456"));

	EXPECT_EQ(sroce_pkt_build_hdrs(buf, 19, &pkt), 0u);
	pkt.bth.opcode = 0x15;
	EXPECT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 0u);
}

static bool bth_eq(const struct sroce_bth &a, const struct sroce_bth &b)
{
	return a.opcode == b.opcode && a.se == b.se &&
	       a.mig_req == b.mig_req && a.pad == b.pad && a.tver == b.tver &&
	       a.fecn == b.fecn && a.becn == b.becn &&
	       a.ack_req == b.ack_req && a.pkey == b.pkey &&
	       a.dqpn == b.dqpn && a.psn == b.psn;
}

static u32 valid_payload(const struct sroce_opcode_info *i, std::mt19937 &rng)
{
	if (!i->payload)
		return 0;
	if (i->kind == SROCE_KIND_ATOMIC_WRITE)
		return SROCE_ATOMIC_WRITE_LEN;
	if (i->pos == SROCE_POS_FIRST || i->pos == SROCE_POS_MIDDLE)
		return 256u << (rng() % 5);
	if (i->pos == SROCE_POS_LAST)
		return 1 + rng() % 4096;
	return rng() % 4097;
}

TEST(Build, RoundTripEveryOpcode)
{
	std::mt19937 rng(1234);

	for (int op = 0; op < 256; op++) {
		const struct sroce_opcode_info *i = sroce_opcode_info((u8)op);

		if (!i)
			continue;
		for (int iter = 0; iter < 200; iter++) {
			struct sroce_pkt x = {}, y;
			auto r64 = [&] { return (u64)rng() << 32 | rng(); };

			x.bth.opcode = (u8)op;
			x.bth.se = rng() & 1;
			x.bth.mig_req = rng() & 1;
			x.bth.fecn = rng() & 1;
			x.bth.becn = rng() & 1;
			x.bth.ack_req = rng() & 1;
			x.bth.pkey = (u16)rng();
			x.bth.dqpn = rng() & SROCE_QPN_MASK;
			x.bth.psn = rng() & 0xffffff;
			x.payload_len = valid_payload(i, rng);
			x.bth.pad = sroce_pad_len(x.payload_len);
			if (i->hdrs & SROCE_HDR_DETH)
				x.deth = { (u32)rng(), (u32)rng() & 0xffffff };
			if (i->hdrs & SROCE_HDR_XRCETH)
				x.xrc_srqn = (u32)rng() & 0xffffff;
			if (i->hdrs & SROCE_HDR_RETH)
				x.reth = { r64(), (u32)rng(), (u32)rng() };
			if (i->hdrs & SROCE_HDR_ATOMICETH)
				x.atomic = { r64(), (u32)rng(), r64(), r64() };
			if (i->hdrs & SROCE_HDR_AETH)
				x.aeth = { (u8)rng(), (u32)rng() & 0xffffff };
			if (i->hdrs & SROCE_HDR_ATOMICACKETH)
				x.atomic_orig = r64();
			if (i->hdrs & SROCE_HDR_IMMDT)
				x.imm = (u32)rng();
			if (i->hdrs & SROCE_HDR_IETH)
				x.ieth_rkey = (u32)rng();
			x.info = i;
			x.hdr_len = i->hdr_len;

			bytes b(i->hdr_len + x.payload_len + x.bth.pad + 4);
			ASSERT_EQ(sroce_pkt_build_hdrs(b.data(),
						       (u32)b.size(), &x),
				  i->hdr_len);
			ASSERT_EQ(parse(b, &y), SROCE_PARSE_OK) << i->name;
			ASSERT_TRUE(bth_eq(x.bth, y.bth)) << i->name;
			EXPECT_EQ(x.info, y.info);
			EXPECT_EQ(x.hdr_len, y.hdr_len);
			EXPECT_EQ(x.payload_len, y.payload_len);
			EXPECT_EQ(x.deth.qkey, y.deth.qkey);
			EXPECT_EQ(x.deth.sqpn, y.deth.sqpn);
			EXPECT_EQ(x.xrc_srqn, y.xrc_srqn);
			EXPECT_EQ(x.reth.va, y.reth.va);
			EXPECT_EQ(x.reth.rkey, y.reth.rkey);
			EXPECT_EQ(x.reth.len, y.reth.len);
			EXPECT_EQ(x.atomic.va, y.atomic.va);
			EXPECT_EQ(x.atomic.rkey, y.atomic.rkey);
			EXPECT_EQ(x.atomic.swap_add, y.atomic.swap_add);
			EXPECT_EQ(x.atomic.compare, y.atomic.compare);
			EXPECT_EQ(x.aeth.syndrome, y.aeth.syndrome);
			EXPECT_EQ(x.aeth.msn, y.aeth.msn);
			EXPECT_EQ(x.atomic_orig, y.atomic_orig);
			EXPECT_EQ(x.imm, y.imm);
			EXPECT_EQ(x.ieth_rkey, y.ieth_rkey);
		}
	}
}

TEST(Xrc, ParseXrcethBeforeRethAndImm)
{
	struct sroce_pkt pkt;
	// 0xab XRC WRITE_ONLY_IMM: BTH, XRCETH (resv 0xff, SRQN 0x123456),
	// RETH, ImmDt, 5 bytes + pad 3, ICRC.
	bytes b = from_hex("ab30ffff00000042800000aa" "ff123456"
			   "0000000000001000" "00000077" "00000005"
			   "cafef00d" "0102030405000000" "00000000");

	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.info, sroce_opcode_info(SROCE_OP_XRC_WRITE_ONLY_IMM));
	EXPECT_EQ(pkt.bth.dqpn, 0x42u);
	EXPECT_EQ(pkt.xrc_srqn, 0x123456u) << "reserved byte ignored";
	EXPECT_EQ(pkt.reth.va, 0x1000u);
	EXPECT_EQ(pkt.reth.rkey, 0x77u);
	EXPECT_EQ(pkt.reth.len, 5u);
	EXPECT_EQ(pkt.imm, 0xcafef00du);
	EXPECT_EQ(pkt.hdr_len, 36u);
	EXPECT_EQ(pkt.payload_len, 5u);

	// XRC CMP_SWAP: XRCETH then AtomicETH, the longest header set.
	b = from_hex("b300ffff0000000180000002" "00abcdef"
		     "0000000000010000" "00000088"
		     "1111111111111111" "2222222222222222" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.xrc_srqn, 0xabcdefu);
	EXPECT_EQ(pkt.atomic.va, 0x10000u);
	EXPECT_EQ(pkt.atomic.rkey, 0x88u);
	EXPECT_EQ(pkt.atomic.swap_add, 0x1111111111111111ull);
	EXPECT_EQ(pkt.atomic.compare, 0x2222222222222222ull);
	EXPECT_EQ(pkt.hdr_len, (u32)SROCE_MAX_HDR_LEN);

	// Responses carry no XRCETH: the AETH follows the BTH directly.
	b = from_hex("b100ffff0000000100000002" "1f000003" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.aeth.syndrome, 0x1f);
	EXPECT_EQ(pkt.aeth.msn, 3u);
	EXPECT_EQ(pkt.xrc_srqn, 0u);
	b = from_hex("ae00ffff0000000100000002" "00000000");
	b.insert(b.begin() + 12, 256, 0x5a);	// READ_RESP_MIDDLE, 256 bytes
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.hdr_len, 12u);
	EXPECT_EQ(pkt.payload_len, 256u);
}

TEST(Xrc, TruncatedXrcethRejected)
{
	struct sroce_pkt pkt;

	for (int op = SROCE_OP_XRC_SEND_FIRST; op <= 0xbf; op++) {
		const struct sroce_opcode_info *i = sroce_opcode_info((u8)op);

		if (!i || !(i->hdrs & SROCE_HDR_XRCETH))
			continue;
		// From BTH + ICRC only (no XRCETH at all) to one word short
		// of the headers.
		for (u32 ext = 0; ext + SROCE_BTH_LEN < i->hdr_len; ext += 4)
			EXPECT_EQ(parse(mk((u8)op, ext, 0, 0), &pkt),
				  SROCE_PARSE_ERR_HDR_TRUNC) << i->name << ext;
	}
	// The XRCETH is header, not payload: 4 bytes after it are 4.
	bytes b = mk(SROCE_OP_XRC_SEND_ONLY, 4, 4, 0);
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.payload_len, 4u);
}

TEST(Xrc, BuildWritesXrcethAndZeroesReserved)
{
	struct sroce_pkt pkt = {};
	u8 buf[SROCE_MAX_HDR_LEN];

	pkt.bth.opcode = SROCE_OP_XRC_SEND_ONLY_IMM;
	pkt.bth.pkey = 0xffff;
	pkt.bth.dqpn = 0x11;
	pkt.bth.psn = 1;
	pkt.xrc_srqn = 0xff654321;	// masked to 24 bits
	pkt.imm = 0x01020304;
	pkt.payload_len = 4;
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 20u);
	EXPECT_EQ(bytes(buf, buf + 20),
		  from_hex("a500ffff0000001100000001" "00654321" "01020304"));
	EXPECT_EQ(buf[20], 0x5a);

	pkt = {};
	pkt.bth.opcode = SROCE_OP_XRC_FETCH_ADD;
	pkt.xrc_srqn = 7;
	pkt.atomic = { 0x1000, 0x22, 5, 0 };
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 44u);
	EXPECT_EQ(bytes(buf, buf + 44),
		  from_hex("b4000000000000000000000000000007"
			   "0000000000001000" "00000022"
			   "0000000000000005" "0000000000000000"));
	EXPECT_EQ(sroce_pkt_build_hdrs(buf, 43, &pkt), 0u);

	// An XRC ACK has no XRCETH even if xrc_srqn is set.
	pkt = {};
	pkt.bth.opcode = SROCE_OP_XRC_ACK;
	pkt.xrc_srqn = 0x123;
	pkt.aeth = { 0x1f, 9 };
	ASSERT_EQ(sroce_pkt_build_hdrs(buf, sizeof(buf), &pkt), 16u);
	EXPECT_EQ(bytes(buf, buf + 16),
		  from_hex("b10000000000000000000000" "1f000009"));
}

TEST(AtomicWrite, ExactlyEightBytesOfPayload)
{
	struct sroce_pkt pkt;

	for (u8 op : {SROCE_OP_RC_ATOMIC_WRITE, SROCE_OP_XRC_ATOMIC_WRITE}) {
		u32 ext = sroce_opcode_info(op)->hdr_len - SROCE_BTH_LEN;

		ASSERT_EQ(parse(mk(op, ext, 8, 0), &pkt), SROCE_PARSE_OK);
		EXPECT_EQ(pkt.payload_len, 8u);
		for (u32 n : {0u, 4u, 12u, 16u, 4096u})
			EXPECT_EQ(parse(mk(op, ext, n, 0), &pkt),
				  SROCE_PARSE_ERR_PAYLOAD_LEN) << n;
		// 8 bytes after the headers, PadCnt says fewer are payload.
		for (u8 pad = 1; pad < 4; pad++)
			EXPECT_EQ(parse(mk(op, ext, 8 - pad, pad), &pkt),
				  SROCE_PARSE_ERR_PAYLOAD_LEN) << (int)pad;
	}

	// Known bytes: RETH then the value, big-endian on the wire.
	bytes b = from_hex("1d00ffff0000002a80000010"
			   "00007f0000001000" "00000abc" "00000008"
			   "0123456789abcdef" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.info->kind, SROCE_KIND_ATOMIC_WRITE);
	EXPECT_EQ(pkt.reth.va, 0x7f0000001000ull);
	EXPECT_EQ(pkt.reth.rkey, 0xabcu);
	EXPECT_EQ(pkt.reth.len, 8u);
	EXPECT_EQ(pkt.hdr_len, 28u);
	EXPECT_EQ(pkt.payload_len, 8u);
	EXPECT_EQ(pkt.bth.ack_req, 1);

	b = from_hex("bd00ffff0000002a80000010" "00000099"
		     "00007f0000001000" "00000abc" "00000008"
		     "0123456789abcdef" "00000000");
	ASSERT_EQ(parse(b, &pkt), SROCE_PARSE_OK);
	EXPECT_EQ(pkt.xrc_srqn, 0x99u);
	EXPECT_EQ(pkt.hdr_len, 32u);
	EXPECT_EQ(pkt.payload_len, 8u);
}
