/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 transport headers: opcode properties, a parser for the UDP payload
 * (BTH .. ICRC) and the matching header builders.
 *
 * The parser is the first code that touches bytes from the network. It takes
 * (buf, len), reads nothing beyond len, trusts no length or count field, and
 * says why it rejected a packet with an enum sroce_parse_err (named by
 * sroce_parse_err_name() for the host tests and fuzzers). The receive path
 * counts every rejection as rcvd_malformed, whatever the reason. It needs no
 * QP state; checks that do (P_Key, PSN, PMTU, R_Key) belong to the receive
 * path.
 */
#ifndef SROCE_HDR_H
#define SROCE_HDR_H

#include "sroce_proto.h"

#define SROCE_UDP_DPORT		4791

#define SROCE_BTH_LEN		12
#define SROCE_DETH_LEN		8
#define SROCE_XRCETH_LEN	4
#define SROCE_RETH_LEN		16
#define SROCE_ATOMICETH_LEN	28
#define SROCE_AETH_LEN		4
#define SROCE_ATOMICACKETH_LEN	8
#define SROCE_IMMDT_LEN		4
#define SROCE_IETH_LEN		4
/* RoCEv2 CNP (Annex A17): BTH followed by 16 reserved bytes, no payload. */
#define SROCE_CNP_RSVD_LEN	16
#define SROCE_ICRC_LEN		4
/* Longest BTH + extension headers of any opcode: XRC atomic request. */
#define SROCE_MAX_HDR_LEN	(SROCE_BTH_LEN + SROCE_XRCETH_LEN + \
				 SROCE_ATOMICETH_LEN)
/* ATOMIC_WRITE (IBTA 1.5) carries exactly one 8-byte value as payload. */
#define SROCE_ATOMIC_WRITE_LEN	8
/* Largest IB path MTU; no RoCE packet carries more payload than this. */
#define SROCE_MAX_PAYLOAD	4096
/* Longest RoCE packet, BTH through ICRC: anything longer is not one. */
#define SROCE_MAX_PKT_LEN	(SROCE_MAX_HDR_LEN + SROCE_MAX_PAYLOAD + 3 + \
				 SROCE_ICRC_LEN)

/* BTH.TVer: the only transport header version defined. */
#define SROCE_BTH_TVER		0
#define SROCE_DEFAULT_PKEY	0xffff
#define SROCE_QPN_MASK		0xffffff

/* Transport in opcode bits 7:5 (include/rdma/ib_pack.h). */
#define SROCE_TRANSPORT_MASK	0xe0
#define SROCE_TRANSPORT_RC	0x00
#define SROCE_TRANSPORT_UC	0x20
#define SROCE_TRANSPORT_RD	0x40
#define SROCE_TRANSPORT_UD	0x60
#define SROCE_TRANSPORT_CNP	0x80
#define SROCE_TRANSPORT_XRC	0xa0

enum sroce_opcode {
	SROCE_OP_RC_SEND_FIRST		= 0x00,
	SROCE_OP_RC_SEND_MIDDLE		= 0x01,
	SROCE_OP_RC_SEND_LAST		= 0x02,
	SROCE_OP_RC_SEND_LAST_IMM	= 0x03,
	SROCE_OP_RC_SEND_ONLY		= 0x04,
	SROCE_OP_RC_SEND_ONLY_IMM	= 0x05,
	SROCE_OP_RC_WRITE_FIRST		= 0x06,
	SROCE_OP_RC_WRITE_MIDDLE	= 0x07,
	SROCE_OP_RC_WRITE_LAST		= 0x08,
	SROCE_OP_RC_WRITE_LAST_IMM	= 0x09,
	SROCE_OP_RC_WRITE_ONLY		= 0x0a,
	SROCE_OP_RC_WRITE_ONLY_IMM	= 0x0b,
	SROCE_OP_RC_READ_REQ		= 0x0c,
	SROCE_OP_RC_READ_RESP_FIRST	= 0x0d,
	SROCE_OP_RC_READ_RESP_MIDDLE	= 0x0e,
	SROCE_OP_RC_READ_RESP_LAST	= 0x0f,
	SROCE_OP_RC_READ_RESP_ONLY	= 0x10,
	SROCE_OP_RC_ACK			= 0x11,
	SROCE_OP_RC_ATOMIC_ACK		= 0x12,
	SROCE_OP_RC_CMP_SWAP		= 0x13,
	SROCE_OP_RC_FETCH_ADD		= 0x14,
	SROCE_OP_RC_SEND_LAST_INV	= 0x16,
	SROCE_OP_RC_SEND_ONLY_INV	= 0x17,
	/* IBTA 1.5: RETH + 8 bytes of payload, answered by a plain ACK. */
	SROCE_OP_RC_ATOMIC_WRITE	= 0x1d,

