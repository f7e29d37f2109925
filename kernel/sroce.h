/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce: software RoCEv2 device.
 *
 * Object lifetime
 * ---------------
 * A struct sroce_dev is an ib_device bound to one Ethernet netdev. It is
 * created by "rdma link add" (sroce_newlink) and destroyed by the RDMA core
 * calling ops.dealloc_driver after the last ib_device reference is dropped,
 * which happens on "rdma link delete", on NETDEV_UNREGISTER of its netdev
 * (queued, see sroce_net.c) and on module unload.
 *
 * While it exists the device holds a tracked reference on its netdev and a
 * user count on its network namespace's UDP sockets (struct sroce_net).
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce_compat.h"
#include "../include/sroce-abi.h"
#include "proto/sroce_proto.h"
#include "proto/sroce_dcqcn.h"

struct sroce_net;

/*
 * Memory a verb allocates on behalf of its caller (rings, shadows, per-WQE
 * state, MR page lists): charged to the caller's memory cgroup, and a
 * charge over the limit fails the verb with ENOMEM rather than invoking the
 * OOM killer.
 */
#define SROCE_GFP_USER	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

struct sroce_dev {
	struct ib_device ib_dev;	/* must be first: ib_alloc_device */
	struct ib_device_attr attr;

	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct net *net;		/* dev_net(ndev) at creation; not held */
	struct sroce_net *sn;		/* per-netns sockets, user count held */

	/* Last port state reported, to dispatch events on changes only. */
	enum ib_port_state port_state;
	struct mutex port_lock;		/* serialises port state updates */

	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_ah;
	atomic_t num_srq;

	/* Memory regions by key index (see sroce_mr.h). */
	struct xarray mr_xa;
	u32 mr_next;

	struct sroce_stats __percpu *stats;

	/* skb memory of requests waiting behind READ streams, all QPs. */
	atomic_long_t resp_backlog_bytes;

	/* QPs by number, looked up under RCU by the receive path. */
	struct xarray qp_xa;
	u32 qp_next;

	/* UD multicast groups (sroce_mcast.c): RCU list, mcg_lock writers. */
	struct list_head mcg_list;
	struct mutex mcg_lock;		/* attach/detach; readers use RCU */
	u32 num_mcg;

	/* Address handles by number (see sroce_ah.h); IRQ-safe lock. */
	struct xarray ah_xa;
	u32 ah_next;

	/* XRC SRQs by SRQ number, looked up under RCU by XRC responders. */
	struct xarray srq_xa;
	u32 srq_next;

	/* DCQCN knobs (sysfs dcqcn/, read locklessly) and the line rate. */
	struct sroce_dcqcn_params cc;
	u32 line_kbps;
};

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ib_dev);
}

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

/* The ib_ucontext of a verb called with user data. */
static inline struct ib_ucontext *sroce_uctx(struct ib_udata *udata)
{
	return &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					  ibuc)->ibuc;
}

struct sroce_pd {
	struct ib_pd ibpd;
};

/* An XRC domain: nothing of its own; SRQs and TGT QPs point at it. */
struct sroce_xrcd {
	struct ib_xrcd ibxrcd;
};

/* sroce_dev.c */
int sroce_dev_add(const char *ibdev_name, struct net_device *ndev);
void sroce_dev_port_update(struct sroce_dev *sdev);
enum ib_port_state sroce_port_state(struct net_device *ndev);

/* sroce_queue.c */
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *entry);

/* sroce_net.c */
struct sroce_net *sroce_net_get(struct net *net);
void sroce_net_put(struct net *net, struct sroce_net *sn);
int sroce_net_init(void);
void sroce_net_exit(void);

#endif /* SROCE_H */
