// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC responder: requests placed ahead. A MIDDLE or LAST of the SEND
 * or WRITE being received that arrives ahead of the expected PSN (its
 * predecessor lost or late) is placed at once where it belongs, if it will
 * surely be accepted in sequence (the rules: proto/sroce_responder.h);
 * when the awaited request arrives, the run placed after it is consumed
 * with it: ePSN moves past the whole run, and the copies of it that the
 * requester resends are duplicates. resp_lock held throughout.
 */

#include "sroce.h"
#include "sroce_mr.h"
#include "sroce_qp.h"
#include "sroce_resp.h"
#include "sroce_stats.h"
#include "sroce_transport.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_range.h"

/*
 * Place request @pkt, @d PSNs ahead of ePSN, if it is a MIDDLE or the LAST
 * of the SEND or WRITE being received (proto/sroce_responder.h). Only what
 * will surely be accepted in sequence is placed; anything else is dropped,
 * and judged when it comes again in sequence. A SEND's LAST that
 * invalidates an MR and a WRITE's LAST with immediate (which takes a
 * receive WQE, perhaps none: RNR) are not placed. resp_lock held.
 */
bool sroce_resp_place_ahead(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			    const u8 *payload, u32 d)
{
	struct sroce_resp_ahead *a = &qp->resp.ahead;
	u32 len = pkt->payload_len, mtu = qp->mtu;
	u8 pos = pkt->info->pos;
	u32 last_d, last_len;
	struct sroce_mr *mr;
	u64 off;

	if (qp->ibqp.qp_type != IB_QPT_RC || d > SROCE_AHEAD_MAX)
		return false;
	off = (u64)d * mtu;
	if (pkt->info->kind == SROCE_KIND_SEND && qp->resp.in_send &&
	    !qp->resp.in_write) {
		if (pkt->info->hdrs & SROCE_HDR_IETH)
			return false;
		last_d = a->last ? sroce_psn_sub(a->last_psn, qp->resp.epsn) :
				   SROCE_RESP_END_UNKNOWN;
		if (!sroce_resp_ahead_ok(pos, d, len, mtu, last_d, 0, a->have) ||
		    qp->resp.rwqe_offset + off + len > sroce_recv_room(qp) ||
		    !sroce_msg_len_ok(qp->resp.rwqe_offset + off + len,
				      SROCE_MAX_MSG_SIZE) ||
		    sroce_recv_place_at(qp, qp->resp.rwqe_offset + off, payload,
					len, NULL))
			return false;
	} else if (pkt->info->kind == SROCE_KIND_WRITE && qp->resp.in_write &&
		   !qp->resp.in_send && qp->resp.write_resid &&
		   !(pkt->info->hdrs & SROCE_HDR_IMMDT)) {
		sroce_resp_write_end(qp->resp.write_resid, mtu, &last_d,
				     &last_len);
		if (!sroce_resp_ahead_ok(pos, d, len, mtu, last_d, last_len,
					 a->have))
			return false;
		mr = sroce_resp_rkey(qp, qp->resp.write_rkey,
				     qp->resp.write_va + off, len,
				     IB_ACCESS_REMOTE_WRITE);
		if (!mr)
			return false;
		sroce_mr_copy(mr, qp->resp.write_va + off, (void *)payload, len,
			      SROCE_TO_MR);
		sroce_mr_put(mr);
	} else {
		return false;
	}
	a->kind = pkt->info->kind;
	a->have |= 1ULL << (d - 1);
	if (pkt->bth.ack_req)
		a->ackreq |= 1ULL << (d - 1);
	if (pos == SROCE_POS_LAST) {
		a->last = true;
		a->last_psn = pkt->bth.psn;
		a->last_len = len;
		a->last_se = pkt->bth.se;
		a->last_imm = pkt->info->hdrs & SROCE_HDR_IMMDT;
		a->imm = pkt->imm;
	}
	sroce_stat_inc(qp->sdev, SROCE_CNT_OOS_PLACED);
	return true;
}

/*
 * The awaited request @pkt was executed and ePSN moved past it: if it was
 * a MIDDLE of the message the packets placed ahead belong to, the run of
 * them that follows it is done with too, ePSN moves past them, and the
 * message completes if its LAST is among them. Whatever else was placed
 * is forgotten: its message is over, or the request was of another kind
 * (a WRITE's FIRST in the middle of a SEND). Returns whether a packet of
 * the run asked for an ACK. resp_lock held.
 */
bool sroce_resp_ahead_run(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_resp_ahead *a = &qp->resp.ahead;
	bool send = a->kind == SROCE_KIND_SEND;
	bool ack = false;
	u32 k;

	if (!a->have)
		return false;
	if (pkt->info->kind != a->kind || pkt->info->pos != SROCE_POS_MIDDLE ||
	    qp->resp.in_send != send || qp->resp.in_write == send)
		goto forget;
	k = sroce_ahead_run(&a->have);
	ack = sroce_ahead_consume(&a->ackreq, k);
	for (; k; k--) {
		u32 psn = qp->resp.epsn;
		bool last = a->last && psn == a->last_psn;
		u32 len = last ? a->last_len : qp->mtu;

		qp->resp.epsn = sroce_psn_add(psn, 1);
		if (!send) {
			qp->resp.write_va += len;
			qp->resp.write_resid -= len;
			if (!last)
				continue;
			qp->resp.in_write = false;
		} else {
			qp->resp.rwqe_offset += len;
			if (!last)
				continue;
			sroce_recv_complete(qp, IB_WC_SUCCESS, IB_WC_RECV,
					    qp->resp.rwqe_offset,
					    a->last_imm ? SROCE_WC_F_WITH_IMM : 0,
					    a->last_imm ?
					    (__force u32)cpu_to_be32(a->imm) : 0,
					    a->last_se);
		}
		qp->resp.msn = sroce_msn_inc(qp->resp.msn);
		goto forget;
	}
	return ack;
forget:
	memset(a, 0, sizeof(*a));
	return ack;
}