	SROCE_OP_UC_SEND_FIRST		= 0x20,
	SROCE_OP_UC_SEND_MIDDLE		= 0x21,
	SROCE_OP_UC_SEND_LAST		= 0x22,
	SROCE_OP_UC_SEND_LAST_IMM	= 0x23,
	SROCE_OP_UC_SEND_ONLY		= 0x24,
	SROCE_OP_UC_SEND_ONLY_IMM	= 0x25,
	SROCE_OP_UC_WRITE_FIRST		= 0x26,
	SROCE_OP_UC_WRITE_MIDDLE	= 0x27,
	SROCE_OP_UC_WRITE_LAST		= 0x28,
	SROCE_OP_UC_WRITE_LAST_IMM	= 0x29,
	SROCE_OP_UC_WRITE_ONLY		= 0x2a,
	SROCE_OP_UC_WRITE_ONLY_IMM	= 0x2b,

	SROCE_OP_UD_SEND_ONLY		= 0x64,
	SROCE_OP_UD_SEND_ONLY_IMM	= 0x65,

	/*
	 * RoCEv2 CNP (Annex A17.9.3). Not IB_OPCODE_CNP (0x80), which is the
	 * native-IB CNP of IBTA 1.3 A10.3.2.
	 */
	SROCE_OP_CNP			= 0x81,

	/*
	 * XRC (IBTA vol. 1 ch. 9, opcode bits 7:5 = 101): the RC operations
	 * with the same low bits. Requests carry an XRCETH (the target XRC
	 * SRQ) right after the BTH; responses are exactly RC's.
	 */
	SROCE_OP_XRC_SEND_FIRST		= 0xa0,
	SROCE_OP_XRC_SEND_MIDDLE	= 0xa1,
	SROCE_OP_XRC_SEND_LAST		= 0xa2,
	SROCE_OP_XRC_SEND_LAST_IMM	= 0xa3,
	SROCE_OP_XRC_SEND_ONLY		= 0xa4,
	SROCE_OP_XRC_SEND_ONLY_IMM	= 0xa5,
	SROCE_OP_XRC_WRITE_FIRST	= 0xa6,
	SROCE_OP_XRC_WRITE_MIDDLE	= 0xa7,
	SROCE_OP_XRC_WRITE_LAST		= 0xa8,
	SROCE_OP_XRC_WRITE_LAST_IMM	= 0xa9,
	SROCE_OP_XRC_WRITE_ONLY		= 0xaa,
	SROCE_OP_XRC_WRITE_ONLY_IMM	= 0xab,
	SROCE_OP_XRC_READ_REQ		= 0xac,
	SROCE_OP_XRC_READ_RESP_FIRST	= 0xad,
	SROCE_OP_XRC_READ_RESP_MIDDLE	= 0xae,
	SROCE_OP_XRC_READ_RESP_LAST	= 0xaf,
	SROCE_OP_XRC_READ_RESP_ONLY	= 0xb0,
	SROCE_OP_XRC_ACK		= 0xb1,
	SROCE_OP_XRC_ATOMIC_ACK		= 0xb2,
	SROCE_OP_XRC_CMP_SWAP		= 0xb3,
	SROCE_OP_XRC_FETCH_ADD		= 0xb4,
	SROCE_OP_XRC_SEND_LAST_INV	= 0xb6,
	SROCE_OP_XRC_SEND_ONLY_INV	= 0xb7,
	SROCE_OP_XRC_ATOMIC_WRITE	= 0xbd,
};

