// SPDX-License-Identifier: GPL-2.0
/*
 * sroce UD (and GSI): one WQE is one packet, sent to the address vector
 * its WQE names; a receive gets the GRH first. No acknowledgements, no
 * PSN checks, no RNR: a packet with nowhere to go is dropped and counted.
 */

#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>

#include "sroce.h"
#include "sroce_cq.h"
#include "sroce_qp.h"
#include "sroce_resp.h"
#include "sroce_stats.h"
#include "sroce_transport.h"
#include "proto/sroce_psn.h"
#include "proto/sroce_udp.h"
#include "proto/sroce_wr.h"

/* A UD QP's route cache follows the destination of the WQE being sent. */
static void sroce_ud_route(struct sroce_qp *qp,
			   const struct sroce_ud_dest *d)
{
	u16 sport = sroce_udp_sport_for_qp(d->path.flow_label,
					   qp->ibqp.qp_num, d->dqpn);

	/* The requester is this path's only writer: it may read it as is. */
	if (!memcmp(&qp->av.p, &d->path, sizeof(d->path)) &&
	    qp->av.sport == sport)
		return;
	write_seqlock_bh(&qp->av.lock);
	if (memcmp(&qp->av.p, &d->path, sizeof(d->path))) {
		qp->av.p = d->path;
		dst_cache_reset(&qp->av.dst);
	}
	qp->av.sport = sport;
	write_sequnlock_bh(&qp->av.lock);
}

/*
 * The headers of WQE @w's one packet of @len bytes to @d (the PSN is set
 * already). Returns 0 or the ib_wc_status the WQE completes with.
 */
static int sroce_ud_build(struct sroce_qp *qp, const struct sroce_send_wqe *w,
			  u32 len, const struct sroce_ud_dest *d,
			  struct sroce_pkt *pkt)
{
	u32 mtu;
	int op;

	mtu = sroce_ib_mtu_bytes(sroce_ib_mtu_for_netdev(READ_ONCE(qp->sdev->ndev->mtu)));
	if (len > mtu)
		return IB_WC_LOC_LEN_ERR;
	op = sroce_wr_wire_opcode(SROCE_TRANSPORT_UD, w->opcode, true, true);
	if (WARN_ON_ONCE(op < 0)) {
		/* sroce_sq_fetch_one() let through what UD cannot send. */
		return IB_WC_LOC_QP_OP_ERR;
	}
	pkt->bth.opcode = op;
	pkt->bth.pkey = SROCE_DEFAULT_PKEY;
	pkt->bth.dqpn = d->dqpn;
	pkt->bth.se = !!(w->flags & SROCE_SEND_SOLICITED);
	pkt->deth.qkey = d->qkey;
	pkt->deth.sqpn = qp->ibqp.qp_num;
	pkt->imm = be32_to_cpu((__force __be32)w->imm_or_inv);
	pkt->payload_len = len;
	return 0;
}

/*
 * UD: one WQE is one packet, complete once it is handed to the IP stack
 * (unreliable: a packet dropped later is not the sender's error).
 */
int sroce_ud_send_one(struct sroce_qp *qp)
{
	struct sroce_txpkt tp = {};
	struct sroce_pkt *pkt = &tp.pkt;
	struct sroce_ud_dest dest;
	struct sroce_send_wqe *w;
	struct sroce_wqe_st *st;
	int status = IB_WC_SUCCESS, r;
	u32 idx, len;

	spin_lock_bh(&qp->sq_lock);
	if (READ_ONCE(qp->state) != IB_QPS_RTS) {
		spin_unlock_bh(&qp->sq_lock);
		return 0;
	}
	r = sroce_sq_next(qp, &idx);
	if (r <= 0) {
		spin_unlock_bh(&qp->sq_lock);
		if (r < 0)
			sroce_qp_fatal(qp);
		return 0;
	}
	st = sroce_wst(qp, idx);
	w = sroce_sq_shadow(qp, idx);
	qp->req.cur++;
	if (st->state == SROCE_WQE_DONE) {
		/* Failed validation at fetch. */
		sroce_sq_retire_unlock(qp);
		return 1;
	}
	dest = qp->ud_dest[idx & (qp->sq.num_slots - 1)];
	len = st->len;
	pkt->bth.psn = qp->req.psn;
	qp->req.psn = sroce_psn_add(qp->req.psn, 1);
	qp->req.busy_idx = idx;
	qp->req.busy = true;
	spin_unlock_bh(&qp->sq_lock);

	status = sroce_ud_build(qp, w, len, &dest, pkt);
	if (status)
		goto done;
	sroce_ud_route(qp, &dest);
	if (sroce_tx_alloc(qp, &tp, GFP_KERNEL)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		goto done;
	}
	if (len) {
		status = sroce_wqe_data(qp, w, 0, tp.payload, len,
					SROCE_FROM_MR, 0);
		if (status) {
			sroce_tx_free(&tp);
			goto done;
		}
	}
	sroce_tx_send(qp, &tp);
done:
	spin_lock_bh(&qp->sq_lock);
	qp->req.busy = false;
	/* A flush meanwhile has completed it (its slot stayed ours). */
	if ((s32)(idx - qp->comp.idx) >= 0 && st->state != SROCE_WQE_DONE) {
		st->state = SROCE_WQE_DONE;
		st->status = status;
	}
	sroce_sq_retire_unlock(qp);
	return 1;
}

