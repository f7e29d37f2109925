// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCEv2 opcode table, packet parser and header builders.
 *
 * Header sets per opcode follow IBTA vol. 1 ch. 9 as encoded by Linux
 * (rxe_opcode.c) and Wireshark (packet-infiniband.c); CNP per Annex A17;
 * ATOMIC_WRITE as rxe encodes it (Linux 6.2+); XRC as the XRC header tables
 * of packet dissectors encode it (XRCETH first, then RC's headers).
 */
#include "sroce_hdr.h"
#include "sroce_wire.h"

/*
 * hdr_len is spelled out rather than summed from hdrs so the table reads
 * like the spec; test_hdr.cpp recomputes it from hdrs for every opcode.
 */
#define OPK(op, hdrs_, len_, kind_, pos_, qpts_, payload_, request_)	\
	[SROCE_OP_##op] = {						\
		.name = #op,						\
		.hdrs = (hdrs_),					\
		.hdr_len = (len_),					\
		.kind = (kind_),					\
		.pos = SROCE_POS_##pos_,				\
		.qpts = (qpts_),					\
		.payload = (payload_),					\
		.request = (request_),					\
	}

/*
 * The kind is pasted where it is first named: READ and WRITE are kernel
 * macros (0 and 1; in <linux/types.h> from 7.x on, so every file sees
 * them), and an argument passed on unpasted would become their values.
 */
#define OP(op, hdrs_, len_, kind_, pos_, qpts_, payload_, request_)	\
	OPK(op, hdrs_, len_, SROCE_KIND_##kind_, pos_, qpts_, payload_,	\
	    request_)

/* Requests that carry data: SEND and RDMA WRITE, shared by RC and UC. */
#define DATA_OP(op, hdrs_, len_, kind_, pos_, qpt_)			\
	OPK(op, hdrs_, len_, SROCE_KIND_##kind_, pos_, qpt_, 1, 1)

#define IMM	SROCE_HDR_IMMDT
#define RETH	SROCE_HDR_RETH
#define XETH	SROCE_HDR_XRCETH
#define RC	SROCE_QPT_RC
#define UC	SROCE_QPT_UC
#define XRC	SROCE_QPT_XRC

static const struct sroce_opcode_info sroce_opcodes[256] = {
	DATA_OP(RC_SEND_FIRST, 0, 12, SEND, FIRST, RC),
	DATA_OP(RC_SEND_MIDDLE, 0, 12, SEND, MIDDLE, RC),
	DATA_OP(RC_SEND_LAST, 0, 12, SEND, LAST, RC),
	DATA_OP(RC_SEND_LAST_IMM, IMM, 16, SEND, LAST, RC),
	DATA_OP(RC_SEND_ONLY, 0, 12, SEND, ONLY, RC),
	DATA_OP(RC_SEND_ONLY_IMM, IMM, 16, SEND, ONLY, RC),
	DATA_OP(RC_WRITE_FIRST, RETH, 28, WRITE, FIRST, RC),
	DATA_OP(RC_WRITE_MIDDLE, 0, 12, WRITE, MIDDLE, RC),
	DATA_OP(RC_WRITE_LAST, 0, 12, WRITE, LAST, RC),
	DATA_OP(RC_WRITE_LAST_IMM, IMM, 16, WRITE, LAST, RC),
	DATA_OP(RC_WRITE_ONLY, RETH, 28, WRITE, ONLY, RC),
	DATA_OP(RC_WRITE_ONLY_IMM, RETH | IMM, 32, WRITE, ONLY, RC),
	OP(RC_READ_REQ, RETH, 28, READ_REQ, ONLY, RC, 0, 1),
	OP(RC_READ_RESP_FIRST, SROCE_HDR_AETH, 16, READ_RESP, FIRST, RC, 1, 0),
	/* Middle read responses are the one response without an AETH. */
	OP(RC_READ_RESP_MIDDLE, 0, 12, READ_RESP, MIDDLE, RC, 1, 0),
	OP(RC_READ_RESP_LAST, SROCE_HDR_AETH, 16, READ_RESP, LAST, RC, 1, 0),
	OP(RC_READ_RESP_ONLY, SROCE_HDR_AETH, 16, READ_RESP, ONLY, RC, 1, 0),
	OP(RC_ACK, SROCE_HDR_AETH, 16, ACK, ONLY, RC, 0, 0),
	OP(RC_ATOMIC_ACK, SROCE_HDR_AETH | SROCE_HDR_ATOMICACKETH, 24,
	   ATOMIC_ACK, ONLY, RC, 0, 0),
	OP(RC_CMP_SWAP, SROCE_HDR_ATOMICETH, 40, ATOMIC, ONLY, RC, 0, 1),
	OP(RC_FETCH_ADD, SROCE_HDR_ATOMICETH, 40, ATOMIC, ONLY, RC, 0, 1),
	DATA_OP(RC_SEND_LAST_INV, SROCE_HDR_IETH, 16, SEND, LAST, RC),
	DATA_OP(RC_SEND_ONLY_INV, SROCE_HDR_IETH, 16, SEND, ONLY, RC),
	/* Exactly SROCE_ATOMIC_WRITE_LEN bytes of payload (rxe_opcode.c). */
	DATA_OP(RC_ATOMIC_WRITE, RETH, 28, ATOMIC_WRITE, ONLY,
		RC & SROCE_ATOMIC_WRITE_QPTS),

	DATA_OP(UC_SEND_FIRST, 0, 12, SEND, FIRST, UC),
	DATA_OP(UC_SEND_MIDDLE, 0, 12, SEND, MIDDLE, UC),
	DATA_OP(UC_SEND_LAST, 0, 12, SEND, LAST, UC),
	DATA_OP(UC_SEND_LAST_IMM, IMM, 16, SEND, LAST, UC),
	DATA_OP(UC_SEND_ONLY, 0, 12, SEND, ONLY, UC),
	DATA_OP(UC_SEND_ONLY_IMM, IMM, 16, SEND, ONLY, UC),
	DATA_OP(UC_WRITE_FIRST, RETH, 28, WRITE, FIRST, UC),
	DATA_OP(UC_WRITE_MIDDLE, 0, 12, WRITE, MIDDLE, UC),
	DATA_OP(UC_WRITE_LAST, 0, 12, WRITE, LAST, UC),
	DATA_OP(UC_WRITE_LAST_IMM, IMM, 16, WRITE, LAST, UC),
	DATA_OP(UC_WRITE_ONLY, RETH, 28, WRITE, ONLY, UC),
	DATA_OP(UC_WRITE_ONLY_IMM, RETH | IMM, 32, WRITE, ONLY, UC),

	DATA_OP(UD_SEND_ONLY, SROCE_HDR_DETH, 20, SEND, ONLY, SROCE_QPT_UD),
	DATA_OP(UD_SEND_ONLY_IMM, SROCE_HDR_DETH | IMM, 24, SEND, ONLY,
		SROCE_QPT_UD),

	/* Sent by the notification point to any QP type it receives CE on. */
	OP(CNP, SROCE_HDR_CNP_RSVD, 28, CNP, ONLY,
	   SROCE_QPT_RC | SROCE_QPT_UC | SROCE_QPT_UD | SROCE_QPT_XRC, 0, 0),

	/* XRC requests: the RC header set with an XRCETH after the BTH. */
	DATA_OP(XRC_SEND_FIRST, XETH, 16, SEND, FIRST, XRC),
	DATA_OP(XRC_SEND_MIDDLE, XETH, 16, SEND, MIDDLE, XRC),
	DATA_OP(XRC_SEND_LAST, XETH, 16, SEND, LAST, XRC),
	DATA_OP(XRC_SEND_LAST_IMM, XETH | IMM, 20, SEND, LAST, XRC),
	DATA_OP(XRC_SEND_ONLY, XETH, 16, SEND, ONLY, XRC),
	DATA_OP(XRC_SEND_ONLY_IMM, XETH | IMM, 20, SEND, ONLY, XRC),
	DATA_OP(XRC_WRITE_FIRST, XETH | RETH, 32, WRITE, FIRST, XRC),
	DATA_OP(XRC_WRITE_MIDDLE, XETH, 16, WRITE, MIDDLE, XRC),
	DATA_OP(XRC_WRITE_LAST, XETH, 16, WRITE, LAST, XRC),
	DATA_OP(XRC_WRITE_LAST_IMM, XETH | IMM, 20, WRITE, LAST, XRC),
	DATA_OP(XRC_WRITE_ONLY, XETH | RETH, 32, WRITE, ONLY, XRC),
	DATA_OP(XRC_WRITE_ONLY_IMM, XETH | RETH | IMM, 36, WRITE, ONLY, XRC),
	OP(XRC_READ_REQ, XETH | RETH, 32, READ_REQ, ONLY, XRC, 0, 1),
	OP(XRC_CMP_SWAP, XETH | SROCE_HDR_ATOMICETH, 44, ATOMIC, ONLY, XRC,
	   0, 1),
	OP(XRC_FETCH_ADD, XETH | SROCE_HDR_ATOMICETH, 44, ATOMIC, ONLY, XRC,
	   0, 1),
	DATA_OP(XRC_SEND_LAST_INV, XETH | SROCE_HDR_IETH, 20, SEND, LAST, XRC),
	DATA_OP(XRC_SEND_ONLY_INV, XETH | SROCE_HDR_IETH, 20, SEND, ONLY, XRC),
	DATA_OP(XRC_ATOMIC_WRITE, XETH | RETH, 32, ATOMIC_WRITE, ONLY,
		XRC & SROCE_ATOMIC_WRITE_QPTS),
	/* XRC responses: no XRCETH, the INI QP is named by BTH.DestQP. */
	OP(XRC_READ_RESP_FIRST, SROCE_HDR_AETH, 16, READ_RESP, FIRST, XRC,
	   1, 0),
	OP(XRC_READ_RESP_MIDDLE, 0, 12, READ_RESP, MIDDLE, XRC, 1, 0),
	OP(XRC_READ_RESP_LAST, SROCE_HDR_AETH, 16, READ_RESP, LAST, XRC, 1, 0),
	OP(XRC_READ_RESP_ONLY, SROCE_HDR_AETH, 16, READ_RESP, ONLY, XRC, 1, 0),
	OP(XRC_ACK, SROCE_HDR_AETH, 16, ACK, ONLY, XRC, 0, 0),
	OP(XRC_ATOMIC_ACK, SROCE_HDR_AETH | SROCE_HDR_ATOMICACKETH, 24,
	   ATOMIC_ACK, ONLY, XRC, 0, 0),
};

#undef IMM
#undef RETH
#undef XETH
#undef RC
#undef UC
#undef XRC

const struct sroce_opcode_info *sroce_opcode_info(u8 opcode)
{
	const struct sroce_opcode_info *info = &sroce_opcodes[opcode];

	return info->name ? info : NULL;
}

static const char * const sroce_parse_err_names[SROCE_PARSE_ERR_COUNT] = {
	[SROCE_PARSE_OK]		= "ok",
	[SROCE_PARSE_ERR_TOO_SHORT]	= "too_short",
	[SROCE_PARSE_ERR_TVER]		= "bad_tver",
	[SROCE_PARSE_ERR_OPCODE]	= "bad_opcode",
	[SROCE_PARSE_ERR_HDR_TRUNC]	= "hdr_truncated",
	[SROCE_PARSE_ERR_ALIGN]		= "unaligned_len",
	[SROCE_PARSE_ERR_PAD]		= "bad_pad",
	[SROCE_PARSE_ERR_PAYLOAD]	= "unexpected_payload",
	[SROCE_PARSE_ERR_PAYLOAD_LEN]	= "bad_payload_len",
};

const char *sroce_parse_err_name(unsigned int err)
{
	return err < SROCE_PARSE_ERR_COUNT ? sroce_parse_err_names[err] : "?";
}

static void sroce_get_bth(const u8 *p, struct sroce_bth *bth)
{
	bth->opcode = p[0];
	bth->se = p[1] >> 7;
	bth->mig_req = (p[1] >> 6) & 1;
	bth->pad = (p[1] >> 4) & 3;
	bth->tver = p[1] & 0xf;
	bth->pkey = sroce_get_be16(p + 2);
	bth->fecn = p[4] >> 7;
	bth->becn = (p[4] >> 6) & 1;
	bth->dqpn = sroce_get_be24(p + 5);
	bth->ack_req = p[8] >> 7;
	bth->psn = sroce_get_be24(p + 9);
}

/* True if @n is a valid IB path MTU in bytes: 256, 512, 1024, 2048, 4096. */
static bool sroce_is_pmtu(u32 n)
{
	return n >= 256 && n <= 4096 && !(n & (n - 1));
}

static enum sroce_parse_err sroce_check_payload(const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info = pkt->info;
	u32 n = pkt->payload_len;

	/*
	 * READ requests, ACKs, atomics and CNPs are exactly their headers:
	 * the opcode length is the whole packet (AtomicETH is 28 bytes, the
	 * CNP carries exactly 16 reserved bytes).
	 */
	if (!info->payload)
		return n ? SROCE_PARSE_ERR_PAYLOAD : SROCE_PARSE_OK;
	/* One aligned 64-bit value, never more or less (rxe bug class). */
	if (info->kind == SROCE_KIND_ATOMIC_WRITE)
		return n == SROCE_ATOMIC_WRITE_LEN ? SROCE_PARSE_OK :
		       SROCE_PARSE_ERR_PAYLOAD_LEN;
	if (n > SROCE_MAX_PAYLOAD)
		return SROCE_PARSE_ERR_PAYLOAD_LEN;
	switch (info->pos) {
	case SROCE_POS_FIRST:
	case SROCE_POS_MIDDLE:
		/*
		 * A message is cut into PMTU-sized packets, so every packet but
		 * the last carries exactly one PMTU (rxe_resp.c check_rkey()
		 * enforces pktlen == mtu && !pad for the same reason). The PMTU
		 * itself is QP state; that it is one of the five IB MTUs is not.
		 */
		if (!sroce_is_pmtu(n) || pkt->bth.pad)
			return SROCE_PARSE_ERR_PAYLOAD_LEN;
		break;
	case SROCE_POS_LAST:
		/* Whatever is left after whole PMTUs: 1..PMTU bytes. */
		if (!n)
			return SROCE_PARSE_ERR_PAYLOAD_LEN;
		break;
	default:
		break;
	}
	return SROCE_PARSE_OK;
}

enum sroce_parse_err sroce_pkt_parse(const u8 *bth, u32 len,
				     struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info;
	const u8 *p;
	u32 rest;

	if (len < SROCE_BTH_LEN + SROCE_ICRC_LEN)
		return SROCE_PARSE_ERR_TOO_SHORT;

	*pkt = (struct sroce_pkt){ 0 };
	sroce_get_bth(bth, &pkt->bth);
	if (pkt->bth.tver != SROCE_BTH_TVER)
		return SROCE_PARSE_ERR_TVER;
	info = sroce_opcode_info(pkt->bth.opcode);
	if (!info)
		return SROCE_PARSE_ERR_OPCODE;
	pkt->info = info;
	pkt->hdr_len = info->hdr_len;
	if (len < (u32)info->hdr_len + SROCE_ICRC_LEN)
		return SROCE_PARSE_ERR_HDR_TRUNC;

	/*
	 * An IB transport packet is a whole number of 4-byte words (LRH
	 * PktLen counts words and PadCnt exists to get there). Every header
	 * length is a multiple of 4, so payload + pad must be too.
	 */
	rest = len - info->hdr_len - SROCE_ICRC_LEN;
	if (rest & 3)
		return SROCE_PARSE_ERR_ALIGN;
	/*
	 * Never trust PadCnt in the subtraction: payload = len - hdr - pad -
	 * icrc underflowing on a short packet with a non-zero PadCnt is the
	 * rxe payload_size() bug class (fixed upstream only in 7.1).
	 */
	if (pkt->bth.pad > rest)
		return SROCE_PARSE_ERR_PAD;
	pkt->payload_len = rest - pkt->bth.pad;

	p = bth + SROCE_BTH_LEN;
	if (info->hdrs & SROCE_HDR_DETH) {
		pkt->deth.qkey = sroce_get_be32(p);
		pkt->deth.sqpn = sroce_get_be24(p + 5);
		p += SROCE_DETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_XRCETH) {
		/* Reserved byte ignored, as DETH's and the BTH's are. */
		pkt->xrc_srqn = sroce_get_be24(p + 1);
		p += SROCE_XRCETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_RETH) {
		pkt->reth.va = sroce_get_be64(p);
		pkt->reth.rkey = sroce_get_be32(p + 8);
		pkt->reth.len = sroce_get_be32(p + 12);
		p += SROCE_RETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_ATOMICETH) {
		pkt->atomic.va = sroce_get_be64(p);
		pkt->atomic.rkey = sroce_get_be32(p + 8);
		pkt->atomic.swap_add = sroce_get_be64(p + 12);
		pkt->atomic.compare = sroce_get_be64(p + 20);
		p += SROCE_ATOMICETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_AETH) {
		pkt->aeth.syndrome = p[0];
		pkt->aeth.msn = sroce_get_be24(p + 1);
		p += SROCE_AETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_ATOMICACKETH) {
		pkt->atomic_orig = sroce_get_be64(p);
		p += SROCE_ATOMICACKETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_IMMDT) {
		pkt->imm = sroce_get_be32(p);
		p += SROCE_IMMDT_LEN;
	}
	if (info->hdrs & SROCE_HDR_IETH)
		pkt->ieth_rkey = sroce_get_be32(p);

	return sroce_check_payload(pkt);
}

void sroce_put_bth(u8 *p, const struct sroce_bth *bth)
{
	p[0] = bth->opcode;
	p[1] = (u8)((bth->se ? 0x80 : 0) | (bth->mig_req ? 0x40 : 0) |
		    (bth->pad & 3) << 4 | (bth->tver & 0xf));
	sroce_put_be16(p + 2, bth->pkey);
	p[4] = (u8)((bth->fecn ? 0x80 : 0) | (bth->becn ? 0x40 : 0));
	sroce_put_be24(p + 5, bth->dqpn);
	p[8] = bth->ack_req ? 0x80 : 0;
	sroce_put_be24(p + 9, bth->psn);
}

void sroce_put_deth(u8 *p, const struct sroce_deth *deth)
{
	sroce_put_be32(p, deth->qkey);
	p[4] = 0;
	sroce_put_be24(p + 5, deth->sqpn);
}

void sroce_put_xrceth(u8 *p, u32 xrc_srqn)
{
	p[0] = 0;
	sroce_put_be24(p + 1, xrc_srqn);
}

void sroce_put_reth(u8 *p, const struct sroce_reth *reth)
{
	sroce_put_be64(p, reth->va);
	sroce_put_be32(p + 8, reth->rkey);
	sroce_put_be32(p + 12, reth->len);
}

void sroce_put_atomiceth(u8 *p, const struct sroce_atomiceth *ae)
{
	sroce_put_be64(p, ae->va);
	sroce_put_be32(p + 8, ae->rkey);
	sroce_put_be64(p + 12, ae->swap_add);
	sroce_put_be64(p + 20, ae->compare);
}

void sroce_put_aeth(u8 *p, u8 syndrome, u32 msn)
{
	p[0] = syndrome;
	sroce_put_be24(p + 1, msn);
}

void sroce_put_atomicacketh(u8 *p, u64 orig)
{
	sroce_put_be64(p, orig);
}

void sroce_put_immdt(u8 *p, u32 imm)
{
	sroce_put_be32(p, imm);
}

void sroce_put_ieth(u8 *p, u32 rkey)
{
	sroce_put_be32(p, rkey);
}

u32 sroce_pkt_build_hdrs(u8 *buf, u32 buf_len, const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info;
	struct sroce_bth bth = pkt->bth;
	u8 *p = buf + SROCE_BTH_LEN;
	unsigned int i;

	info = sroce_opcode_info(bth.opcode);
	if (!info || buf_len < info->hdr_len)
		return 0;
	bth.tver = SROCE_BTH_TVER;
	bth.pad = sroce_pad_len(pkt->payload_len);
	sroce_put_bth(buf, &bth);
	if (info->hdrs & SROCE_HDR_DETH) {
		sroce_put_deth(p, &pkt->deth);
		p += SROCE_DETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_XRCETH) {
		sroce_put_xrceth(p, pkt->xrc_srqn);
		p += SROCE_XRCETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_RETH) {
		sroce_put_reth(p, &pkt->reth);
		p += SROCE_RETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_ATOMICETH) {
		sroce_put_atomiceth(p, &pkt->atomic);
		p += SROCE_ATOMICETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_AETH) {
		sroce_put_aeth(p, pkt->aeth.syndrome, pkt->aeth.msn);
		p += SROCE_AETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_ATOMICACKETH) {
		sroce_put_atomicacketh(p, pkt->atomic_orig);
		p += SROCE_ATOMICACKETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_IMMDT) {
		sroce_put_immdt(p, pkt->imm);
		p += SROCE_IMMDT_LEN;
	}
	if (info->hdrs & SROCE_HDR_IETH) {
		sroce_put_ieth(p, pkt->ieth_rkey);
		p += SROCE_IETH_LEN;
	}
	if (info->hdrs & SROCE_HDR_CNP_RSVD) {
		for (i = 0; i < SROCE_CNP_RSVD_LEN; i++)
			p[i] = 0;
	}
	return info->hdr_len;
}
