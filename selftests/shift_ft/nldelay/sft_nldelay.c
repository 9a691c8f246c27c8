// SPDX-License-Identifier: GPL-2.0
/*
 * sft_nldelay: a test module of shift_ft's selftests (port_reuse.sh).
 *
 * Netlink frees a socket's port before it tells its release
 * (netlink_release(): netlink_remove(), then NETLINK_URELEASE), and
 * another socket may bind that port in between and report on it.  The
 * window is a few instructions wide; this module's notifier, called ahead
 * of shift_ft's (a higher priority), sleeps in it for the releases of
 * generic netlink sockets on the ports ftreuse binds (top byte 0x7f, a
 * range no autobind picks), so that the test's new socket reports on the
 * reused port before shift_ft hears that the old one went.  @delayed
 * counts the releases it held.  Loaded by the lab's tests only.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/netlink.h>
#include <linux/notifier.h>

#define SFT_NLDELAY_PORTS	0x7f000000u
#define SFT_NLDELAY_PORTS_MASK	0xff000000u

static unsigned int delay_ms = 20;
module_param(delay_ms, uint, 0644);
MODULE_PARM_DESC(delay_ms, "how long a release of one of ftreuse's ports waits before shift_ft hears of it (ms, default 20)");

static atomic_t delayed = ATOMIC_INIT(0);

static int delayed_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&delayed));
}

static const struct kernel_param_ops delayed_ops = {
	.get = delayed_get,
};
module_param_cb(delayed, &delayed_ops, NULL, 0444);
MODULE_PARM_DESC(delayed, "releases held so far");

static int nldelay_release(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	unsigned int ms = READ_ONCE(delay_ms);

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    (n->portid & SFT_NLDELAY_PORTS_MASK) != SFT_NLDELAY_PORTS || !ms)
		return NOTIFY_DONE;
	atomic_inc(&delayed);
	msleep(ms);
	return NOTIFY_DONE;
}

static struct notifier_block nldelay_notifier = {
	.notifier_call = nldelay_release,
	.priority = 1,		/* ahead of shift_ft's (0) */
};

static int __init nldelay_init(void)
{
	return netlink_register_notifier(&nldelay_notifier);
}

static void __exit nldelay_exit(void)
{
	netlink_unregister_notifier(&nldelay_notifier);
}

module_init(nldelay_init);
module_exit(nldelay_exit);
MODULE_DESCRIPTION("shift_ft selftests: widens the window of a netlink port reused during its release");
MODULE_LICENSE("GPL");
