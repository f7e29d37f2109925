// SPDX-License-Identifier: GPL-2.0
/*
 * A module whose only purpose is to make the VM harness see a kernel splat
 * on demand, so tools/vm/test/harness-selftest.sh can prove that a splat
 * fails a run even when the command itself succeeds.
 *
 *   insmod splat_test.ko          loads quietly (only the taint message)
 *   insmod splat_test.ko warn=1   WARN_ON(1) at load time
 */
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "trigger a WARN_ON(1) at load time");

static int __init splat_test_init(void)
{
	WARN_ON(warn);
	pr_info("splat_test: loaded (warn=%d)\n", warn);
	return 0;
}

static void __exit splat_test_exit(void)
{
}

module_init(splat_test_init);
module_exit(splat_test_exit);
MODULE_DESCRIPTION("VM harness self-test: WARN on demand");
MODULE_LICENSE("GPL");
