// SPDX-License-Identifier: GPL-2.0
/*
 * sroce receive path: UDP 4791 encapsulation hook -> device -> ICRC ->
 * header validation -> QP -> responder or completer.
 *
 * Everything here comes from the network: every length is checked before
 * it is used, and every drop is counted.
 */

#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>

#include "sroce.h"
#include "sroce_mcast.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_icrc.h"

/*
 * The device a packet is for: the one on the netdev it arrived on, or, for
 * traffic between local addresses (which arrives on the loopback device),
 * the one on the netdev that owns the destination address.
 */
static struct ib_device *sroce_rx_device(struct sk_buff *skb)
{
	const enum rdma_driver_id id = (enum rdma_driver_id)SROCE_DRIVER_ID;
	struct net_device *ndev = skb->dev;
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(ndev, id);
	if (ibdev || !(ndev->flags & IFF_LOOPBACK))
		return ibdev;

	if (ip_hdr(skb)->version == 4) {
		ndev = ip_dev_find(dev_net(skb->dev), ip_hdr(skb)->daddr);
		if (!ndev)
			return NULL;
		ibdev = ib_device_get_by_netdev(ndev, id);
		dev_put(ndev);
		return ibdev;
	}
#if IS_ENABLED(CONFIG_IPV6)
	rcu_read_lock();
	ndev = ipv6_dev_find(dev_net(skb->dev), &ipv6_hdr(skb)->daddr, NULL);
	ibdev = ndev ? ib_device_get_by_netdev(ndev, id) : NULL;
	rcu_read_unlock();
	return ibdev;
#else
	return NULL;
#endif
}

static bool sroce_rx_pkey_ok(u16 pkey)
{
	/* Only the default partition exists; membership bit ignored. */
	return (pkey & 0x7fff) == 0x7fff;
}

/* May @pkt's opcode arrive at this connected QP? */
static bool sroce_rx_qp_accepts(const struct sroce_qp *qp,
				const struct sroce_pkt *pkt)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return pkt->info->qpts & SROCE_QPT_RC;
	case IB_QPT_UC:
		return pkt->info->qpts & SROCE_QPT_UC;
	case IB_QPT_XRC_INI:
		/* XRC initiators only send: they take responses... */
		return pkt->info->qpts & SROCE_QPT_XRC && !pkt->info->request;
	case IB_QPT_XRC_TGT:
		/* ...and targets only respond. */
		return pkt->info->qpts & SROCE_QPT_XRC && pkt->info->request;
	default:
		return false;
	}
}

/*
 * Did @skb come from @qp's peer, to @qp's address? A connected QP takes
 * packets from the path it was given at RTR only (as rdma_rxe does): the
 * port is open to every local process and to the network, and QPNs and
 * PSNs are no secret.
 */
static bool sroce_rx_from_peer(struct sroce_qp *qp, const struct sk_buff *skb)
{
	struct sroce_path p;
	u16 sport;

	sroce_av_read(&qp->av, &p, &sport);
	if (ip_hdr(skb)->version == 4)
		return !p.ipv6 && ip_hdr(skb)->saddr == p.daddr.v4 &&
		       ip_hdr(skb)->daddr == p.saddr.v4;
	return p.ipv6 && ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &p.daddr.v6) &&
	       ipv6_addr_equal(&ipv6_hdr(skb)->daddr, &p.saddr.v6);
}

/* The packet arrived with Congestion Experienced in its IP header. */
static bool sroce_rx_ce(const struct sk_buff *skb)
{
	u8 dsfield = ip_hdr(skb)->version == 4 ? ip_hdr(skb)->tos :
			     ipv6_get_dsfield(ipv6_hdr(skb));

	return (dsfield & INET_ECN_MASK) == INET_ECN_CE;
}

