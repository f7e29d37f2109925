// SPDX-License-Identifier: GPL-2.0
/*
 * sroce_stall_test - stalls the whole machine, periodically, for tests.
 *
 * A VM whose vCPUs the hypervisor deschedules stops running for a while
 * and then finds its clock moved on: every timer due meanwhile fires at
 * once, before the packets that arrived meanwhile are received. While it is
 * loaded, a kernel thread of this module does that to the test guest: it
 * stops every CPU with interrupts off (stop_machine()) for stall_ms, lets
 * them run for period_ms, and again. selftests/rc_impair.sh runs RC
 * traffic through it and checks that no timer took the stall for the
 * peer's silence. The number of stalls so far reads in
 * /sys/module/sroce_stall_test/parameters/stalls.
 *
 * Only for test machines: it stops the machine.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/stop_machine.h>

static unsigned int stall_ms = 100;
module_param(stall_ms, uint, 0444);
MODULE_PARM_DESC(stall_ms, "Length of a stall in ms (1-1000, default 100)");

static unsigned int period_ms = 300;
module_param(period_ms, uint, 0444);
MODULE_PARM_DESC(period_ms, "Time between two stalls in ms (10-10000, default 300)");

static unsigned int stalls;
module_param(stalls, uint, 0444);
MODULE_PARM_DESC(stalls, "Stalls so far (read only)");

static struct task_struct *stall_task;

static int stall_cpu(void *data)
{
	mdelay(*(unsigned int *)data);
	return 0;
}

static int stall_thread(void *data)
{
	while (!kthread_should_stop()) {
		schedule_timeout_interruptible(msecs_to_jiffies(period_ms));
		if (kthread_should_stop())
			break;
		stop_machine(stall_cpu, &stall_ms, NULL);
		WRITE_ONCE(stalls, stalls + 1);
	}
	return 0;
}

static int __init stall_init(void)
{
	/* The machine runs at least half the time: rmmod must get through. */
	if (!stall_ms || stall_ms > 1000 || period_ms < 10 ||
	    period_ms > 10000 || period_ms < stall_ms) {
		pr_err("stall_ms must be 1-1000, period_ms 10-10000 and at least stall_ms\n");
		return -EINVAL;
	}
	stall_task = kthread_run(stall_thread, NULL, "sroce_stall");
	if (IS_ERR(stall_task))
		return PTR_ERR(stall_task);
	pr_info("stalling every CPU for %u ms every %u ms\n", stall_ms,
		period_ms);
	return 0;
}

static void __exit stall_exit(void)
{
	kthread_stop(stall_task);
	pr_info("%u stalls of %u ms\n", stalls, stall_ms);
}

module_init(stall_init);
module_exit(stall_exit);
MODULE_DESCRIPTION("sroce test: periodic whole-machine stalls");
MODULE_LICENSE("GPL");