/* Extension headers after the BTH, in this (wire) order. */
enum sroce_hdr_mask {
	SROCE_HDR_DETH		= 1u << 0,
	SROCE_HDR_XRCETH	= 1u << 1,
	SROCE_HDR_RETH		= 1u << 2,
	SROCE_HDR_ATOMICETH	= 1u << 3,
	SROCE_HDR_AETH		= 1u << 4,
	SROCE_HDR_ATOMICACKETH	= 1u << 5,
	SROCE_HDR_IMMDT		= 1u << 6,
	SROCE_HDR_IETH		= 1u << 7,
	SROCE_HDR_CNP_RSVD	= 1u << 8,
};

enum sroce_op_kind {
	SROCE_KIND_SEND,
	SROCE_KIND_WRITE,
	SROCE_KIND_READ_REQ,
	SROCE_KIND_READ_RESP,
	SROCE_KIND_ACK,
	SROCE_KIND_ATOMIC,
	SROCE_KIND_ATOMIC_ACK,
	SROCE_KIND_CNP,
	/* RETH + 8-byte payload, acknowledged like a WRITE (IBTA 1.5). */
	SROCE_KIND_ATOMIC_WRITE,
};

/* Position of the packet in its message; single-packet opcodes are ONLY. */
enum sroce_op_pos {
	SROCE_POS_FIRST,
	SROCE_POS_MIDDLE,
	SROCE_POS_LAST,
	SROCE_POS_ONLY,
};

/* QP types an opcode may arrive on, as a mask. */
enum sroce_qpt_mask {
	SROCE_QPT_RC	= 1u << 0,
	SROCE_QPT_UC	= 1u << 1,
	SROCE_QPT_UD	= 1u << 2,
	/* XRC INI (responses) and XRC TGT (requests) QPs. */
	SROCE_QPT_XRC	= 1u << 3,
};

/* QP types that accept ATOMIC_WRITE (IBTA 1.5): the reliable ones. */
#define SROCE_ATOMIC_WRITE_QPTS	(SROCE_QPT_RC | SROCE_QPT_XRC)

struct sroce_opcode_info {
	const char *name;
	u16 hdrs;	/* enum sroce_hdr_mask */
	u8 hdr_len;	/* BTH through the last extension header */
	u8 kind;	/* enum sroce_op_kind */
	u8 pos;		/* enum sroce_op_pos */
	u8 qpts;	/* enum sroce_qpt_mask */
	u8 payload;	/* 1: may carry payload bytes */
	u8 request;	/* 1: requester to responder (CNP: 0) */
};

/* NULL for reserved, RD and other opcodes sroce does not implement. */
const struct sroce_opcode_info *sroce_opcode_info(u8 opcode);

/* One-bit fields are u8 0/1 rather than bool to keep the layout fixed. */
struct sroce_bth {
	u8 opcode;
	u8 se;
	u8 mig_req;
	u8 pad;		/* PadCnt, 0..3 */
	u8 tver;
	u8 fecn;
	u8 becn;
	u8 ack_req;
	u16 pkey;
	u32 dqpn;	/* 24 bits */
	u32 psn;	/* 24 bits */
};

struct sroce_deth {
	u32 qkey;
	u32 sqpn;	/* 24 bits */
};

struct sroce_reth {
	u64 va;
	u32 rkey;
	u32 len;
};

