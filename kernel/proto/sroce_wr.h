/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which wire opcode carries each request packet of a work request (IBTA
 * vol. 1 9.2, table 37). A message of one packet is sent as ONLY, a longer
 * one as FIRST, MIDDLE..., LAST; the immediate data and the invalidated
 * rkey ride on the last (or only) packet. A READ request or an atomic is one
 * packet whatever the length, and the same packet where @first and @last
 * say otherwise: a READ resumed after a lost response (go-back-N) asks
 * again, with a READ request, for the rest from its offset. The transport (RC, UC, UD, XRC) is the
 * opcode's top three bits; each operation keeps its low five bits in every
 * transport that has it. Which operations a transport has is the ABI's
 * work-request opcode table (include/sroce-abi.h).
 *
 * sroce_req.c calls this for every request packet; test/test_wr.cpp states
 * it for every operation, position and transport.
 */
#ifndef SROCE_WR_H
#define SROCE_WR_H

#include "../../include/sroce-abi.h"
#include "sroce_hdr.h"

/* The position of a packet in its message. */
static inline u8 sroce_wr_span(bool first, bool last, u8 only, u8 first_op,
			       u8 middle, u8 last_op)
{
	if (first)
		return last ? only : first_op;
	return last ? last_op : middle;
}

/*
 * The opcode of a request packet of a @wr_op (SROCE_WR_*) message on
 * @transport (SROCE_TRANSPORT_RC, _UC, _UD or _XRC), @first and/or @last
 * in its message; -1 if that operation sends no such packet on that
 * transport (a local operation, one the transport does not have, a UD
 * message of more than one packet).
 */
static inline int sroce_wr_wire_opcode(u8 transport, u32 wr_op, bool first,
				       bool last)
{
	bool one = first && last;
	u64 ops;
	u8 op;

	switch (transport) {
	case SROCE_TRANSPORT_RC:
	case SROCE_TRANSPORT_XRC:
		ops = SROCE_WR_RC_OPS;
		break;
	case SROCE_TRANSPORT_UC:
		ops = SROCE_WR_UC_OPS;
		break;
	case SROCE_TRANSPORT_UD:
		if (!one)
			return -1;
		ops = SROCE_WR_UD_OPS;
		break;
	default:
		return -1;
	}
	if (!sroce_wr_in(wr_op, ops & ~(u64)SROCE_WR_LOCAL_OPS))
		return -1;

	switch (wr_op) {
	case SROCE_WR_SEND:
		op = sroce_wr_span(first, last, SROCE_OP_RC_SEND_ONLY,
				   SROCE_OP_RC_SEND_FIRST,
				   SROCE_OP_RC_SEND_MIDDLE,
				   SROCE_OP_RC_SEND_LAST);
		break;
	case SROCE_WR_SEND_WITH_IMM:
		op = sroce_wr_span(first, last, SROCE_OP_RC_SEND_ONLY_IMM,
				   SROCE_OP_RC_SEND_FIRST,
				   SROCE_OP_RC_SEND_MIDDLE,
				   SROCE_OP_RC_SEND_LAST_IMM);
		break;
	case SROCE_WR_SEND_WITH_INV:
		op = sroce_wr_span(first, last, SROCE_OP_RC_SEND_ONLY_INV,
				   SROCE_OP_RC_SEND_FIRST,
				   SROCE_OP_RC_SEND_MIDDLE,
				   SROCE_OP_RC_SEND_LAST_INV);
		break;
	case SROCE_WR_RDMA_WRITE:
		op = sroce_wr_span(first, last, SROCE_OP_RC_WRITE_ONLY,
				   SROCE_OP_RC_WRITE_FIRST,
				   SROCE_OP_RC_WRITE_MIDDLE,
				   SROCE_OP_RC_WRITE_LAST);
		break;
	case SROCE_WR_RDMA_WRITE_WITH_IMM:
		op = sroce_wr_span(first, last, SROCE_OP_RC_WRITE_ONLY_IMM,
				   SROCE_OP_RC_WRITE_FIRST,
				   SROCE_OP_RC_WRITE_MIDDLE,
				   SROCE_OP_RC_WRITE_LAST_IMM);
		break;
	case SROCE_WR_RDMA_READ:
		op = SROCE_OP_RC_READ_REQ;
		break;
	case SROCE_WR_ATOMIC_CMP_AND_SWP:
		op = SROCE_OP_RC_CMP_SWAP;
		break;
	case SROCE_WR_ATOMIC_FETCH_AND_ADD:
		op = SROCE_OP_RC_FETCH_ADD;
		break;
	case SROCE_WR_ATOMIC_WRITE:
		op = SROCE_OP_RC_ATOMIC_WRITE;
		break;
	default:
		return -1;
	}
	/* The RC operation's low five bits, in the transport's range. */
	return (op & 0x1f) | transport;
}

#endif /* SROCE_WR_H */