static void sroce_rx_dispatch(struct sroce_dev *sdev, struct sk_buff *skb,
			      const struct sroce_pkt *pkt, const u8 *payload)
{
	struct sroce_qp *qp;
	bool ce;

	if (!sroce_rx_pkey_ok(pkt->bth.pkey)) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_BAD_PKEY);
		return;
	}
	ce = sroce_rx_ce(skb);
	if (unlikely(ce))
		sroce_stat_inc(sdev, SROCE_CNT_NP_ECN_MARKED);
	if (pkt->bth.opcode == SROCE_OP_CNP) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_CNP);
		qp = sroce_qp_get(sdev, pkt->bth.dqpn);
		/* A CNP slows its QP down: from that QP's peer only. */
		if (qp && !sroce_qp_is_ud(qp) && !sroce_rx_from_peer(qp, skb)) {
			sroce_stat_inc(sdev, SROCE_CNT_RX_BAD_ADDR);
			sroce_qp_put(qp);
			return;
		}
		sroce_cc_cnp_rcv(sdev, pkt->bth.dqpn, qp);
		if (qp)
			sroce_qp_put(qp);
		return;
	}
	if (pkt->bth.dqpn == SROCE_QPN_MASK) {
		/* The multicast QPN: UD SENDs only. */
		if (pkt->info->qpts & SROCE_QPT_UD)
			sroce_mcast_rcv(sdev, skb, pkt, payload);
		else
			sroce_stat_inc(sdev, SROCE_CNT_RX_BAD_OPCODE);
		return;
	}
	qp = sroce_qp_get(sdev, pkt->bth.dqpn);
	if (!qp) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_NO_QP);
		return;
	}
	if (sroce_qp_is_ud(qp)) {
		if (!(pkt->info->qpts & SROCE_QPT_UD))
			sroce_stat_inc(sdev, SROCE_CNT_RX_BAD_OPCODE);
		else
			sroce_ud_rcv(qp, skb, pkt, payload);
		goto out;
	}
	if (!sroce_rx_qp_accepts(qp, pkt)) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_BAD_OPCODE);
		goto out;
	}
	if (!sroce_rx_from_peer(qp, skb)) {
		enum ib_qp_state state = READ_ONCE(qp->state);

		/* Before RTR (and after an error) the QP has no peer yet. */
		sroce_stat_inc(sdev, state < IB_QPS_RTR || state == IB_QPS_ERR ?
			       SROCE_CNT_RX_BAD_QP_STATE :
			       SROCE_CNT_RX_BAD_ADDR);
		goto out;
	}
	/* Notification point: before the packet is acted on. */
	if (unlikely(ce))
		sroce_cc_np_ce(qp);
	if (pkt->info->request)
		sroce_resp_rcv(qp, skb, pkt, payload);
	else
		sroce_comp_rcv(qp, skb, pkt, payload);
out:
	sroce_qp_put(qp);
}

/*
 * Receive hook for UDP port 4791, in softirq. Always consumes the skb
 * (returns 0) so RoCE packets never reach a user socket.
 */
int sroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct ib_device *ibdev;
	struct sroce_dev *sdev;
	struct sroce_pkt pkt;
	enum sroce_icrc_check icrc;
	u32 ip_len, udp_len;
	const u8 *bth;
	int nh_off;

	ibdev = sroce_rx_device(skb);
	if (!ibdev)
		goto drop;
	sdev = to_sdev(ibdev);

	/*
	 * The hook is entered with skb->data at the UDP header and the skb
	 * trimmed to the UDP length. A datagram no RoCE packet can be is
	 * dropped before any work is spent on it.
	 */
	if (skb->len > sizeof(struct udphdr) + SROCE_MAX_PKT_LEN) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_OVERSIZE);
		goto drop_dev;
	}
	/* One linear buffer lets the ICRC and the header code work on plain memory. */
	if (skb_linearize(skb))
		goto drop_dev;
	nh_off = skb_network_offset(skb);
	if (nh_off >= 0 || skb->len < sizeof(struct udphdr)) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_MALFORMED);
		goto drop_dev;
	}
	udp_len = skb->len;
	if (ntohs(udp_hdr(skb)->len) != udp_len) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_MALFORMED);
		goto drop_dev;
	}
	sroce_stat_inc(sdev, SROCE_CNT_RX_PKTS);
	sroce_stat_add(sdev, SROCE_CNT_RX_BYTES,
		       udp_len - sizeof(struct udphdr));

	/*
	 * ICRC over IP header .. payload; the UDP length bounds it, and the
	 * ICRC ends the UDP payload (one linear buffer, from the IP header).
	 */
	ip_len = skb_transport_offset(skb) - nh_off + udp_len;
	icrc = udp_len < sizeof(struct udphdr) + SROCE_BTH_LEN + SROCE_ICRC_LEN ?
	       SROCE_ICRC_MALFORMED :
	       sroce_icrc_verify(skb_network_header(skb), ip_len);
	if (icrc != SROCE_ICRC_OK) {
		sroce_stat_inc(sdev, icrc == SROCE_ICRC_MISMATCH ?
				     SROCE_CNT_RX_ICRC_ERR :
				     SROCE_CNT_RX_MALFORMED);
		goto drop_dev;
	}

	bth = skb->data + sizeof(struct udphdr);
	if (sroce_pkt_parse(bth, udp_len - sizeof(struct udphdr), &pkt) !=
	    SROCE_PARSE_OK) {
		sroce_stat_inc(sdev, SROCE_CNT_RX_MALFORMED);
		goto drop_dev;
	}
	trace_sroce_rx(sdev, &pkt, udp_len - sizeof(struct udphdr));
	sroce_rx_dispatch(sdev, skb, &pkt, bth + pkt.hdr_len);

drop_dev:
	ib_device_put(ibdev);
drop:
	kfree_skb(skb);
	return 0;
}
