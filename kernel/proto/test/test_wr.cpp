// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Which wire opcode each request packet of a work request is sent as
// (sroce_wr.h), checked against IBTA vol. 1 table 37's numbers, written
// out here as numbers: a message of one packet is ONLY, a longer one
// FIRST, MIDDLE..., LAST; immediate data and the invalidated rkey ride on
// the last packet; a READ request or an atomic is one packet, also when a
// READ resumes part way (the position does not change it); UC has SEND
// and WRITE only, UD one-packet SENDs only; local operations never reach
// the wire.
#include <gtest/gtest.h>

extern "C" {
#include "sroce_wr.h"
}

namespace {

enum Pos { kOnly, kFirst, kMiddle, kLast };

int wire(uint8_t transport, uint32_t op, Pos pos)
{
	return sroce_wr_wire_opcode(transport, op, pos == kOnly || pos == kFirst,
				    pos == kOnly || pos == kLast);
}

struct Row {
	uint32_t op;
	const char *name;
	int only, first, middle, last; // RC opcodes; -1: no such packet
};

// IBTA vol. 1 table 37, the RC column (0x00-0x1f).
const Row kRc[] = {
	{SROCE_WR_SEND, "SEND", 0x04, 0x00, 0x01, 0x02},
	{SROCE_WR_SEND_WITH_IMM, "SEND_WITH_IMM", 0x05, 0x00, 0x01, 0x03},
	{SROCE_WR_SEND_WITH_INV, "SEND_WITH_INV", 0x17, 0x00, 0x01, 0x16},
	{SROCE_WR_RDMA_WRITE, "RDMA_WRITE", 0x0a, 0x06, 0x07, 0x08},
	{SROCE_WR_RDMA_WRITE_WITH_IMM, "RDMA_WRITE_WITH_IMM", 0x0b, 0x06, 0x07, 0x09},
	// A READ resumed at an offset (first false) is again a READ request.
	{SROCE_WR_RDMA_READ, "RDMA_READ", 0x0c, 0x0c, 0x0c, 0x0c},
	{SROCE_WR_ATOMIC_CMP_AND_SWP, "ATOMIC_CMP_AND_SWP", 0x13, 0x13, 0x13, 0x13},
	{SROCE_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD", 0x14, 0x14, 0x14, 0x14},
	{SROCE_WR_ATOMIC_WRITE, "ATOMIC_WRITE", 0x1d, 0x1d, 0x1d, 0x1d},
	{SROCE_WR_LOCAL_INV, "LOCAL_INV", -1, -1, -1, -1},
	{SROCE_WR_BIND_MW, "BIND_MW", -1, -1, -1, -1},
	{SROCE_WR_REG_MR, "REG_MR", -1, -1, -1, -1},
};

void expect_row(uint8_t transport, const Row &r, const int want[4])
{
	const char *pos_name[] = {"ONLY", "FIRST", "MIDDLE", "LAST"};

	for (int p = kOnly; p <= kLast; p++)
		EXPECT_EQ(wire(transport, r.op, Pos(p)), want[p])
			<< r.name << " " << pos_name[p] << " on transport 0x"
			<< std::hex << int(transport);
}

// RC: the table itself.
TEST(WrOpcode, RcIsTable37)
{
	for (const auto &r : kRc) {
		const int want[4] = {r.only, r.first, r.middle, r.last};
		expect_row(SROCE_TRANSPORT_RC, r, want);
	}
}

// XRC (0xa0-0xbf) has every RC request, at the same low five bits.
TEST(WrOpcode, XrcIsRcInTheXrcRange)
{
	for (const auto &r : kRc) {
		int want[4] = {r.only, r.first, r.middle, r.last};
		for (int &w : want)
			if (w >= 0)
				w |= 0xa0;
		expect_row(SROCE_TRANSPORT_XRC, r, want);
	}
	EXPECT_EQ(wire(SROCE_TRANSPORT_XRC, SROCE_WR_SEND, kOnly), 0xa4);
	EXPECT_EQ(wire(SROCE_TRANSPORT_XRC, SROCE_WR_RDMA_READ, kOnly), 0xac);
}

// UC (0x20-0x3f): SEND and RDMA WRITE, with and without immediate; no
// SEND with invalidate, no READ, no atomics.
TEST(WrOpcode, UcHasSendAndWriteOnly)
{
	for (const auto &r : kRc) {
		bool uc_has = r.op == SROCE_WR_SEND || r.op == SROCE_WR_SEND_WITH_IMM ||
			      r.op == SROCE_WR_RDMA_WRITE ||
			      r.op == SROCE_WR_RDMA_WRITE_WITH_IMM;
		int want[4] = {r.only, r.first, r.middle, r.last};
		for (int &w : want)
			w = uc_has && w >= 0 ? (w | 0x20) : -1;
		expect_row(SROCE_TRANSPORT_UC, r, want);
	}
	EXPECT_EQ(wire(SROCE_TRANSPORT_UC, SROCE_WR_SEND_WITH_IMM, kLast), 0x23);
	EXPECT_EQ(wire(SROCE_TRANSPORT_UC, SROCE_WR_RDMA_WRITE, kFirst), 0x26);
}

// UD (0x60-0x7f): a message is one packet, a SEND or a SEND with immediate.
TEST(WrOpcode, UdIsOnePacketSends)
{
	EXPECT_EQ(wire(SROCE_TRANSPORT_UD, SROCE_WR_SEND, kOnly), 0x64);
	EXPECT_EQ(wire(SROCE_TRANSPORT_UD, SROCE_WR_SEND_WITH_IMM, kOnly), 0x65);
	for (Pos p : {kFirst, kMiddle, kLast})
		EXPECT_EQ(wire(SROCE_TRANSPORT_UD, SROCE_WR_SEND, p), -1);
	for (const auto &r : kRc) {
		if (r.op != SROCE_WR_SEND && r.op != SROCE_WR_SEND_WITH_IMM) {
			EXPECT_EQ(wire(SROCE_TRANSPORT_UD, r.op, kOnly), -1) << r.name;
		}
	}
}

// What is not an operation, or not a transport with requests, has no opcode.
TEST(WrOpcode, UnknownOperationsAndTransportsHaveNone)
{
	for (uint32_t op : {10u, 11u, 12u, 13u, 14u, 16u, 31u, 63u, 64u, 0xffffffffu})
		EXPECT_EQ(wire(SROCE_TRANSPORT_RC, op, kOnly), -1) << op;
	EXPECT_EQ(wire(SROCE_TRANSPORT_RD, SROCE_WR_SEND, kOnly), -1);
	EXPECT_EQ(wire(SROCE_TRANSPORT_CNP, SROCE_WR_SEND, kOnly), -1);
}

// The opcodes produced are the ones the codec knows (sroce_hdr.h), so a
// packet the requester builds is one the responder parses: for every
// operation, position and transport, a request opcode of that transport,
// at that position in its message.
TEST(WrOpcode, ProducedOpcodesAreTheCodecs)
{
	const uint8_t transports[] = {SROCE_TRANSPORT_RC, SROCE_TRANSPORT_UC,
				      SROCE_TRANSPORT_UD, SROCE_TRANSPORT_XRC};
	const uint8_t want_pos[] = {SROCE_POS_ONLY, SROCE_POS_FIRST,
				    SROCE_POS_MIDDLE, SROCE_POS_LAST};
	int produced = 0;

	for (uint8_t t : transports) {
		for (uint32_t op = 0; op < 64; op++) {
			for (int p = kOnly; p <= kLast; p++) {
				int o = wire(t, op, Pos(p));

				if (o < 0)
					continue;
				produced++;
				auto *info = sroce_opcode_info(uint8_t(o));
				ASSERT_NE(info, nullptr) << "opcode 0x" << std::hex << o;
				EXPECT_EQ(o & 0xe0, t) << info->name;
				EXPECT_EQ(info->request, 1) << info->name;
				// One-packet requests are ONLY wherever they are.
				if (sroce_wr_in(op, SROCE_WR_RD_ATOMIC_OPS |
						SROCE_WR_BIT(SROCE_WR_ATOMIC_WRITE)))
					EXPECT_EQ(info->pos, SROCE_POS_ONLY) << info->name;
				else
					EXPECT_EQ(info->pos, want_pos[p]) << info->name;
			}
		}
	}
	// RC and XRC (9 operations x 4 positions) each, UC 4 x 4, UD 2.
	EXPECT_EQ(produced, 36 + 36 + 16 + 2);

	EXPECT_EQ(wire(SROCE_TRANSPORT_RC, SROCE_WR_SEND_WITH_INV, kLast),
		  SROCE_OP_RC_SEND_LAST_INV);
	EXPECT_EQ(wire(SROCE_TRANSPORT_UC, SROCE_WR_RDMA_WRITE_WITH_IMM, kOnly),
		  SROCE_OP_UC_WRITE_ONLY_IMM);
	EXPECT_EQ(wire(SROCE_TRANSPORT_XRC, SROCE_WR_SEND, kFirst),
		  SROCE_OP_XRC_SEND_FIRST);
	EXPECT_EQ(wire(SROCE_TRANSPORT_UD, SROCE_WR_SEND_WITH_IMM, kOnly),
		  SROCE_OP_UD_SEND_ONLY_IMM);
}

} // namespace
