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

#endif /* SROCE_COMPAT_H */
