// SPDX-License-Identifier: GPL-2.0
/*
 * NMIs against the UKL IST stacks (kernel 0034).
 *
 * By default: an NMI that arrives while an exception's frame is still on
 * the IST stack the exception came in on, and whose handler faults itself
 * (as perf does when it reads a user stack from an NMI). On a UKL kernel
 * every gate without an IST stack of its own uses a UKL one, so both
 * faults would push their frames from the same stack top unless the NMI
 * moves it. The module sends an NMI to its own CPU and, in the same
 * instruction sequence, loads from an address that faults. QEMU's TCG
 * delivers the fault first and the pending NMI at the fault handler's
 * first instruction, with the fault's frame just pushed. The NMI handler
 * then loads from the same address. Both loads have exception-table
 * fixups. Once with a non-canonical address (a general protection fault),
 * once with an unmapped one (a page fault). It then reports every CPU's
 * IST entries, for the second mode.
 *
 * poke_cpu=N pokes=K: K NMIs sent to CPU N, each claimed by the module's
 * handler, which reports the stack pointer it interrupted and in which
 * mode: an ordinary process there may have pointed its stack pointer at
 * a UKL IST stack, which the NMI must not take for its own.
 *
 * Both modes check that each CPU's IST entries are as they were after the
 * NMIs. Loading never leaves the module loaded: it fails with -ECANCELED
 * when everything went as it should, -EIO when not, -ENODEV when the NMIs
 * did not come (an x2APIC, which the first mode does not handle).
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/vmalloc.h>

#include <asm/apic.h>
#include <asm/asm.h>
#include <asm/nmi.h>
#include <asm/processor.h>

#define NAME "ukl_nmi_nest"

static int poke_cpu = -1;
module_param(poke_cpu, int, 0);
static int pokes = 1;
module_param(pokes, int, 0);

static atomic_t armed = ATOMIC_INIT(0);
static int armed_cpu;
static unsigned long fault_addr;
static unsigned long nmi_ip, nmi_sp;
static bool nmi_user, nmi_fault_fixed;

/* Whether a load from addr faulted and was fixed up. */
static bool load_faults(unsigned long addr)
{
	unsigned int faulted = 1;

	asm volatile("1:	movq (%[addr]), %[addr]\n"
		     "	xorl %[faulted], %[faulted]\n"
		     "2:\n"
		     _ASM_EXTABLE(1b, 2b)
		     : [faulted] "+r" (faulted), [addr] "+r" (addr)
		     : : "memory");
	return faulted;
}

/* Claims the NMIs the module sent, on the CPU it sent them to. */
static int nmi_handler(unsigned int type, struct pt_regs *regs)
{
	if (smp_processor_id() != READ_ONCE(armed_cpu) ||
	    atomic_read(&armed) <= 0)
		return NMI_DONE;
	nmi_ip = regs->ip;
	nmi_sp = regs->sp;
	/* CPL3: user_mode() would also count the UKL application. */
	nmi_user = (regs->cs & 3) == 3;
	if (fault_addr)
		nmi_fault_fixed = load_faults(fault_addr);
	atomic_dec(&armed);
	return NMI_HANDLED;
}

/*
 * The ICR writes and the load in one straight run of instructions, which
 * TCG translates as one block: the NMI stays pending until the block ends,
 * and the block ends at the fault. The alignment keeps the run within one
 * page (a page boundary would end the block early).
 */
static noinline bool load_faults_with_nmi_pending(unsigned long addr, u32 apicid)
{
	unsigned int faulted = 1;

	asm volatile(".balign 32\n"
		     "	movl %[dest], (%[icr2])\n"
		     "	movl %[cmd], (%[icr])\n"
		     "1:	movq (%[addr]), %[addr]\n"
		     "	xorl %[faulted], %[faulted]\n"
		     "2:\n"
		     _ASM_EXTABLE(1b, 2b)
		     : [faulted] "+r" (faulted), [addr] "+r" (addr)
		     : [dest] "r" (SET_XAPIC_DEST_FIELD(apicid)),
		       [cmd] "r" (APIC_DEST_PHYSICAL | APIC_DM_NMI),
		       [icr2] "r" (APIC_BASE + APIC_ICR2),
		       [icr] "r" (APIC_BASE + APIC_ICR)
		     : "memory");
	return faulted;
}

static void read_ist(int cpu, unsigned long ist[7])
{
	memcpy(ist, per_cpu(cpu_tss_rw, cpu).x86_tss.ist, 7 * sizeof(ist[0]));
}

