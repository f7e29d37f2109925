// SPDX-License-Identifier: GPL-2.0
/*
 * sroce: software RoCEv2 for any Ethernet netdev.
 *
 * Module entry points and the "rdma link" interface:
 *   rdma link add NAME type sroce netdev DEV
 *   rdma link delete NAME
 */

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/if_arp.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "sroce_cc.h"
#include "sroce_transport.h"

/* debugfs sroce/: test knobs (sroce_tx_debugfs_init()), root's. */
static struct dentry *sroce_debugfs;

/* Serialises the existence checks in newlink with the registration. */
static DEFINE_MUTEX(sroce_link_lock);

static int sroce_newlink_locked(const char *ibdev_name,
				struct net_device *ndev)
{
	struct ib_device *other;

	if (!ibdev_name || !*ibdev_name) {
		pr_err("sroce: a device name is required\n");
		return -EINVAL;
	}
	/*
	 * rdma-core's rxe provider claims devices by the name prefix "rxe",
	 * so such a name would hand an sroce device to the wrong provider.
	 */
	if (!strncmp(ibdev_name, "rxe", 3)) {
		pr_err("sroce: device names starting with \"rxe\" are reserved for rdma_rxe\n");
		return -EINVAL;
	}
	if (ndev->type != ARPHRD_ETHER) {
		pr_err("sroce: %s is not an Ethernet device (type %u); sroce needs an Ethernet netdev such as a NIC, veth or dummy\n",
		       ndev->name, ndev->type);
		return -EINVAL;
	}
	if (ndev->reg_state != NETREG_REGISTERED) {
		pr_err("sroce: %s is going away\n", ndev->name);
		return -ENODEV;
	}

	other = ib_device_get_by_netdev(ndev,
					(enum rdma_driver_id)SROCE_DRIVER_ID);
	if (other) {
		pr_err("sroce: %s already has sroce device %s\n", ndev->name,
		       dev_name(&other->dev));
		ib_device_put(other);
		return -EEXIST;
	}

	if (sroce_ib_name_taken(ibdev_name)) {
		pr_err("sroce: an RDMA device named %s already exists\n",
		       ibdev_name);
		return -EEXIST;
	}

	return sroce_dev_add(ibdev_name, ndev);
}

/*
 * The netdev may have started to unregister (or to move to another
 * namespace) after the check above and before the new device was bound to
 * it, so that sroce_netdev_event() did not find the device: its reference
 * would then hold up the netdev's unregistration, or the old namespace's
 * exit, for ever. Under RTNL the notifier cannot run meanwhile.
 */
static void sroce_newlink_recheck(struct net_device *ndev)
{
	struct ib_device *ibdev;

	rtnl_lock();
	ibdev = ib_device_get_by_netdev(ndev,
					(enum rdma_driver_id)SROCE_DRIVER_ID);
	/* A move to another namespace unregisters it from this one too. */
	if (ibdev && (ndev->reg_state != NETREG_REGISTERED ||
		      !net_eq(dev_net(ndev), to_sdev(ibdev)->net))) {
		pr_info("sroce: %s went away while %s was being created; removing it\n",
			ndev->name, dev_name(&ibdev->dev));
		ib_unregister_device_queued(ibdev);
	}
	rtnl_unlock();
	if (ibdev)
		ib_device_put(ibdev);
}

static int sroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	int err;

	mutex_lock(&sroce_link_lock);
	err = sroce_newlink_locked(ibdev_name, ndev);
	if (!err)
		sroce_newlink_recheck(ndev);
	mutex_unlock(&sroce_link_lock);
	return err;
}

static struct rdma_link_ops sroce_link_ops = {
	.type = SROCE_LINK_TYPE,
	.newlink = sroce_newlink,
};

static int __init sroce_init(void)
{
	int err;

	err = sroce_cc_module_init();
	if (WARN_ON(err))
		return err;
	/* Requester and READ-response work: unbound, may run long. */
	sroce_wq = alloc_workqueue("sroce", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!sroce_wq)
		return -ENOMEM;
	/* Per CPU, for paced QPs: see sroce_req_queue(). */
	sroce_pace_wq = alloc_workqueue("sroce_pace",
					WQ_PERCPU | WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!sroce_pace_wq) {
		destroy_workqueue(sroce_wq);
		return -ENOMEM;
	}
	err = sroce_net_init();
	if (err) {
		destroy_workqueue(sroce_pace_wq);
		destroy_workqueue(sroce_wq);
		return err;
	}
	sroce_debugfs = debugfs_create_dir("sroce", NULL);
	sroce_tx_debugfs_init(sroce_debugfs);
	rdma_link_register(&sroce_link_ops);
	pr_info("sroce: version %s loaded (uverbs ABI %u)\n", SROCE_VERSION,
		SROCE_UVERBS_ABI_VERSION);
	return 0;
}

static void __exit sroce_exit(void)
{
	/* No new links, then every device (waits for queued ones), then nets. */
	rdma_link_unregister(&sroce_link_ops);
	debugfs_remove(sroce_debugfs);
	ib_unregister_driver((enum rdma_driver_id)SROCE_DRIVER_ID);
	sroce_net_exit();
	destroy_workqueue(sroce_pace_wq);
	destroy_workqueue(sroce_wq);
	pr_info("sroce: unloaded\n");
}

module_init(sroce_init);
module_exit(sroce_exit);

MODULE_DESCRIPTION("sroce: software RoCEv2 over any Ethernet netdev");
MODULE_AUTHOR("The sroce developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(SROCE_VERSION);
MODULE_ALIAS_RDMA_LINK(SROCE_LINK_TYPE);
