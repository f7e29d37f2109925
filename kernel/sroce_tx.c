// SPDX-License-Identifier: GPL-2.0
/*
 * sroce transmit path: one linear skb per packet, IP/UDP headers built
 * here (the ICRC covers them, so they must be final before it is
 * computed), routes cached per QP.
 */

#include <linux/debugfs.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/dst.h>
#include <net/dst_cache.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>

#include "sroce.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_icrc.h"

#define SROCE_TX_HEADROOM	(LL_MAX_HEADER + sizeof(struct ipv6hdr) + \
				 sizeof(struct udphdr))

/*
 * A test of what a failed allocation leaves behind (debugfs sroce/, root's):
 * while fail_tx_alloc is N > 0, the next N packets sroce_tx_alloc() is
 * asked for are not allocated, as if the kernel were out of memory - after
 * the first fail_tx_alloc_skip, which are. Only requests count (not ACKs,
 * READ responses or CNPs), and only those of QP number fail_tx_alloc_qpn
 * if that is not 0.
 */
static atomic_t sroce_fail_tx_alloc = ATOMIC_INIT(0);
static atomic_t sroce_fail_tx_alloc_skip = ATOMIC_INIT(0);
static u32 sroce_fail_tx_alloc_qpn;

void sroce_tx_debugfs_init(struct dentry *dir)
{
	debugfs_create_atomic_t("fail_tx_alloc", 0600, dir,
				&sroce_fail_tx_alloc);
	debugfs_create_atomic_t("fail_tx_alloc_skip", 0600, dir,
				&sroce_fail_tx_alloc_skip);
	debugfs_create_u32("fail_tx_alloc_qpn", 0600, dir,
			   &sroce_fail_tx_alloc_qpn);
}

static bool sroce_tx_alloc_fails(const struct sroce_qp *qp)
{
	u32 qpn = READ_ONCE(sroce_fail_tx_alloc_qpn);

	if (qpn && qpn != qp->ibqp.qp_num)
		return false;
	if (atomic_dec_if_positive(&sroce_fail_tx_alloc_skip) >= 0)
		return false;
	return atomic_dec_if_positive(&sroce_fail_tx_alloc) >= 0;
}

/**
 * sroce_tx_alloc - allocate the skb for @tp and write its RoCE headers
 * @qp: the sending QP
 * @tp: tp->pkt describes the packet (opcode, fields, payload_len)
 * @gfp: allocation flags
 *
 * On success tp->payload points at payload_len bytes for the caller to fill.
 */
int sroce_tx_alloc(struct sroce_qp *qp, struct sroce_txpkt *tp, gfp_t gfp)
{
	const struct sroce_opcode_info *info;
	u32 hdr_len, pad, len;
	struct sk_buff *skb;
	u8 *hdr;

	info = sroce_opcode_info(tp->pkt.bth.opcode);
	if (WARN_ON_ONCE(!info))
		return -EINVAL;
	hdr_len = info->hdr_len;
	pad = sroce_pad_len(tp->pkt.payload_len);
	len = hdr_len + tp->pkt.payload_len + pad + SROCE_ICRC_LEN;

	if (unlikely(atomic_read(&sroce_fail_tx_alloc)) && info->request &&
	    sroce_tx_alloc_fails(qp))
		return -ENOMEM;
	skb = alloc_skb(SROCE_TX_HEADROOM + len, gfp);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, SROCE_TX_HEADROOM);
	hdr = skb_put(skb, hdr_len);
	if (sroce_pkt_build_hdrs(hdr, hdr_len, &tp->pkt) != hdr_len) {
		kfree_skb(skb);
		return -EINVAL;
	}
	tp->payload = skb_put(skb, tp->pkt.payload_len);
	if (pad)
		skb_put_zero(skb, pad);
	tp->skb = skb;
	return 0;
}

void sroce_tx_free(struct sroce_txpkt *tp)
{
	kfree_skb(tp->skb);
	tp->skb = NULL;
}

/*
 * Routes are cached per QP and per CPU, with BHs off (the receive path sends
 * ACKs and READ responses from softirq on the same cache). A route looked up
 * for a path that modify_qp changed meanwhile is not left in the cache.
 */
static struct dst_entry *sroce_route4(struct sroce_qp *qp,
				      const struct sroce_path *p,
				      unsigned int seq)
{
	struct sroce_av *av = &qp->av;
	struct flowi4 fl4 = {};
	__be32 saddr;
	struct rtable *rt;

	rt = dst_cache_get_ip4(&av->dst, &saddr);
	if (rt)
		return &rt->dst;
	fl4.flowi4_oif = qp->sdev->ndev->ifindex;
	fl4.saddr = p->saddr.v4;
	fl4.daddr = p->daddr.v4;
	fl4.flowi4_proto = IPPROTO_UDP;
	rt = ip_route_output_key(qp->sdev->net, &fl4);
	if (IS_ERR(rt))
		return NULL;
	dst_cache_set_ip4(&av->dst, &rt->dst, fl4.saddr);
	if (sroce_av_changed(av, seq))
		dst_cache_reset(&av->dst);
	return &rt->dst;
}

