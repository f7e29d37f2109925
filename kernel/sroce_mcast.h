/* SPDX-License-Identifier: GPL-2.0 */
/* UD multicast groups (see sroce_mcast.c). */
#ifndef SROCE_MCAST_H
#define SROCE_MCAST_H

#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "proto/sroce_hdr.h"

struct sroce_dev;
struct sroce_qp;

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void sroce_mcast_detach_qp(struct sroce_qp *qp);
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const struct sroce_pkt *pkt, const u8 *payload);

#endif /* SROCE_MCAST_H */
