/*
 * Shared by the boot-test programs that check the callee-saved registers
 * around a system call that gets a signal at its end (bypass.c,
 * syscall_fn.c): each loads regs_in into rbx, rbp and r12-r15, makes the
 * call (which sends itself SIGUSR1), stores them into regs_after, and
 * compares both arrays with what on_usr1() saw in the signal's context.
 */
#ifndef CALLEE_SAVED_H
#define CALLEE_SAVED_H

#include <signal.h>
#include <string.h>
#include <ucontext.h>

static const unsigned long regs_in[6] = {
	0x1111111111111111UL, 0x2222222222222222UL, 0x3333333333333333UL,
	0x4444444444444444UL, 0x5555555555555555UL, 0x6666666666666666UL,
};
static unsigned long regs_after[6], regs_in_handler[6];
static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig, siginfo_t *info, void *ctx)
{
	const greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;

	(void)sig;
	(void)info;
	regs_in_handler[0] = g[REG_RBX];
	regs_in_handler[1] = g[REG_RBP];
	regs_in_handler[2] = g[REG_R12];
	regs_in_handler[3] = g[REG_R13];
	regs_in_handler[4] = g[REG_R14];
	regs_in_handler[5] = g[REG_R15];
	usr1_seen++;
}

/* Catch SIGUSR1 with on_usr1(), not seen yet. */
static int catch_usr1(void)
{
	struct sigaction sa = { 0 };

	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	usr1_seen = 0;
	return sigaction(SIGUSR1, &sa, NULL);
}

/* After the call: what went wrong, or NULL. */
static const char *callee_saved_verdict(void)
{
	if (usr1_seen != 1)
		return "SIGUSR1 was not delivered at the end of the call";
	if (memcmp(regs_in_handler, regs_in, sizeof(regs_in)))
		return "the signal's context does not hold the caller's rbx, rbp, r12-r15";
	if (memcmp(regs_after, regs_in, sizeof(regs_in)))
		return "rbx, rbp or r12-r15 changed across the call";
	return NULL;
}

#endif /* CALLEE_SAVED_H */
