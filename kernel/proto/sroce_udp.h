/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * UDP source port for RoCEv2 flows. The destination port is fixed, so the
 * source port is the only ECMP entropy; every Linux RoCE driver derives it
 * from the 20-bit flow label (ib_verbs.h rdma_flow_label_to_udp_sport) and,
 * when the flow label is 0, derives the flow label from the QPN pair
 * (rdma_calc_flow_label). Matching them keeps sroce interoperable and lets
 * both ends of a connection hash to the same path.
 */
#ifndef SROCE_UDP_H
#define SROCE_UDP_H

#include "sroce_proto.h"

#define SROCE_FLOW_LABEL_MASK	0xfffffu
/* Start of the IANA dynamic/private range; sports are 0xc000..0xffff. */
#define SROCE_UDP_SPORT_MIN	0xc000u

/* Fold a 20-bit flow label into 14 bits inside the dynamic range. */
static inline u16 sroce_udp_sport(u32 fl)
{
	u32 lo = fl & 0x3fff, hi = fl & 0xfc000;

	return (u16)((lo ^ (hi >> 14)) | SROCE_UDP_SPORT_MIN);
}

/* Symmetric in the two QPNs: both ends compute the same label. */
static inline u32 sroce_flow_label(u32 lqpn, u32 rqpn)
{
	u64 v = (u64)lqpn * rqpn;

	v ^= v >> 20;
	v ^= v >> 40;
	return (u32)(v & SROCE_FLOW_LABEL_MASK);
}

static inline u16 sroce_udp_sport_for_qp(u32 fl, u32 lqpn, u32 rqpn)
{
	if (!fl)
		fl = sroce_flow_label(lqpn, rqpn);
	return sroce_udp_sport(fl);
}

#endif /* SROCE_UDP_H */
