// SPDX-License-Identifier: GPL-2.0
/*
 * An NMI that arrives while an exception's frame is still on the IST stack
 * the exception came in on, and whose handler faults itself (as perf does
 * when it reads a user stack from an NMI). On a UKL kernel every gate
 * without an IST stack of its own uses a UKL one, so both faults would push
 * their frames from the same stack top unless the NMI moves it.
 *
 * The module sends an NMI to its own CPU and, in the same instruction
 * sequence, loads from an address that faults. QEMU's TCG delivers the
 * fault first and the pending NMI at the fault handler's first
 * instruction, with the fault's frame just pushed. The NMI handler then
 * loads from the same address. Both loads have exception-table fixups.
 * Once with a non-canonical address (a general protection fault), once
 * with an unmapped one (a page fault).
 *
 * Loading reports in the kernel log, per round, where the NMI came and
 * whether each fault was fixed up, and returns 0 if all were, -EIO if
 * not, -ENODEV if the NMI never came (an x2APIC, which the test does not
 * handle).
 */
#include <linux/module.h>
#include <linux/vmalloc.h>

#include <asm/apic.h>
#include <asm/asm.h>
#include <asm/nmi.h>

#define NAME "ukl_nmi_nest"

static unsigned long fault_addr;
static atomic_t armed = ATOMIC_INIT(0);
static unsigned long nmi_ip;
static bool nmi_fault_fixed;

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

static int nmi_faults(unsigned int type, struct pt_regs *regs)
{
	if (!atomic_xchg(&armed, 0))
		return NMI_DONE;
	nmi_ip = regs->ip;
	nmi_fault_fixed = load_faults(fault_addr);
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

/*
 * One round: an NMI pending as a load from @addr faults, and a load from
 * the same address in the NMI handler. 0 if both faults were fixed up.
 */
static int nest_round(const char *what, unsigned long addr, u32 apicid)
{
	unsigned long flags;
	bool fixed;

	fault_addr = addr;
	local_irq_save(flags);
	atomic_set(&armed, 1);
	fixed = load_faults_with_nmi_pending(addr, apicid);
	local_irq_restore(flags);
	if (atomic_xchg(&armed, 0)) {
		pr_info(NAME ": %s: no NMI came\n", what);
		return -ENODEV;
	}
	pr_info(NAME ": %s: NMI at %pS; its own fault %s; the fault it interrupted %s\n",
		what, (void *)nmi_ip, nmi_fault_fixed ? "fixed up" : "missing",
		fixed ? "fixed up" : "missing");
	return nmi_fault_fixed && fixed ? 0 : -EIO;
}

static int __init ukl_nmi_nest_init(void)
{
	void *page;
	u32 apicid;
	int ret;

	if (x2apic_enabled()) {
		pr_info(NAME ": x2APIC mode, not tested\n");
		return -ENODEV;
	}
	page = vmalloc(PAGE_SIZE);
	if (!page)
		return -ENOMEM;
	ret = register_nmi_handler(NMI_LOCAL, nmi_faults, 0, NAME);
	if (ret)
		goto out;
	apicid = *(volatile u32 *)(APIC_BASE + APIC_ID) >> 24;
	/*
	 * A general protection fault (the IST stack of every UKL gate that
	 * has no other), then a page fault (its own IST stack with
	 * UKL_PF_SS). The page after the vmalloc area is its guard page,
	 * mapped by nobody.
	 */
	ret = nest_round("general protection", 0x8000000000000000UL, apicid);
	if (!ret)
		ret = nest_round("page fault", (unsigned long)page + PAGE_SIZE, apicid);
	unregister_nmi_handler(NMI_LOCAL, NAME);
out:
	vfree(page);
	return ret;
}
module_init(ukl_nmi_nest_init);

MODULE_DESCRIPTION("A faulting NMI handler during an exception's entry");
MODULE_LICENSE("GPL");
