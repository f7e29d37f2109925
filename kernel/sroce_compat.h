/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel-version difference sroce cares about lives here, behind
 * LINUX_VERSION_CODE, so the rest of the module reads as one kernel.
 *
 * Targets: Debian 12's 6.1, bookworm's 6.12, and the newest Debian kernel.
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

#endif /* SROCE_COMPAT_H */
