/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * AETH syndrome (IBTA 9.7.5.1): bit 7 reserved 0 (ignored on receipt),
 * bits 6:5 the type, bits 4:0 a credit code (ACK), RNR timer code (RNR
 * NAK) or NAK code. sroce does no end-to-end flow control: its ACKs carry
 * the "invalid" credit code, and its requester ignores credits, as rxe's
 * does. Also the two timer encodings a responder and requester exchange:
 * the RNR NAK timer table and the local ACK timeout (4.096 us * 2^n).
 */
#ifndef SROCE_AETH_H
#define SROCE_AETH_H

#include "sroce_proto.h"

enum sroce_aeth_type {
	SROCE_AETH_ACK		= 0,
	SROCE_AETH_RNR_NAK	= 1,
	SROCE_AETH_RESERVED	= 2,
	SROCE_AETH_NAK		= 3,
};

enum sroce_nak_code {
	SROCE_NAK_PSN_SEQ_ERR		= 0,
	SROCE_NAK_INVALID_REQ		= 1,
	SROCE_NAK_REMOTE_ACCESS_ERR	= 2,
	SROCE_NAK_REMOTE_OP_ERR		= 3,
	SROCE_NAK_INVALID_RD_REQ	= 4,
};

#define SROCE_AETH_VALUE_MASK	0x1f
/* Credit code 31: "invalid": the responder does not do flow control. */
#define SROCE_CREDIT_INVALID	31
/* A RNR timer code of 0 is the longest delay, 655.36 ms. */
#define SROCE_RNR_TIMER_MAX_USEC 655360u

static inline u8 sroce_aeth_syndrome(enum sroce_aeth_type type, u8 value)
{
	return (u8)((type & 3) << 5 | (value & SROCE_AETH_VALUE_MASK));
}

static inline u8 sroce_aeth_ack(u8 credit_code)
{
	return sroce_aeth_syndrome(SROCE_AETH_ACK, credit_code);
}

static inline u8 sroce_aeth_rnr_nak(u8 timer_code)
{
	return sroce_aeth_syndrome(SROCE_AETH_RNR_NAK, timer_code);
}

static inline u8 sroce_aeth_nak(enum sroce_nak_code code)
{
	return sroce_aeth_syndrome(SROCE_AETH_NAK, (u8)code);
}

static inline enum sroce_aeth_type sroce_aeth_type(u8 syndrome)
{
	return (enum sroce_aeth_type)((syndrome >> 5) & 3);
}

static inline u8 sroce_aeth_value(u8 syndrome)
{
	return syndrome & SROCE_AETH_VALUE_MASK;
}

/* Delay in microseconds for a RNR timer code (only bits 4:0 used). */
u32 sroce_rnr_timer_usec(u8 code);

/*
 * Local ACK timeout in ns: 4096 ns * 2^n, 0 for n == 0 (timer disabled).
 * n is a 5-bit field; larger values are clamped to 31, whose 2^43 ns
 * (about 2.4 hours) still fits in a u64 with room to spare.
 */
static inline u64 sroce_ack_timeout_ns(u8 n)
{
	if (!n)
		return 0;
	if (n > 31)
		n = 31;
	return 4096ull << n;
}

#endif /* SROCE_AETH_H */
