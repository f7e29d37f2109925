// SPDX-License-Identifier: GPL-2.0
/*
 * sroce address handles: resolve rdma_ah_attr into an IP path, number it,
 * and let the UD requester look it up safely.
 */

#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_param.h"

/* One address (sgid or dgid) of @ah into @addr, in @path's IP version. */
static int sroce_gid_to_addr(struct ib_device *ibdev,
			     const struct sroce_path *path,
			     const union ib_gid *gid, void *addr)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;

	rdma_gid2ip((struct sockaddr *)&sa, gid);
	if (path->ipv6) {
		if (sa.in6.sin6_family != AF_INET6) {
			ibdev_dbg(ibdev, "ah_attr: GID %pI6 is IPv4-mapped, but the source GID's network is IPv6\n",
				  gid->raw);
			return -EINVAL;
		}
		memcpy(addr, &sa.in6.sin6_addr, sizeof(struct in6_addr));
	} else {
		if (sa.in.sin_family != AF_INET) {
			ibdev_dbg(ibdev, "ah_attr: GID %pI6 is not IPv4-mapped, but the source GID's network is IPv4\n",
				  gid->raw);
			return -EINVAL;
		}
		memcpy(addr, &sa.in.sin_addr.s_addr, sizeof(__be32));
	}
	return 0;
}

/**
 * sroce_path_from_ah_attr - resolve AH attributes into an IP path
 * @ibdev: the device, for the debug messages
 * @path: filled on success
 * @ah: the attributes; RoCE v2 needs a GRH whose source GID is a RoCE v2 GID
 *
 * Return: 0 or -EINVAL.
 */
int sroce_path_from_ah_attr(struct ib_device *ibdev, struct sroce_path *path,
			    const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	int err;

	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH)) {
		ibdev_dbg(ibdev, "ah_attr: no GRH; RoCE v2 addresses by GID (is_global)\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(ah);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr) {
		ibdev_dbg(ibdev, "ah_attr: no source GID (sgid_index %u)\n",
			  grh->sgid_index);
		return -EINVAL;
	}
	if (sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
		ibdev_dbg(ibdev, "ah_attr: sgid_index %u is a GID of type %d, sroce needs a RoCE v2 one (type %d)\n",
			  grh->sgid_index, sgid_attr->gid_type,
			  IB_GID_TYPE_ROCE_UDP_ENCAP);
		return -EINVAL;
	}

	memset(path, 0, sizeof(*path));
	path->ipv6 = rdma_gid_attr_network_type(sgid_attr) ==
		     RDMA_NETWORK_IPV6;
	err = sroce_gid_to_addr(ibdev, path, &sgid_attr->gid, &path->saddr);
	if (!err)
		err = sroce_gid_to_addr(ibdev, path, &grh->dgid,
					&path->daddr);
	if (err)
		return err;
	path->tos = grh->traffic_class;
	path->ttl = grh->hop_limit ? grh->hop_limit : 64;
	path->flow_label = grh->flow_label & 0xfffff;
	return 0;
}

/**
 * sroce_ah_lookup - copy the path of AH number @ah_num
 * @sdev: the device
 * @ah_num: from a send WQE (untrusted)
 * @pd: the PD the AH must belong to (the sending QP's)
 * @path: filled on success
 *
 * Any context. Return: true if the AH exists and belongs to @pd.
 */
bool sroce_ah_lookup(struct sroce_dev *sdev, u32 ah_num, struct ib_pd *pd,
		     struct sroce_path *path)
{
	struct sroce_ah_entry *e;
	bool ok = false;

	rcu_read_lock();
	e = xa_load(&sdev->ah_xa, ah_num);
	if (e && e->pd == pd) {
		*path = e->path;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	gfp_t gfp = init->flags & RDMA_CREATE_AH_SLEEPABLE ? SROCE_GFP_USER :
							    GFP_ATOMIC;
	unsigned long flags;
	struct sroce_create_ah_resp resp = {};
	struct sroce_ah *ah = to_sah(ibah);
	struct sroce_ah_entry *e;
	int err;

	if (udata && udata->outlen < sizeof(resp)) {
		ibdev_dbg(ibah->device, "create_ah: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	if (rdma_ah_get_port_num(init->ah_attr) != 1) {
		ibdev_dbg(ibah->device, "create_ah: port_num %u, the device has port 1 only\n",
			  rdma_ah_get_port_num(init->ah_attr));
		return -EINVAL;
	}
	if (atomic_inc_return(&sdev->num_ah) > SROCE_MAX_AH) {
		ibdev_dbg(ibah->device, "create_ah: the device already has %u AHs\n",
			  SROCE_MAX_AH);
		err = -ENOMEM;
		goto err_count;
	}
	e = kzalloc(sizeof(*e), gfp);
	if (!e) {
		err = -ENOMEM;
		goto err_count;
	}
	err = sroce_path_from_ah_attr(ibah->device, &e->path, init->ah_attr);
	if (err)
		goto err_free;
	e->pd = ibah->pd;
	/* Kernel callers may create and destroy AHs in atomic context. */
	xa_lock_irqsave(&sdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&sdev->ah_xa, &ah->ah_num, e,
				XA_LIMIT(1, U32_MAX), &sdev->ah_next,
				GFP_ATOMIC);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	if (err == -EBUSY)
		ibdev_dbg(ibah->device, "create_ah: no free AH number\n");
	if (err < 0)
		goto err_free;
	ah->e = e;
	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase_irq(&sdev->ah_xa, ah->ah_num);
	/* udata means process context: the RCU readers may be waited for. */
	synchronize_rcu();
err_free:
	kfree(e);
err_count:
	atomic_dec(&sdev->num_ah);
	return err;
}

int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&sdev->ah_xa, irqflags);
	__xa_erase(&sdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	kfree_rcu(ah->e, rcu);
	atomic_dec(&sdev->num_ah);
	return 0;
}
