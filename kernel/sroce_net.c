// SPDX-License-Identifier: GPL-2.0
/*
 * sroce networking glue: the RoCEv2 UDP sockets of each network namespace
 * and the netdev event notifier.
 *
 * Sockets are per namespace and exist only while at least one sroce device
 * lives on a netdev of that namespace: the first device opens them, the last
 * one closes them, so loading sroce never occupies UDP port 4791 anywhere it
 * is not used (rdma_rxe on 6.1 binds it in the initial namespace).
 */

#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "sroce_transport.h"

struct sroce_net {
	struct mutex lock;		/* protects users and the sockets */
	unsigned int users;		/* sroce devices in this namespace */
	struct socket *sk4;
	struct socket *sk6;		/* NULL when IPv6 is unavailable */
};

static unsigned int sroce_net_id __read_mostly;
static DECLARE_WAIT_QUEUE_HEAD(sroce_net_users_wq);

static struct socket *sroce_sock_open(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = sroce_udp_encap_recv,
	};
	struct udp_port_cfg cfg = {
		.local_udp_port = htons(SROCE_ROCEV2_UDP_PORT),
	};
	struct socket *sock;
	int err;

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
	}
	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	sroce_udp_tunnel_setup(net, sock, &tcfg);
	return sock;
}

/**
 * sroce_net_get - take a user reference on @net's RoCEv2 sockets
 * @net: the namespace of the netdev a device is being created on
 *
 * Opens the sockets on first use. IPv4 is required; IPv6 is best effort
 * (a kernel booted with ipv6.disable=1 has none).
 *
 * Return: the per-namespace state, or an ERR_PTR.
 */
struct sroce_net *sroce_net_get(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);
	struct socket *sock;

	mutex_lock(&sn->lock);
	if (sn->users++) {
		mutex_unlock(&sn->lock);
		return sn;
	}

	sock = sroce_sock_open(net, false);
	if (IS_ERR(sock)) {
		sn->users--;
		mutex_unlock(&sn->lock);
		if (PTR_ERR(sock) == -EADDRINUSE)
			pr_err("sroce: UDP port %u is already in use in this network namespace (is rdma_rxe or another RoCE driver using it?)\n",
			       SROCE_ROCEV2_UDP_PORT);
		else
			pr_err("sroce: cannot open IPv4 UDP socket: %ld\n",
			       PTR_ERR(sock));
		return ERR_CAST(sock);
	}
	sn->sk4 = sock;

	sock = sroce_sock_open(net, true);
	if (IS_ERR(sock)) {
		if (PTR_ERR(sock) == -EADDRINUSE) {
			sroce_udp_tunnel_release(sn->sk4);
			sn->sk4 = NULL;
			sn->users--;
			mutex_unlock(&sn->lock);
			pr_err("sroce: IPv6 UDP port %u is already in use in this network namespace\n",
			       SROCE_ROCEV2_UDP_PORT);
			return ERR_CAST(sock);
		}
		pr_info("sroce: no IPv6 RoCEv2 socket (%ld); IPv4 only\n",
			PTR_ERR(sock));
		sock = NULL;
	}
	sn->sk6 = sock;
	mutex_unlock(&sn->lock);
	return sn;
}

static void sroce_net_close(struct sroce_net *sn)
{
	if (sn->sk6)
		sroce_udp_tunnel_release(sn->sk6);
	if (sn->sk4)
		sroce_udp_tunnel_release(sn->sk4);
	sn->sk6 = NULL;
	sn->sk4 = NULL;
}

/**
 * sroce_net_put - drop a reference taken by sroce_net_get()
 * @net: the namespace passed to sroce_net_get()
 * @sn: what sroce_net_get() returned
 */
void sroce_net_put(struct net *net, struct sroce_net *sn)
{
	mutex_lock(&sn->lock);
	if (!WARN_ON(!sn->users) && !--sn->users) {
		sroce_net_close(sn);
		wake_up_all(&sroce_net_users_wq);
	}
	mutex_unlock(&sn->lock);
}

static unsigned int sroce_net_users(struct sroce_net *sn)
{
	unsigned int users;

	mutex_lock(&sn->lock);
	users = sn->users;
	mutex_unlock(&sn->lock);
	return users;
}

static __net_init int sroce_net_init_ns(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	mutex_init(&sn->lock);
	sn->users = 0;
	sn->sk4 = NULL;
	sn->sk6 = NULL;
	return 0;
}

/*
 * A dying namespace has already unregistered or moved out its netdevs (device
 * pernet ops exit before subsystems), which queued the unregistration of their
 * sroce devices. Those finish asynchronously and drop their user reference
 * here, so wait for them: the state must outlive every device that uses it.
 */
static __net_exit void sroce_net_exit_ns(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	wait_event(sroce_net_users_wq, sroce_net_users(sn) == 0);
	mutex_lock(&sn->lock);
	sroce_net_close(sn);
	mutex_unlock(&sn->lock);
	mutex_destroy(&sn->lock);
}

static struct pernet_operations sroce_net_ops = {
	.init = sroce_net_init_ns,
	.exit = sroce_net_exit_ns,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(ndev,
					(enum rdma_driver_id)SROCE_DRIVER_ID);
	if (!ibdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * Unregistering needs locks the notifier (under RTNL) may not
		 * take; the core does it from a work item and drops our netdev
		 * reference in dealloc_driver before netdev_run_todo() waits.
		 */
		ib_unregister_device_queued(ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		sroce_dev_port_update(to_sdev(ibdev));
		break;
	default:
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block sroce_netdev_notifier = {
	.notifier_call = sroce_netdev_event,
};

int sroce_net_init(void)
{
	int err;

	err = register_pernet_subsys(&sroce_net_ops);
	if (err)
		return err;
	err = register_netdevice_notifier(&sroce_netdev_notifier);
	if (err)
		unregister_pernet_subsys(&sroce_net_ops);
	return err;
}

void sroce_net_exit(void)
{
	unregister_netdevice_notifier(&sroce_netdev_notifier);
	unregister_pernet_subsys(&sroce_net_ops);
}
