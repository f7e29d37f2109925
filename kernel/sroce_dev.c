// SPDX-License-Identifier: GPL-2.0
/*
 * sroce device: ib_device creation on top of a netdev, device and port
 * attributes, port state tracking, user contexts and protection domains.
 */

#include <linux/module.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <linux/if_arp.h>
#include <linux/pci.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>

#include "sroce.h"
#include "sroce_cq.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "sroce_ah.h"
#include "sroce_mcast.h"
#include "sroce_qp.h"
#include "sroce_srq.h"
#include "sroce_stats.h"

static void sroce_init_attr(struct sroce_dev *sdev)
{
	struct ib_device_attr *a = &sdev->attr;

	memset(a, 0, sizeof(*a));
	/* libibverbs prints fw_ver as major.minor.sub from 16-bit fields. */
	a->fw_ver = ((u64)SROCE_FW_VER_MAJOR << 32) |
		    ((u64)SROCE_FW_VER_MINOR << 16) | SROCE_FW_VER_SUB;
	a->sys_image_guid = sdev->ib_dev.node_guid;
	a->max_mr_size = SROCE_MAX_MR_SIZE;
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = SROCE_VENDOR_ID;
	a->vendor_part_id = SROCE_VENDOR_PART_ID;
	a->hw_ver = SROCE_HW_VER;
	a->max_qp = SROCE_MAX_QP;
	a->max_qp_wr = SROCE_MAX_QP_WR;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_MEM_MGT_EXTENSIONS |
			      IB_DEVICE_MEM_WINDOW |
			      IB_DEVICE_MEM_WINDOW_TYPE_2B |
			      IB_DEVICE_XRC |
			      IB_DEVICE_SRQ_RESIZE |
			      IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_PORT_ACTIVE_EVENT;
	a->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	a->max_send_sge = SROCE_MAX_SGE;
	a->max_recv_sge = SROCE_MAX_SGE;
	a->max_sge_rd = SROCE_MAX_SGE_RD;
	a->max_cq = SROCE_MAX_CQ;
	a->max_cqe = SROCE_MAX_CQE;
	a->max_mr = SROCE_MAX_MR;
	/* Windows share the MR key table. */
	a->max_mw = SROCE_MAX_MR;
	a->max_pd = SROCE_MAX_PD;
	a->max_qp_rd_atom = SROCE_MAX_QP_RD_ATOM;
	a->max_qp_init_rd_atom = SROCE_MAX_QP_RD_ATOM;
	a->max_res_rd_atom = SROCE_MAX_RES_RD_ATOM;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_ah = SROCE_MAX_AH;
	a->max_srq = SROCE_MAX_SRQ;
	a->max_srq_wr = SROCE_MAX_SRQ_WR;
	a->max_srq_sge = SROCE_MAX_SRQ_SGE;
	a->max_fast_reg_page_list_len = SROCE_MAX_FAST_REG_PAGES;
	a->max_pkeys = SROCE_PORT_PKEY_TBL_LEN;
	a->local_ca_ack_delay = SROCE_LOCAL_CA_ACK_DELAY;
	a->max_mcast_grp = SROCE_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = SROCE_MAX_MCAST_GRP *
				       SROCE_MAX_MCAST_QP_ATTACH;
	a->max_pi_fast_reg_page_list_len = 0;
}

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *uhw)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	if (uhw && (uhw->inlen || uhw->outlen)) {
		ibdev_dbg(ibdev, "query_device: %zu bytes in, %zu out of driver data, sroce has none\n",
			  uhw->inlen, uhw->outlen);
		return -EINVAL;
	}
	*attr = sdev->attr;
	return 0;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u",
		 SROCE_FW_VER_MAJOR, SROCE_FW_VER_MINOR, SROCE_FW_VER_SUB);
}

/*
 * The port is usable when the netdev is administratively up and has carrier;
 * operstate folds in both plus dormant/testing states.
 */
enum ib_port_state sroce_port_state(struct net_device *ndev)
{
	if (netif_running(ndev) && netif_oper_up(ndev))
		return IB_PORT_ACTIVE;
	return IB_PORT_DOWN;
}

static enum ib_mtu sroce_active_mtu(struct net_device *ndev)
{
	enum sroce_ib_mtu m = sroce_ib_mtu_for_netdev(READ_ONCE(ndev->mtu));

	/* enum ib_mtu and the IBTA encoding in proto/ are the same numbers. */
	return m == SROCE_IB_MTU_NONE ? IB_MTU_256 : (enum ib_mtu)m;
}

