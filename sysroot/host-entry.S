/*
 * Host stand-in for the kernel's UKL entry point.
 *
 * ukl-cc links every program twice: into a relocatable UKL object for the
 * kernel, and into an ordinary static executable that runs on the build
 * host (so ./configure probes and the host-side tests can run it).  In the
 * host executable, this file provides ukl_entry_SYSCALL_64 on top of the
 * real syscall instruction.
 *
 * Contract (libc/patches, sysdeps/unix/sysv/linux/x86_64/sysdep.h): like
 * the syscall instruction - number in %rax, arguments in %rdi, %rsi, %rdx,
 * %r10, %r8, %r9, result in %rax, %rcx/%r11/flags clobbered - and the
 * return address pushed by the call is consumed.  The kernel's entry keeps
 * the return address in its saved registers; a user-space stand-in has
 * only the stack, so the calls whose stack differs on return get special
 * treatment below.
 */
#define NR_rt_sigreturn	15
#define NR_clone	56
#define NR_vfork	58
#define NR_clone3	435
#define CLONE_VFORK	0x4000
#define SIGCHLD		17
#define CLONE_ARGS_STACK	40	/* offsetof(struct clone_args, stack) */
#define CLONE_ARGS_STACK_SIZE	48
#define EOPNOTSUPP	95

	.text
	.globl	ukl_entry_SYSCALL_64
	.type	ukl_entry_SYSCALL_64, @function
	.p2align 4
ukl_entry_SYSCALL_64:
	.cfi_startproc
	cmpl	$NR_clone, %eax
	je	.Lclone
	cmpl	$NR_clone3, %eax
	je	.Lclone3
	cmpl	$NR_vfork, %eax
	je	.Lvfork
	cmpl	$NR_rt_sigreturn, %eax
	je	.Lsigreturn
.Lplain:
	syscall
	ret

	/*
	 * The kernel finds the signal frame from the stack pointer the
	 * restorer had: drop the return address first.  Never returns.
	 */
.Lsigreturn:
	addq	$8, %rsp
	syscall
	hlt

	/*
	 * A clone child with a new stack resumes on that stack, so it must
	 * find the return address there.  %rsi (the new stack) is restored
	 * in parent and child.
	 */
.Lclone:
	testq	%rsi, %rsi
	jz	.Lplain
	movq	(%rsp), %rcx
	subq	$8, %rsi
	movq	%rcx, (%rsi)
	syscall
	leaq	8(%rsi), %rsi
	ret

	/*
	 * The same for clone3, whose child stack is stack + stack_size in
	 * the struct clone_args at %rdi.  The parent restores stack_size.
	 */
.Lclone3:
	movq	CLONE_ARGS_STACK(%rdi), %rcx
	testq	%rcx, %rcx
	jz	.Lplain
	addq	CLONE_ARGS_STACK_SIZE(%rdi), %rcx
	movq	(%rsp), %r11
	movq	%r11, -8(%rcx)
	subq	$8, CLONE_ARGS_STACK_SIZE(%rdi)
	syscall
	testq	%rax, %rax
	jz	1f
	addq	$8, CLONE_ARGS_STACK_SIZE(%rdi)
1:	ret

	/*
	 * A vfork child shares the parent's stack and would overwrite the
	 * return address the parent still needs.  Give the child its own
	 * memory instead (clone without CLONE_VM), keeping vfork's ordering:
	 * the parent sleeps until the child execs or exits.
	 */
.Lvfork:
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	movl	$NR_clone, %eax
	movl	$(CLONE_VFORK | SIGCHLD), %edi
	xorl	%esi, %esi
	syscall
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	ukl_entry_SYSCALL_64, .-ukl_entry_SYSCALL_64

	/*
	 * ukl_syscall, the entry of the C library's syscall(): number in
	 * %rdi, arguments in %rsi, %rdx, %rcx, %r8, %r9 and %rax (the sixth),
	 * registers a C function may change clobbered.  Move them to where
	 * ukl_entry_SYSCALL_64 takes them.
	 */
	.globl	ukl_syscall
	.type	ukl_syscall, @function
	.p2align 4
ukl_syscall:
	.cfi_startproc
	movq	%rax, %r11
	movq	%rdi, %rax
	movq	%rsi, %rdi
	movq	%rdx, %rsi
	movq	%rcx, %rdx
	movq	%r8, %r10
	movq	%r9, %r8
	movq	%r11, %r9
	jmp	ukl_entry_SYSCALL_64
	.cfi_endproc
	.size	ukl_syscall, .-ukl_syscall

	/*
	 * <ukl.h>: the host kernel has no UKL, so every ukl_set_* function
	 * fails with -EOPNOTSUPP.
	 */
	.globl	ukl_set_bypass, ukl_set_run_to_completion
	.type	ukl_set_bypass, @function
	.type	ukl_set_run_to_completion, @function
	.p2align 4
ukl_set_bypass:
ukl_set_run_to_completion:
	.cfi_startproc
	movq	$-EOPNOTSUPP, %rax
	ret
	.cfi_endproc
	.size	ukl_set_bypass, .-ukl_set_bypass

	/*
	 * The kernel's vDSO stand-ins: never called on the host, where libc
	 * finds the real vDSO (-EOPNOTSUPP would send clock_gettime to the
	 * system call).
	 */
	.globl	ukl_vdso_clock_gettime, ukl_vdso_gettimeofday, ukl_vdso_time
	.type	ukl_vdso_clock_gettime, @function
	.type	ukl_vdso_gettimeofday, @function
	.type	ukl_vdso_time, @function
	.p2align 4
ukl_vdso_clock_gettime:
ukl_vdso_gettimeofday:
ukl_vdso_time:
	.cfi_startproc
	movq	$-EOPNOTSUPP, %rax
	ret
	.cfi_endproc
	.size	ukl_vdso_clock_gettime, .-ukl_vdso_clock_gettime

	/*
	 * The kernel's speculation thunks, which application code branches
	 * through (ukl-cc's -mindirect-branch=thunk-extern and
	 * -mfunction-return=thunk-extern): on the host, the plain branches.
	 * The kernel link makes each site what the kernel makes of its own
	 * (ukl/kbuild/thunks.py).
	 */
	.globl	__x86_return_thunk
	.type	__x86_return_thunk, @function
__x86_return_thunk:
	ret
	int3
	.size	__x86_return_thunk, .-__x86_return_thunk

	.macro	INDIRECT_THUNK reg
	.globl	__x86_indirect_thunk_\reg
	.type	__x86_indirect_thunk_\reg, @function
__x86_indirect_thunk_\reg:
	jmp	*%\reg
	int3
	.size	__x86_indirect_thunk_\reg, .-__x86_indirect_thunk_\reg
	.endm

	.irp	reg, rax, rcx, rdx, rbx, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15
	INDIRECT_THUNK \reg
	.endr

	/*
	 * A return to an address in a register (the unwinder's
	 * __builtin_eh_return: pop %rcx; jmp __x86_return_thunk_rcx) is a
	 * jump through it; the kernel link makes it one through the kernel's
	 * __x86_indirect_thunk_rcx.
	 */
	.globl	__x86_return_thunk_rcx
	.type	__x86_return_thunk_rcx, @function
__x86_return_thunk_rcx:
	jmp	*%rcx
	int3
	.size	__x86_return_thunk_rcx, .-__x86_return_thunk_rcx

	.section .note.GNU-stack, "", @progbits
