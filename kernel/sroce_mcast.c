// SPDX-License-Identifier: GPL-2.0
/*
 * sroce UD multicast: attach/detach QPs to multicast GIDs, keep the netdev
 * a member of the IP group (IGMP/MLD through the IP stack, which also
 * programs the netdev's multicast MAC filter), and fan received packets
 * addressed to QPN 0xFFFFFF out to every attached QP.
 *
 * Groups live on an RCU list per device; attach/detach (process context)
 * serialise on mcg_lock. A QP is taken off every group before it is
 * destroyed, and destroy waits for an RCU grace period after that.
 */

#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>

#include "sroce.h"
#include "sroce_mcast.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_transport.h"

struct sroce_mcg {
	struct list_head node;
	union ib_gid mgid;
	struct rcu_head rcu;
	u32 nqp;
	struct sroce_qp *qp[SROCE_MAX_MCAST_QP_ATTACH];
};

/* Join (@join) or leave the IP multicast group of @mgid on the netdev. */
static int sroce_mcast_ip(struct sroce_dev *sdev, const union ib_gid *mgid,
			  bool join)
{
	const char *op = join ? "attach_mcast" : "detach_mcast";
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	int err = 0;

	rdma_gid2ip((struct sockaddr *)&sa, mgid);
	if (sa.in.sin_family == AF_INET) {
		struct in_device *in_dev;

		if (!ipv4_is_multicast(sa.in.sin_addr.s_addr)) {
			ibdev_dbg(&sdev->ib_dev, "%s: GID %pI6 is not an IPv4 multicast address\n",
				  op, mgid->raw);
			return -EINVAL;
		}
		rtnl_lock();
		in_dev = __in_dev_get_rtnl(sdev->ndev);
		if (!in_dev)
			err = -ENODEV;
		else if (join)
			ip_mc_inc_group(in_dev, sa.in.sin_addr.s_addr);
		else
			ip_mc_dec_group(in_dev, sa.in.sin_addr.s_addr);
		rtnl_unlock();
		if (err)
			ibdev_dbg(&sdev->ib_dev, "%s: %s has no IPv4 configuration\n",
				  op, sdev->ndev->name);
		return err;
	}
	if (!ipv6_addr_is_multicast(&sa.in6.sin6_addr)) {
		ibdev_dbg(&sdev->ib_dev, "%s: GID %pI6 is not an IPv6 multicast address\n",
			  op, mgid->raw);
		return -EINVAL;
	}
	/* Like the IPv4 group list, the IPv6 one changes under RTNL only. */
	rtnl_lock();
	if (join)
		err = ipv6_dev_mc_inc(sdev->ndev, &sa.in6.sin6_addr);
	else
		err = ipv6_dev_mc_dec(sdev->ndev, &sa.in6.sin6_addr);
	rtnl_unlock();
	if (err)
		ibdev_dbg(&sdev->ib_dev, "%s: %s group %pI6 on %s failed: %d\n",
			  op, join ? "joining" : "leaving", mgid->raw,
			  sdev->ndev->name, err);
	return err;
}

static struct sroce_mcg *sroce_mcg_find(struct sroce_dev *sdev,
					const union ib_gid *mgid)
{
	struct sroce_mcg *mcg;

	list_for_each_entry_rcu(mcg, &sdev->mcg_list, node,
				lockdep_is_held(&sdev->mcg_lock)) {
		if (!memcmp(&mcg->mgid, mgid, sizeof(*mgid)))
			return mcg;
	}
	return NULL;
}