/*
 * Default for netdevs that report no speed (veth, dummy, many virtual
 * NICs). ib_get_eth_speed() would do the same but logs a warning on every
 * query_port, and ibv_devinfo queries often.
 */
#define SROCE_DEFAULT_SPEED_MBPS	10000

static u32 sroce_eth_mbps(struct net_device *ndev)
{
	struct ethtool_link_ksettings ks;
	u32 mbps = SROCE_DEFAULT_SPEED_MBPS;

	rtnl_lock();
	if (!__ethtool_get_link_ksettings(ndev, &ks) &&
	    ks.base.speed != (u32)SPEED_UNKNOWN && ks.base.speed)
		mbps = ks.base.speed;
	rtnl_unlock();
	return mbps;
}

static void sroce_eth_speed(struct net_device *ndev, u16 *speed, u8 *width)
{
	u32 mbps = sroce_eth_mbps(ndev);

	/* Nearest IB speed x width not above the Ethernet rate. */
	if (mbps <= 2500) {
		*speed = IB_SPEED_SDR;
		*width = IB_WIDTH_1X;
	} else if (mbps <= 5000) {
		*speed = IB_SPEED_DDR;
		*width = IB_WIDTH_1X;
	} else if (mbps <= 10000) {
		*speed = IB_SPEED_FDR10;
		*width = IB_WIDTH_1X;
	} else if (mbps <= 20000) {
		*speed = IB_SPEED_DDR;
		*width = IB_WIDTH_4X;
	} else if (mbps <= 25000) {
		*speed = IB_SPEED_EDR;
		*width = IB_WIDTH_1X;
	} else if (mbps <= 40000) {
		*speed = IB_SPEED_FDR10;
		*width = IB_WIDTH_4X;
	} else if (mbps <= 50000) {
		*speed = IB_SPEED_HDR;
		*width = IB_WIDTH_1X;
	} else if (mbps <= 100000) {
		*speed = IB_SPEED_EDR;
		*width = IB_WIDTH_4X;
	} else if (mbps <= 200000) {
		*speed = IB_SPEED_HDR;
		*width = IB_WIDTH_4X;
	} else {
		*speed = IB_SPEED_NDR;
		*width = IB_WIDTH_4X;
	}
}

static int sroce_query_port(struct ib_device *ibdev, u32 port_num,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev = sdev->ndev;

	/* The core zeroes *attr before calling. */
	attr->state = sroce_port_state(ndev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = sroce_active_mtu(ndev);
	attr->phys_mtu = READ_ONCE(ndev->mtu);
	attr->gid_tbl_len = SROCE_PORT_GID_TBL_LEN;
	attr->ip_gids = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SROCE_PORT_MAX_MSG_SZ;
	attr->pkey_tbl_len = SROCE_PORT_PKEY_TBL_LEN;
	attr->max_vl_num = 1;
	attr->subnet_timeout = 0;

	sroce_eth_speed(ndev, &attr->active_speed, &attr->active_width);
	return 0;
}

static int sroce_port_immutable(struct ib_device *ibdev, u32 port_num,
				struct ib_port_immutable *immutable)
{
	if (port_num != 1) {
		ibdev_dbg(ibdev, "get_port_immutable: port %u, the device has port 1 only\n",
			  port_num);
		return -EINVAL;
	}
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = SROCE_PORT_GID_TBL_LEN;
	immutable->pkey_tbl_len = SROCE_PORT_PKEY_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			    u16 *pkey)
{
	if (index >= SROCE_PORT_PKEY_TBL_LEN) {
		ibdev_dbg(ibdev, "query_pkey: index %u >= %u, the P_Key table's size\n",
			  index, SROCE_PORT_PKEY_TBL_LEN);
		return -EINVAL;
	}
	*pkey = SROCE_DEFAULT_PKEY;
	return 0;
}

static int sroce_modify_port(struct ib_device *ibdev, u32 port_num,
			     int mask, struct ib_port_modify *props)
{
	/* Nothing in PortInfo is settable on an Ethernet port. */
	if (mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE |
		     IB_PORT_RESET_QKEY_CNTR)) {
		ibdev_dbg(ibdev, "modify_port: port %u: mask 0x%x not supported\n",
			  port_num, mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE |
					     IB_PORT_RESET_QKEY_CNTR));
		return -EOPNOTSUPP;
	}
	if (mask & (IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE)) {
		ibdev_dbg(ibdev, "modify_port: port %u: mask 0x%x: shutting the port down and its init type are not supported\n",
			  port_num, mask);
		return -EOPNOTSUPP;
	}
	return 0;
}

