// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel module that asks register_kprobe() for a probe and reports the
 * answer as its own load error: what a module can do that kprobe_events,
 * perf and BPF cannot (they refuse every function ftrace does not know).
 *
 *   ukl_probe.ko sym=NAME   or   ukl_probe.ko addr=ADDRESS
 *
 * Loading always fails: with register_kprobe()'s error if the probe was
 * refused, with -ECANCELED if it was accepted (and removed at once).
 */
#include <linux/kprobes.h>
#include <linux/module.h>

static char *sym;
module_param(sym, charp, 0);
static unsigned long addr;
module_param(addr, ulong, 0);

static int __init ukl_probe_init(void)
{
	struct kprobe kp = { .symbol_name = sym, .addr = (kprobe_opcode_t *)addr };
	int ret = register_kprobe(&kp);

	pr_info("ukl_probe: register_kprobe(%s %px) = %d\n", sym ? sym : "addr",
		(void *)addr, ret);
	if (ret)
		return ret;
	unregister_kprobe(&kp);
	return -ECANCELED;
}
module_init(ukl_probe_init);

MODULE_DESCRIPTION("Reports whether a kprobe may be put at an address");
MODULE_LICENSE("GPL");