struct sroce_atomiceth {
	u64 va;
	u32 rkey;
	u64 swap_add;
	u64 compare;
};

struct sroce_aeth {
	u8 syndrome;
	u32 msn;	/* 24 bits */
};

/*
 * A parsed packet. Only the extension headers named in info->hdrs are
 * meaningful; the others are left zeroed. imm and ieth_rkey hold the wire
 * value as a number (the first byte on the wire is bits 31:24).
 */
struct sroce_pkt {
	const struct sroce_opcode_info *info;
	struct sroce_bth bth;
	struct sroce_deth deth;
	struct sroce_reth reth;
	struct sroce_atomiceth atomic;
	struct sroce_aeth aeth;
	u64 atomic_orig;	/* AtomicAckETH */
	u32 imm;		/* ImmDt */
	u32 ieth_rkey;		/* IETH */
	u32 xrc_srqn;		/* XRCETH: XRC SRQ number, 24 bits */
	u32 hdr_len;		/* == payload offset from the BTH */
	u32 payload_len;	/* without pad and ICRC */
};

enum sroce_parse_err {
	SROCE_PARSE_OK = 0,
	SROCE_PARSE_ERR_TOO_SHORT,	/* < BTH + ICRC */
	SROCE_PARSE_ERR_TVER,		/* BTH.TVer != 0 */
	SROCE_PARSE_ERR_OPCODE,		/* reserved or unsupported opcode */
	SROCE_PARSE_ERR_HDR_TRUNC,	/* < BTH + ext headers + ICRC */
	SROCE_PARSE_ERR_ALIGN,		/* not a whole number of 4-byte words */
	SROCE_PARSE_ERR_PAD,		/* PadCnt > bytes after the headers */
	SROCE_PARSE_ERR_PAYLOAD,	/* payload on an opcode without one */
	SROCE_PARSE_ERR_PAYLOAD_LEN,	/* length impossible for the opcode */
	SROCE_PARSE_ERR_COUNT
};

/* Short stable name of a parse error (tests, fuzzers); "?" if out of range. */
const char *sroce_parse_err_name(unsigned int err);

/*
 * Parse the UDP payload of a RoCEv2 packet: @bth points at the BTH, @len
 * counts everything up to and including the ICRC. Does not check the ICRC.
 * On error *pkt is partially filled and must not be used.
 */
enum sroce_parse_err sroce_pkt_parse(const u8 *bth, u32 len,
				     struct sroce_pkt *pkt);

/* PadCnt for a payload: pads it to a whole number of 4-byte words. */
static inline u8 sroce_pad_len(u32 payload_len)
{
	return (u8)(-payload_len & 3);
}

/*
 * Header writers. Each writes exactly its *_LEN bytes, zeroing reserved
 * fields and masking 24-bit fields to 24 bits.
 */
void sroce_put_bth(u8 *p, const struct sroce_bth *bth);
void sroce_put_deth(u8 *p, const struct sroce_deth *deth);
void sroce_put_xrceth(u8 *p, u32 xrc_srqn);
void sroce_put_reth(u8 *p, const struct sroce_reth *reth);
void sroce_put_atomiceth(u8 *p, const struct sroce_atomiceth *ae);
void sroce_put_aeth(u8 *p, u8 syndrome, u32 msn);
void sroce_put_atomicacketh(u8 *p, u64 orig);
void sroce_put_immdt(u8 *p, u32 imm);
void sroce_put_ieth(u8 *p, u32 rkey);

/*
 * Write BTH and the extension headers of pkt->bth.opcode into @buf. TVer is
 * always 0 and PadCnt is derived from pkt->payload_len, so the result is
 * consistent with the payload the caller appends. Returns the header length,
 * or 0 if the opcode is unknown or @buf_len is too small.
 */
u32 sroce_pkt_build_hdrs(u8 *buf, u32 buf_len, const struct sroce_pkt *pkt);

#endif /* SROCE_HDR_H */