static struct net_device *sroce_get_netdev(struct ib_device *ibdev,
					   u32 port_num)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	dev_hold(sdev->ndev);
	return sdev->ndev;
}

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_alloc_ucontext_resp resp = {
		.abi_version = SROCE_UVERBS_ABI_VERSION,
		.max_inline_data = SROCE_MAX_INLINE_DATA,
		.max_send_sge = SROCE_MAX_SGE,
		.max_recv_sge = SROCE_MAX_SGE,
	};

	if (udata->outlen < sizeof(resp)) {
		ibdev_dbg(ibuc->device, "alloc_ucontext: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * With this op the core can take a device away from processes that still
 * have it open (rdma link delete, netdev removal, rmmod): it destroys their
 * objects and calls us, instead of waiting for every process to exit. The
 * rings are vmalloc pages the process maps with its own page references,
 * so nothing is left for sroce to revoke.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);

	if (atomic_inc_return(&sdev->num_pd) > SROCE_MAX_PD) {
		atomic_dec(&sdev->num_pd);
		ibdev_dbg(ibpd->device, "alloc_pd: the device already has %u PDs\n",
			  SROCE_MAX_PD);
		return -ENOMEM;
	}
	return 0;
}

static int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_sdev(ibpd->device)->num_pd);
	return 0;
}

/*
 * Called by the RDMA core once the device is unregistered and the last
 * reference is gone: release what sroce_dev_add took, in reverse.
 */
static void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	sroce_net_put(sdev->net, sdev->sn);
	netdev_put(sdev->ndev, &sdev->ndev_tracker);
	mutex_destroy(&sdev->port_lock);
	WARN_ON(atomic_read(&sdev->num_pd));
	WARN_ON(atomic_read(&sdev->num_cq));
	WARN_ON(!xa_empty(&sdev->mr_xa));
	WARN_ON(atomic_read(&sdev->num_qp));
	WARN_ON(atomic_long_read(&sdev->resp_backlog_bytes));
	xa_destroy(&sdev->mr_xa);
	xa_destroy(&sdev->qp_xa);
	xa_destroy(&sdev->ah_xa);
	xa_destroy(&sdev->srq_xa);
	sroce_stats_free(sdev);
}

/* XRC domains: the core keeps their TGT QPs; sroce keeps nothing. */
static int sroce_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

static int sroce_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = (enum rdma_driver_id)SROCE_DRIVER_ID,
	.uverbs_abi_ver = SROCE_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.alloc_mr = sroce_alloc_mr,
	.alloc_mw = sroce_alloc_mw,
	.alloc_pd = sroce_alloc_pd,
	.alloc_xrcd = sroce_alloc_xrcd,
	.attach_mcast = sroce_attach_mcast,
	.create_ah = sroce_create_ah,
	.create_cq = sroce_create_cq,
	.create_qp = sroce_create_qp,
	.create_srq = sroce_create_srq,
	.create_user_ah = sroce_create_ah,
	.alloc_ucontext = sroce_alloc_ucontext,
	.dealloc_driver = sroce_dealloc_driver,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dealloc_xrcd = sroce_dealloc_xrcd,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.device_group = &sroce_cc_attr_group,
	.fill_res_qp_entry = sroce_fill_res_qp_entry,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.detach_mcast = sroce_detach_mcast,
	.get_dma_mr = sroce_get_dma_mr,
	.get_hw_stats = sroce_get_hw_stats,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.get_link_layer = sroce_get_link_layer,
	.get_netdev = sroce_get_netdev,
	.get_port_immutable = sroce_port_immutable,
	.map_mr_sg = sroce_map_mr_sg,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,
	.modify_port = sroce_modify_port,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_device = sroce_query_device,
	.query_pkey = sroce_query_pkey,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	SROCE_OPS_REG_USER_MR,
	.rereg_user_mr = sroce_rereg_user_mr,
	.req_notify_cq = sroce_req_notify_cq,
	SROCE_OPS_RESIZE_CQ,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};

/*
 * Report port state changes as IB async events. Called from the netdev
 * notifier (under RTNL) for UP/DOWN/CHANGE; dispatches only on a change so
 * that a burst of notifier calls gives one event.
 */