static struct dst_entry *sroce_route6(struct sroce_qp *qp,
				      const struct sroce_path *p,
				      unsigned int seq)
{
	struct sroce_av *av = &qp->av;
	struct dst_entry *dst;
	struct flowi6 fl6 = {};
	struct in6_addr saddr;

	if (!IS_ENABLED(CONFIG_IPV6))
		return NULL;
	dst = dst_cache_get_ip6(&av->dst, &saddr);
	if (dst)
		return dst;
	fl6.flowi6_oif = qp->sdev->ndev->ifindex;
	fl6.saddr = p->saddr.v6;
	fl6.daddr = p->daddr.v6;
	fl6.flowi6_proto = IPPROTO_UDP;
	dst = sroce_ip6_dst_lookup(qp->sdev->net, &fl6);
	if (IS_ERR(dst))
		return NULL;
	dst_cache_set_ip6(&av->dst, dst, &fl6.saddr);
	if (sroce_av_changed(av, seq))
		dst_cache_reset(&av->dst);
	return dst;
}

/* Push the UDP header: RoCEv2's port, a zero checksum (the ICRC protects). */
static void sroce_tx_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *udph;

	__skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph = udp_hdr(skb);
	udph->source = htons(sport);
	udph->dest = htons(SROCE_ROCEV2_UDP_PORT);
	udph->len = htons(skb->len);
	udph->check = 0;
}

static void sroce_tx_push_ip6(struct sk_buff *skb, const struct sroce_path *p,
			      u8 tos)
{
	struct ipv6hdr *ip6h;

	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, tos, htonl(p->flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = p->ttl;
	ip6h->saddr = p->saddr.v6;
	ip6h->daddr = p->daddr.v6;
	skb->protocol = htons(ETH_P_IPV6);
}

/* IPv4 with DF set: RoCE packets are sized to the path MTU, never split. */
static void sroce_tx_push_ip4(struct sroce_dev *sdev, struct sk_buff *skb,
			      const struct sroce_path *p, u8 tos)
{
	struct iphdr *iph;

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = IPVERSION;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = tos;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = p->ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = p->saddr.v4;
	iph->daddr = p->daddr.v4;
	__ip_select_ident(sdev->net, iph, 1);
	iph->check = 0;
	skb->protocol = htons(ETH_P_IP);
}

/**
 * sroce_tx_send - add IP/UDP headers and the ICRC to @tp's skb, send it
 * @qp: the sending QP (its resolved path)
 * @tp: the packet from sroce_tx_alloc()
 *
 * Consumes the skb in every case.
 */
int sroce_tx_send(struct sroce_qp *qp, struct sroce_txpkt *tp)
{
	struct sk_buff *skb = tp->skb;
	struct sroce_dev *sdev = qp->sdev;
	struct dst_entry *dst;
	struct sroce_path p;
	u32 icrc, len, roce_len;
	unsigned int seq;
	u8 *trailer, tos;
	u16 sport;
	int err;

	tp->skb = NULL;
	local_bh_disable();
	seq = sroce_av_read(&qp->av, &p, &sport);
	/*
	 * Everything leaves ECN-capable (ECT(0)), with the QP's traffic
	 * class; a CNP with the device's CNP DSCP and 802.1p priority.
	 */
	if (unlikely(tp->cnp)) {
		tos = READ_ONCE(sdev->cc.cnp_dscp) << 2;
		skb->priority = READ_ONCE(sdev->cc.cnp_802p_prio);
	} else {
		tos = p.tos & ~INET_ECN_MASK;
	}
	tos |= INET_ECN_ECT_0;
	dst = p.ipv6 ? sroce_route6(qp, &p, seq) : sroce_route4(qp, &p, seq);
	if (!dst) {
		err = -EHOSTUNREACH;
		goto drop;
	}
	trailer = skb_put(skb, SROCE_ICRC_LEN);
	/* Byte counters count RoCE bytes, BTH through ICRC, on both sides. */
	roce_len = skb->len;
	sroce_tx_push_udp(skb, sport);
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->ip_summed = CHECKSUM_NONE;
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	if (p.ipv6)
		sroce_tx_push_ip6(skb, &p, tos);
	else
		sroce_tx_push_ip4(sdev, skb, &p, tos);

	len = skb->len - SROCE_ICRC_LEN;
	if (!sroce_icrc_packet(skb->data, len, &icrc)) {
		err = -EINVAL;
		goto drop;
	}
	sroce_icrc_put(trailer, icrc);

	sroce_stat_inc(sdev, SROCE_CNT_TX_PKTS);
	sroce_stat_add(sdev, SROCE_CNT_TX_BYTES, roce_len);
	trace_sroce_tx(qp, &tp->pkt, roce_len);
	if (p.ipv6)
		err = ip6_local_out(sdev->net, NULL, skb);
	else
		err = ip_local_out(sdev->net, NULL, skb);
	local_bh_enable();
	if (unlikely(net_xmit_eval(err))) {
		sroce_stat_inc(sdev, SROCE_CNT_TX_DROP);
		return -ENOBUFS;
	}
	return 0;

drop:
	local_bh_enable();
	kfree_skb(skb);
	sroce_stat_inc(sdev, SROCE_CNT_TX_DROP);
	return err;
}

/* Bytes @pkt takes on the wire (Ethernet frame without FCS). */
u32 sroce_wire_len(const struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *info = sroce_opcode_info(pkt->bth.opcode);

	return ETH_HLEN + (qp->av.p.ipv6 ? sizeof(struct ipv6hdr) :
					   sizeof(struct iphdr)) +
	       sizeof(struct udphdr) + (info ? info->hdr_len : 0) +
	       pkt->payload_len + sroce_pad_len(pkt->payload_len) +
	       SROCE_ICRC_LEN;
}