int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcg *mcg;
	int err = 0;
	u32 i;

	if (ibqp->qp_type != IB_QPT_UD) {
		ibdev_dbg(ibqp->device, "attach_mcast: QP %u is of type %d, only UD QPs join multicast groups\n",
			  ibqp->qp_num, ibqp->qp_type);
		return -EINVAL;
	}
	mutex_lock(&sdev->mcg_lock);
	mcg = sroce_mcg_find(sdev, gid);
	if (!mcg) {
		if (sdev->num_mcg >= SROCE_MAX_MCAST_GRP) {
			ibdev_dbg(ibqp->device, "attach_mcast: the device already has %u multicast groups\n",
				  SROCE_MAX_MCAST_GRP);
			err = -ENOMEM;
			goto out;
		}
		mcg = kzalloc(sizeof(*mcg), GFP_KERNEL);
		if (!mcg) {
			err = -ENOMEM;
			goto out;
		}
		mcg->mgid = *gid;
		err = sroce_mcast_ip(sdev, gid, true);
		if (err) {
			kfree(mcg);
			goto out;
		}
		list_add_tail_rcu(&mcg->node, &sdev->mcg_list);
		sdev->num_mcg++;
	}
	for (i = 0; i < mcg->nqp; i++)
		if (mcg->qp[i] == qp)
			goto out;	/* already attached */
	if (mcg->nqp >= SROCE_MAX_MCAST_QP_ATTACH) {
		ibdev_dbg(ibqp->device, "attach_mcast: group %pI6 already has %u QPs\n",
			  gid->raw, SROCE_MAX_MCAST_QP_ATTACH);
		err = -ENOMEM;
		goto out;
	}
	WRITE_ONCE(mcg->qp[mcg->nqp], qp);
	/* The slot is filled before readers may look at it. */
	smp_store_release(&mcg->nqp, mcg->nqp + 1);
out:
	mutex_unlock(&sdev->mcg_lock);
	return err;
}

/* Remove @qp from @mcg (mcg_lock held); free the group when empty. */
static bool sroce_mcg_remove(struct sroce_dev *sdev, struct sroce_mcg *mcg,
			     struct sroce_qp *qp)
{
	u32 i;

	for (i = 0; i < mcg->nqp; i++) {
		if (mcg->qp[i] != qp)
			continue;
		WRITE_ONCE(mcg->qp[i], mcg->qp[mcg->nqp - 1]);
		/* Pairs with sroce_mcast_rcv(); a reader may still see @qp. */
		smp_store_release(&mcg->nqp, mcg->nqp - 1);
		if (!mcg->nqp) {
			list_del_rcu(&mcg->node);
			sdev->num_mcg--;
			sroce_mcast_ip(sdev, &mcg->mgid, false);
			kfree_rcu(mcg, rcu);
		}
		return true;
	}
	return false;
}

int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcg *mcg;
	int err = -EINVAL;

	mutex_lock(&sdev->mcg_lock);
	mcg = sroce_mcg_find(sdev, gid);
	if (mcg && sroce_mcg_remove(sdev, mcg, to_sqp(ibqp)))
		err = 0;
	mutex_unlock(&sdev->mcg_lock);
	if (err)
		ibdev_dbg(ibqp->device, "detach_mcast: QP %u is not attached to group %pI6\n",
			  ibqp->qp_num, gid->raw);
	return err;
}

/* Before a QP is destroyed: off every group (the caller syncs RCU). */
void sroce_mcast_detach_qp(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = qp->sdev;
	struct sroce_mcg *mcg, *tmp;

	if (qp->ibqp.qp_type != IB_QPT_UD)
		return;
	mutex_lock(&sdev->mcg_lock);
	list_for_each_entry_safe(mcg, tmp, &sdev->mcg_list, node)
		sroce_mcg_remove(sdev, mcg, qp);
	mutex_unlock(&sdev->mcg_lock);
}

/*
 * Deliver a packet sent to the multicast QPN to every QP attached to the
 * group of its destination address (softirq).
 */
void sroce_mcast_rcv(struct sroce_dev *sdev, struct sk_buff *skb,
		     const struct sroce_pkt *pkt, const u8 *payload)
{
	struct sroce_mcg *mcg;
	union ib_gid mgid;
	u32 i, n;

	if (ip_hdr(skb)->version == 4)
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)mgid.raw);
	else
		memcpy(mgid.raw, &ipv6_hdr(skb)->daddr, sizeof(mgid.raw));

	rcu_read_lock();
	mcg = sroce_mcg_find(sdev, &mgid);
	if (!mcg) {
		rcu_read_unlock();
		sroce_stat_inc(sdev, SROCE_CNT_RX_NO_QP);
		return;
	}
	/* Pairs with the release in attach: slots below n are filled. */
	n = smp_load_acquire(&mcg->nqp);
	for (i = 0; i < n && i < SROCE_MAX_MCAST_QP_ATTACH; i++) {
		struct sroce_qp *qp = READ_ONCE(mcg->qp[i]);

		if (!qp || !refcount_inc_not_zero(&qp->ref))
			continue;
		sroce_ud_rcv(qp, skb, pkt, payload);
		sroce_qp_put(qp);
	}
	rcu_read_unlock();
}