void sroce_dev_port_update(struct sroce_dev *sdev)
{
	enum ib_port_state state = sroce_port_state(sdev->ndev);
	struct ib_event ev = {
		.device = &sdev->ib_dev,
		.element.port_num = 1,
	};

	mutex_lock(&sdev->port_lock);
	if (state == sdev->port_state) {
		mutex_unlock(&sdev->port_lock);
		return;
	}
	sdev->port_state = state;
	mutex_unlock(&sdev->port_lock);

	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

/* Is the netdev's parent a PCI function (a NIC rdma_rename would name)? */
static bool sroce_parent_is_pci(const struct net_device *ndev)
{
	return ndev->dev.parent && dev_is_pci(ndev->dev.parent);
}

/* A new device's own fields, on @ndev (a reference is taken). */
static void sroce_dev_init_fields(struct sroce_dev *sdev,
				  struct net_device *ndev)
{
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	sdev->ndev = ndev;
	sdev->net = dev_net(ndev);
	mutex_init(&sdev->port_lock);
	atomic_set(&sdev->num_pd, 0);
	atomic_set(&sdev->num_cq, 0);
	atomic_set(&sdev->num_qp, 0);
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&sdev->srq_xa, XA_FLAGS_ALLOC1);
	atomic_set(&sdev->num_ah, 0);
	atomic_set(&sdev->num_srq, 0);
	INIT_LIST_HEAD(&sdev->mcg_list);
	mutex_init(&sdev->mcg_lock);
}

/* What the RDMA core reads of a new device: node, port, attributes. */
static void sroce_dev_init_ibdev(struct sroce_dev *sdev,
				 struct net_device *ndev)
{
	struct ib_device *ibdev = &sdev->ib_dev;

	strscpy(ibdev->node_desc, "sroce", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid, ndev->dev_addr);
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	sroce_init_attr(sdev);
	sdev->port_state = sroce_port_state(ndev);
	/* DCQCN: the rate an unlimited QP is taken to send at. */
	sroce_cc_dev_init(sdev, sroce_eth_mbps(ndev));
}

/**
 * sroce_dev_add - create and register an sroce ib_device on @ndev
 * @ibdev_name: name requested by "rdma link add"
 * @ndev: the netdev, referenced by the caller for the duration of the call
 *
 * Return: 0 or a negative errno; on error nothing is left behind.
 */
int sroce_dev_add(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	struct ib_device *ibdev;
	int err;

	sdev = ib_alloc_device(sroce_dev, ib_dev);
	if (!sdev)
		return -ENOMEM;
	ibdev = &sdev->ib_dev;
	sroce_dev_init_fields(sdev, ndev);

	err = sroce_stats_init(sdev);
	if (err)
		goto err_put_ndev;
	sdev->sn = sroce_net_get(sdev->net);
	if (IS_ERR(sdev->sn)) {
		err = PTR_ERR(sdev->sn);
		sroce_stats_free(sdev);
		goto err_put_ndev;
	}
	sroce_dev_init_ibdev(sdev, ndev);

	/*
	 * From here on ib_dealloc_device() calls sroce_dealloc_driver(),
	 * which releases the netns and netdev references taken above.
	 */
	ib_set_device_ops(ibdev, &sroce_dev_ops);
	/*
	 * Sit under the NIC's device (virtio, PCI, ...) as hardware RoCE
	 * drivers and siw do, so /sys/class/infiniband/DEV/device/net/ names
	 * the netdev (tools find a device's IP address that way). A veth or
	 * a dummy has no parent; the device is then top-level, like rxe's.
	 *
	 * The name is the user's: mark it so (6.12+). rdma-core's udev rule
	 * renames a device under a PCI function after its PCI address
	 * (rocep3s0) unless it sees that mark, so where there is none the
	 * device stays top-level when the NIC is on PCI. (rdma-core before
	 * 55 ignores the mark: Documentation/troubleshooting.rst.)
	 */
	ib_mark_name_assigned_by_user(ibdev);
	if (SROCE_CAN_MARK_USER_NAME || !sroce_parent_is_pci(ndev))
		ibdev->dev.parent = ndev->dev.parent;
	err = ib_device_set_netdev(ibdev, ndev, 1);
	if (!err)
		err = ib_register_device(ibdev, ibdev_name, NULL);
	if (err) {
		pr_err("sroce: registering %s on %s failed: %d\n",
		       ibdev_name, ndev->name, err);
		ib_dealloc_device(ibdev);
		return err;
	}
	pr_info("sroce: %s created on %s\n", dev_name(&ibdev->dev), ndev->name);
	return 0;

err_put_ndev:
	netdev_put(ndev, &sdev->ndev_tracker);
	mutex_destroy(&sdev->port_lock);
	ib_dealloc_device(ibdev);
	return err;
}