static bool ist_unchanged(int cpu, const unsigned long before[7])
{
	unsigned long after[7];

	read_ist(cpu, after);
	if (!memcmp(before, after, sizeof(after)))
		return true;
	pr_info(NAME ": cpu %d: an IST entry changed: IST5 %lx -> %lx, IST6 %lx -> %lx\n",
		cpu, before[5], after[5], before[6], after[6]);
	return false;
}

/*
 * One round on this CPU: an NMI pending as a load from @addr faults, and a
 * load from the same address in the NMI handler. 0 if both faults were
 * fixed up and the IST entries are as they were.
 */
static int nest_round(const char *what, unsigned long addr)
{
	unsigned long flags, ist[7];
	bool fixed;
	int cpu;

	nmi_ip = 0;
	nmi_fault_fixed = false;
	fault_addr = addr;
	local_irq_save(flags);
	cpu = smp_processor_id();
	read_ist(cpu, ist);
	WRITE_ONCE(armed_cpu, cpu);
	atomic_set(&armed, 1);
	while (*(volatile u32 *)(APIC_BASE + APIC_ICR) & APIC_ICR_BUSY)
		cpu_relax();
	fixed = load_faults_with_nmi_pending(addr, read_apic_id());
	local_irq_restore(flags);
	fault_addr = 0;
	if (atomic_xchg(&armed, 0)) {
		pr_info(NAME ": %s: no NMI came\n", what);
		return -ENODEV;
	}
	pr_info(NAME ": %s: NMI at %pS; its own fault %s; the fault it interrupted %s\n",
		what, (void *)nmi_ip, nmi_fault_fixed ? "fixed up" : "missing",
		fixed ? "fixed up" : "missing");
	if (!ist_unchanged(cpu, ist))
		return -EIO;
	return nmi_fault_fixed && fixed ? 0 : -EIO;
}

static int nest_rounds(void)
{
	void *page = vmalloc(PAGE_SIZE);
	unsigned long ist[7];
	int cpu, ret;

	if (!page)
		return -ENOMEM;
	/*
	 * A general protection fault (the IST stack of every UKL gate that
	 * has no other), then a page fault (its own IST stack with
	 * UKL_PF_SS). The page after the vmalloc area is its guard page,
	 * mapped by nobody.
	 */
	ret = nest_round("general protection", 0x8000000000000000UL);
	if (!ret)
		ret = nest_round("page fault", (unsigned long)page + PAGE_SIZE);
	vfree(page);
	for_each_online_cpu(cpu) {
		read_ist(cpu, ist);
		pr_info(NAME ": cpu %d IST5 %lx IST6 %lx\n", cpu, ist[5], ist[6]);
	}
	return ret;
}

/* pokes NMIs to poke_cpu, one at a time. */
static int poke(void)
{
	unsigned long ist[7], now[7];
	int i, wait;

	if (!cpu_online(poke_cpu) || pokes < 1)
		return -EINVAL;
	read_ist(poke_cpu, ist);
	WRITE_ONCE(armed_cpu, poke_cpu);
	for (i = 0; i < pokes; i++) {
		atomic_set(&armed, 1);
		apic->send_IPI_mask(cpumask_of(poke_cpu), NMI_VECTOR);
		for (wait = 0; wait < 1000 && atomic_read(&armed) > 0; wait++)
			mdelay(1);
		if (atomic_xchg(&armed, 0)) {
			pr_info(NAME ": poke %d: no NMI came\n", i);
			return -ENODEV;
		}
		pr_info(NAME ": poke %d: NMI on cpu %d at sp %lx, %s\n", i, poke_cpu,
			nmi_sp, nmi_user ? "CPL3" : "CPL0");
	}
	/*
	 * The handler cleared armed before the NMI code around it put the
	 * IST entries back: give that CPU a moment to leave the NMI. An entry
	 * the exit did not restore stays changed.
	 */
	for (wait = 0; wait < 1000; wait++) {
		read_ist(poke_cpu, now);
		if (!memcmp(ist, now, sizeof(now)))
			break;
		mdelay(1);
	}
	return ist_unchanged(poke_cpu, ist) ? 0 : -EIO;
}

static int __init ukl_nmi_nest_init(void)
{
	int ret;

	if (x2apic_enabled()) {
		pr_info(NAME ": x2APIC mode, not tested\n");
		return -ENODEV;
	}
	ret = register_nmi_handler(NMI_LOCAL, nmi_handler, 0, NAME);
	if (ret)
		return ret;
	ret = poke_cpu >= 0 ? poke() : nest_rounds();
	unregister_nmi_handler(NMI_LOCAL, NAME);
	return ret ? ret : -ECANCELED;
}
module_init(ukl_nmi_nest_init);

MODULE_DESCRIPTION("NMIs against the IST stacks of a UKL kernel");
MODULE_LICENSE("GPL");
