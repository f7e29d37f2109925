/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference sroce cares about lives here, so the rest
 * of the module reads as one kernel: behind a macro the kernel defines
 * where there is one, behind a SROCE_HAVE_* feature test (Kbuild: what the
 * kernel's headers declare or its core exports) where an interface changed
 * without one, and behind LINUX_VERSION_CODE otherwise. The rest of the
 * module uses the newest spelling.
 *
 * Targets: Debian 12's 6.1, 6.12 (bookworm-backports, Debian 13), and
 * unstable's and experimental's 7.x.
 */
#ifndef SROCE_COMPAT_H
#define SROCE_COMPAT_H

#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "sroce needs Linux 6.1 or newer"
#endif

/* <asm/unaligned.h> moved to <linux/unaligned.h> in 6.12. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * ib_device_ops.create_cq takes the uverbs attribute bundle from 6.11 on
 * (commit dd6d7f8574d7); the driver udata is inside it.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#include <rdma/uverbs_ioctl.h>
#define sroce_create_cq_arg		uverbs_attr_bundle
static inline struct ib_udata *
sroce_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define sroce_create_cq_arg		ib_udata
static inline struct ib_udata *sroce_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/* IB_WR_ATOMIC_WRITE (and IB_UVERBS_WR_ATOMIC_WRITE) came with 6.2. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define SROCE_HAVE_IB_WR_ATOMIC_WRITE	1
#else
#define SROCE_HAVE_IB_WR_ATOMIC_WRITE	0
#endif

/* vm_flags became read-only behind vm_flags_set() in 6.3. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
#include <linux/mm.h>
static inline void sroce_vm_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
	vma->vm_flags |= flags;
}
#else
#define sroce_vm_flags_set	vm_flags_set
#endif

/* from_timer() became timer_container_of() in 6.16. */
#ifndef timer_container_of
#define timer_container_of	from_timer
#endif

/* hrtimer_setup() (6.13) replaced hrtimer_init() and setting ->function. */
#ifndef SROCE_HAVE_HRTIMER_SETUP
#include <linux/hrtimer.h>
static inline void
hrtimer_setup(struct hrtimer *timer,
	      enum hrtimer_restart (*function)(struct hrtimer *),
	      clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* ib_umem_get() became ib_umem_get_va() (7.x); same arguments. */
#ifndef SROCE_HAVE_UMEM_GET_VA
#define ib_umem_get_va		ib_umem_get
#endif

/*
 * The UDP tunnel helpers take the struct sock, not the struct socket, in
 * 7.x; sroce holds the socket udp_sock_create() gives in either case.
 */
#ifdef SROCE_HAVE_UDP_TUNNEL_SK
#define sroce_udp_tunnel_setup(net, sock, cfg) \
	setup_udp_tunnel_sock(net, (sock)->sk, cfg)
#define sroce_udp_tunnel_release(sock)	udp_tunnel_sock_release((sock)->sk)
#else
#define sroce_udp_tunnel_setup		setup_udp_tunnel_sock
#define sroce_udp_tunnel_release	udp_tunnel_sock_release
#endif

/*
 * IPv6 route lookup: through ipv6_stub while IPv6 could be a module; 7.x
 * removed the stubs (IPv6 is built in or absent) and exports the lookup.
 */
#ifdef SROCE_HAVE_IPV6_STUBS
#include <net/ipv6_stubs.h>
static inline struct dst_entry *sroce_ip6_dst_lookup(struct net *net,
						     struct flowi6 *fl6)
{
	return ipv6_stub->ipv6_dst_lookup_flow(net, NULL, fl6, NULL);
}
#else
#include <net/ipv6.h>
static inline struct dst_entry *sroce_ip6_dst_lookup(struct net *net,
						     struct flowi6 *fl6)
{
	return ip6_dst_lookup_flow(net, NULL, fl6, NULL);
}
#endif

/*
 * A workqueue that is not WQ_UNBOUND says it is per CPU: 7.x warns at
 * alloc_workqueue() when it is neither. WQ_PERCPU is an enum constant, so
 * Kbuild looks for it in workqueue.h; before it, per CPU was the default.
 */
#ifndef SROCE_HAVE_WQ_PERCPU
#define WQ_PERCPU 0
#endif

/*
 * A device name chosen by the user ("rdma link add NAME") can be marked as
 * such from 6.12 on; rdma-core's udev rule (rdma_rename, from rdma-core 55
 * on) then leaves it alone. Before 6.12 there is no mark.
 */
#ifdef SROCE_HAVE_NAME_ASSIGN_TYPE
#define SROCE_CAN_MARK_USER_NAME true
#else
#define SROCE_CAN_MARK_USER_NAME false
static inline void ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * Is an RDMA device of this name registered? ib_device_get_by_name() is not
 * exported in 7.x; there the core's own check refuses the name when the
 * device registers (and sroce_dev_add() says so).
 */
#ifdef SROCE_HAVE_DEVICE_GET_BY_NAME
#include <rdma/ib_verbs.h>
static inline bool sroce_ib_name_taken(const char *name)
{
	struct ib_device *other = ib_device_get_by_name(name,
							RDMA_DRIVER_UNKNOWN);

	if (!other)
		return false;
	ib_device_put(other);
	return true;
}
#else
static inline bool sroce_ib_name_taken(const char *name)
{
	return false;
}
#endif

/*
 * ib_device_ops: reg_user_mr gained a DMA handle (struct ib_dmah, 6.17 or
 * later) that sroce does not offer, and resize_cq became resize_user_cq
 * with an unsigned count (7.x). SROCE_OPS_REG_USER_MR and
 * SROCE_OPS_RESIZE_CQ are the ops-table entries for this kernel.
 */
struct ib_mr *sroce_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

#ifdef SROCE_HAVE_REG_MR_DMAH
static inline struct ib_mr *
sroce_reg_user_mr_dmah(struct ib_pd *pd, u64 start, u64 length, u64 iova,
		       int access, struct ib_dmah *dmah,
		       struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return sroce_reg_user_mr(pd, start, length, iova, access, udata);
}

#define SROCE_OPS_REG_USER_MR	.reg_user_mr = sroce_reg_user_mr_dmah
#else
#define SROCE_OPS_REG_USER_MR	.reg_user_mr = sroce_reg_user_mr
#endif

#ifdef SROCE_HAVE_RESIZE_USER_CQ
static inline int sroce_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
				       struct ib_udata *udata)
{
	/* Over INT_MAX is over SROCE_MAX_CQE too: refused either way. */
	return sroce_resize_cq(ibcq, min_t(unsigned int, cqe, INT_MAX), udata);
}

#define SROCE_OPS_RESIZE_CQ	.resize_user_cq = sroce_resize_user_cq
#else
#define SROCE_OPS_RESIZE_CQ	.resize_cq = sroce_resize_cq
#endif

#endif /* SROCE_COMPAT_H */