/*
 * sroce_ud_rcv - deliver a UD SEND (softirq)
 *
 * The receive buffer gets the 40-byte GRH first: the IPv6 header, or for
 * IPv4 20 zero bytes and the IPv4 header (union rdma_network_hdr), which is
 * where the kernel's ib_init_ah_attr_from_wc() and every RoCE consumer
 * expect it. No receive WQE: the packet is dropped (UD has no RNR).
 */
void sroce_ud_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		  const struct sroce_pkt *pkt, const u8 *payload)
{
	struct net_device *ndev = qp->sdev->ndev;
	union rdma_network_hdr hdr;
	struct sroce_cqe cqe = {
		.opcode = IB_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = pkt->deth.sqpn,
		.wc_flags = SROCE_WC_F_GRH,
		.port_num = 1,
	};
	bool ipv6 = ip_hdr(skb)->version == 6;
	int r, status;

	if (!sroce_resp_state_ok(qp)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QP_STATE);
		return;
	}
	if (pkt->deth.qkey != qp->attr.qkey) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RX_BAD_QKEY);
		return;
	}
	memset(&hdr, 0, sizeof(hdr));
	if (ipv6)
		memcpy(&hdr.ibgrh, ipv6_hdr(skb), sizeof(hdr.ibgrh));
	else
		memcpy(&hdr.roce4grh, ip_hdr(skb), sizeof(hdr.roce4grh));
	cqe.network_hdr_type = ipv6 ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_IPV4;
	/*
	 * A RoCE packet has no SL. ConnectX reports in its place what the
	 * packet was (bit 3: RoCEv2, in UDP; bits 2:0: 1 IPv6, 2 IPv4), and
	 * UCX before 1.19 reads it there to find the destination address in
	 * the GRH area: with 0 it reads an IPv4 packet's address as IPv6 and
	 * drops every datagram (its UD transport never connects).
	 */
	cqe.sl = SROCE_WC_SL_ROCEV2 | (ipv6 ? SROCE_WC_SL_IPV6 : SROCE_WC_SL_IPV4);
	if (is_vlan_dev(ndev))
		cqe.vlan_id = vlan_dev_vlan_id(ndev);
	if (pkt->info->hdrs & SROCE_HDR_IMMDT) {
		cqe.wc_flags |= SROCE_WC_F_WITH_IMM;
		cqe.imm_or_inv = (__force u32)cpu_to_be32(pkt->imm);
	}

	spin_lock_bh(&qp->resp_lock);
	r = sroce_recv_take(qp);
	if (r <= 0) {
		spin_unlock_bh(&qp->resp_lock);
		if (r < 0) {
			sroce_qp_fatal(qp);
			return;
		}
		sroce_stat_inc(qp->sdev, SROCE_CNT_UD_NO_RWQE);
		return;
	}
	/*
	 * A datagram longer than the receive WQE is dropped and the WQE kept
	 * for the next one (IBTA class D; as rdma_rxe): completing it in
	 * error would lose the buffer for ib_mad's GSI QP for good.
	 */
	if (sroce_recv_room(qp) < sizeof(hdr) + pkt->payload_len) {
		spin_unlock_bh(&qp->resp_lock);
		sroce_stat_inc(qp->sdev, SROCE_CNT_UD_LEN_DROP);
		return;
	}
	status = sroce_recv_place(qp, (const u8 *)&hdr, sizeof(hdr));
	if (!status)
		status = sroce_recv_place(qp, payload, pkt->payload_len);
	cqe.status = status ? status : IB_WC_SUCCESS;
	cqe.byte_len = qp->resp.rwqe_offset;
	sroce_recv_post_cqe(qp, &cqe, pkt->bth.se);
	spin_unlock_bh(&qp->resp_lock);
	/* A receive completed in error takes the QP to the error state. */
	if (status)
		sroce_qp_error(qp);
}
