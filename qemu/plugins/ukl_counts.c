// SPDX-License-Identifier: GPL-2.0
/*
 * ukl_counts: a QEMU TCG plugin that counts, exactly, what a guest executes
 * that costs cycles on hardware: instructions (user, kernel, and the UKL
 * application's code in the kernel half), privilege transitions and what
 * caused them, and SWAPGS, CR3 writes, WRMSR, VERW, fences, CPUID and other
 * serialising instructions, indirect branches and returns.
 *
 * Counting windows: a guest program marks the code it measures with
 * distinctive NOPs, `nopl 0x554b42NN(%rax)` before and `nopl
 * 0x554b45NN(%rax)` after (NN: window 0-255; see guest/ukl_marks.h). The
 * plugin adds what was executed between the two (one of the two markers
 * included) to window NN, and counts the passes. A third marker, `nopl
 * 0x554b46NN(%rax)`, flushes window NN: its sums so far become a row of
 * their own, NN.K for the K-th flush (from 0), and the window starts again
 * from zero; a benchmark flushes after each measurement. A flush also
 * gives row NN.K.med: for each counter, its median over the passes (the
 * upper one of an even number), which, unlike a sum, does not change with
 * the odd interrupt that lands in a pass. Rows: NN.K and NN.K.med for
 * every flush, NN for what was not flushed, and the totals of the run.
 *
 *   -plugin file=ukl_counts.so,out=FILE[,app=R][,ithunks=R:R...][,rthunks=R:R...][,pf=A]
 *
 * out: the CSV written at exit. R: a range LO-HI of kernel addresses in hex.
 * app: the UKL application's text, whose instructions count as the
 * application's. ithunks: the kernel's indirect-branch thunks (retpolines);
 * rthunks: its return thunks and untraining sequences; pf: the page-fault
 * entry (asm_exc_page_fault). ukl/bench/counts.py reads them from vmlinux.
 *
 * Instructions are counted as -icount counts them, which is what the
 * guest's rdtsc reads under it: each iteration of a REP string instruction
 * counts, and so does an instruction that faults (once per attempt, where
 * icount leaves it out: a page fault's instruction is one more here).
 *
 * Privilege is read from the address (QEMU 7.2 gives plugins no register
 * access): the lower half runs at CPL3, the kernel half at CPL0, the UKL
 * application included. A transition is a change between the two from one
 * translation block to the next on a vCPU; its cause is the instruction
 * executed just before it (SYSCALL/SYSENTER, INT n, otherwise an exception
 * or interrupt, INT3 included; SYSRET, IRET, otherwise another return). A
 * return to CPL3 that runs no user block before the kernel is entered again
 * (the fetch of the return address faults, as a fork child's first return
 * does) is counted as an exit and an entry too, and in lost_user_blocks:
 * after SYSRET whenever the next block is the kernel's; after IRET when the
 * next block is the page-fault entry and GS was swapped to the user's
 * (Linux swaps GS before every IRET to user mode).
 *
 * Retpolines and return thunks: with the mitigations, an indirect call is
 * a direct call of a thunk, and a return a jump to one. An entry into an
 * indirect-branch thunk counts as an indirect branch (retpolines; those
 * entered by a call, also retpoline_calls), an entry into a return thunk
 * from outside the thunks as a return (return_thunks); the branches inside
 * the thunks do not count.
 *
 * Columns insns, entries, exits and indirect are sums of others, computed
 * for each pass before medians are taken.
 *
 * Counters are plain inline additions: exact when the vCPUs run in one
 * thread, as they do under -icount (what `ukl bench` uses); with
 * multi-threaded TCG on several vCPUs they may lose increments (`ukl run
 * --count` refuses that). A window counts every vCPU.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_BEGIN	0x554b4200u
#define MARK_END	0x554b4500u
#define MARK_FLUSH	0x554b4600u
#define WINDOWS		256
#define MAX_VCPUS	64
#define MAX_RANGES	32

/* The columns of the CSV, in order: counters, then sums of counters. */
#define COUNTERS(X)						\
	X(insns_user)		X(insns_kernel)	X(insns_app)	\
	X(entries_syscall)	X(entries_int)	X(entries_other) \
	X(exits_sysret)		X(exits_iret)	X(exits_other)	\
	X(lost_user_blocks)					\
	X(syscall)		X(sysret)	X(iret)		\
	X(swapgs)		X(cr3_writes)	X(wrmsr)	\
	X(verw)			X(lfence)	X(mfence)	\
	X(cpuid)		X(serialising)			\
	X(indirect_calls)	X(indirect_jumps) X(returns)	\
	X(retpolines)		X(retpoline_calls) X(return_thunks) \
	X(insns)		X(entries)	X(exits)	\
	X(indirect)

enum counter {
#define ENUM(name) C_##name,
	COUNTERS(ENUM)
#undef ENUM
	NR_COUNTERS
};

static const char *const counter_names[NR_COUNTERS] = {
#define NAME(name) #name,
	COUNTERS(NAME)
#undef NAME
};

/* Fill the sums (C_insns on) from the counters of the same array. */
static void derive(uint64_t *c)
{
	c[C_insns] = c[C_insns_user] + c[C_insns_kernel] + c[C_insns_app];
	c[C_entries] = c[C_entries_syscall] + c[C_entries_int] + c[C_entries_other];
	c[C_exits] = c[C_exits_sysret] + c[C_exits_iret] + c[C_exits_other];
	/* Thunk entries not made by a call were indirect jumps. */
	c[C_indirect] = c[C_indirect_calls] + c[C_indirect_jumps] +
			c[C_retpolines] - c[C_retpoline_calls];
}

/* What a transition-causing instruction leaves for the next block. */
enum cause { CAUSE_NONE, CAUSE_SYSCALL, CAUSE_INT, CAUSE_SYSRET, CAUSE_IRET };

enum half { HALF_UNKNOWN, HALF_USER, HALF_KERNEL };

/* Where a block starts, for thunk entries. */
enum kind { KIND_CODE, KIND_ITHUNK, KIND_RTHUNK };

/* A block's udata: its half, its kind, whether it is the page-fault entry. */
#define BLOCK(half, kind, pf)	((uintptr_t)(half) | (uintptr_t)(kind) << 2 | \
				 (uintptr_t)(pf) << 4)
#define BLOCK_HALF(u)		((enum half)((u) & 3))
#define BLOCK_KIND(u)		((enum kind)(((u) >> 2) & 3))
#define BLOCK_PF(u)		(((u) >> 4) & 1)

struct vcpu_state {
	enum half half;
	enum kind kind;
	enum cause cause;
	bool user_gs;		/* GS swapped to the user's since the kernel ran */
	bool iret_to_user;	/* the last IRET ran with the user's GS */
};

struct range {
	uint64_t lo, hi;
};

struct ranges {
	int n;
	struct range r[MAX_RANGES];
};

struct pass {
	uint64_t c[NR_COUNTERS];
};

struct window {
	uint64_t passes;
	bool open;
	unsigned int flushes;
	uint64_t start[NR_COUNTERS];
	uint64_t sum[NR_COUNTERS];
	GArray *each;		/* struct pass: every pass since the last flush */
};

/* A flushed window: rows N.K (sums) and N.K.med (medians) of the CSV. */
struct flushed {
	unsigned int window, seq;
	uint64_t passes;
	uint64_t sum[NR_COUNTERS];
	uint64_t median[NR_COUNTERS];
};

static uint64_t counts[NR_COUNTERS];
static struct window windows[WINDOWS];
static struct vcpu_state vcpus[MAX_VCPUS];
static GArray *flushed_rows;
static char *out_path;
static struct ranges app, ithunks, rthunks;
static uint64_t page_fault_entry;
static GMutex lock;	/* the windows' arrays, if vCPUs ever run in threads */

static bool user_address(uint64_t va)
{
	return (int64_t)va >= 0;
}

static bool in_ranges(const struct ranges *rs, uint64_t va)
{
	int i;

	for (i = 0; i < rs->n; i++)
		if (va >= rs->r[i].lo && va < rs->r[i].hi)
			return true;
	return false;
}

/* An instruction's bytes, past its legacy and REX prefixes. */
struct decoded {
	const uint8_t *op;	/* first opcode byte */
	size_t len;		/* bytes from op on */
	bool rex_r;		/* REX.R: extends ModRM.reg */
	bool opsize;		/* 0x66 */
};

static void decode(const uint8_t *bytes, size_t size, struct decoded *d)
{
	size_t i = 0;

	memset(d, 0, sizeof(*d));
	for (; i < size; i++) {
		uint8_t b = bytes[i];

		/* A REX prefix counts only right before the opcode. */
		if (b == 0x66) {
			d->opsize = true;
			d->rex_r = false;
		} else if (b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
			   b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
			   b == 0x65 || b == 0x67) {
			d->rex_r = false;
		} else if ((b & 0xf0) == 0x40) {
			d->rex_r = b & 0x04;
		} else {
			break;
		}
	}
	d->op = bytes + i;
	d->len = size - i;
}

static int modrm_reg(const struct decoded *d, size_t at)
{
	return at < d->len ? (d->op[at] >> 3) & 7 : -1;
}

static int modrm_mod(const struct decoded *d, size_t at)
{
	return at < d->len ? d->op[at] >> 6 : -1;
}

/*
 * The counters an instruction adds to (besides its instruction count) and
 * the cause it leaves for a transition. Returns how many were written.
 */
static int classify(const struct decoded *d, enum counter *out, enum cause *cause)
{
	const uint8_t *op = d->op;
	int n = 0;

	*cause = CAUSE_NONE;
	if (d->len == 0)
		return 0;
	switch (op[0]) {
	case 0xc2: case 0xc3: case 0xca: case 0xcb:
		out[n++] = C_returns;
		return n;
	case 0xcd:
		*cause = CAUSE_INT;
		return n;
	case 0xcf:
		out[n++] = C_iret;
		out[n++] = C_serialising;
		*cause = CAUSE_IRET;
		return n;
	case 0xff:
		/* Near forms only: far ones (/3, /5) load a segment. */
		switch (modrm_reg(d, 1)) {
		case 2:
			out[n++] = C_indirect_calls;
			break;
		case 4:
			out[n++] = C_indirect_jumps;
			break;
		}
		return n;
	case 0x0f:
		break;
	default:
		return n;
	}
	if (d->len < 2)
		return n;
	switch (op[1]) {
	case 0x05:				/* syscall */
		out[n++] = C_syscall;
		*cause = CAUSE_SYSCALL;
		break;
	case 0x34:				/* sysenter */
		*cause = CAUSE_SYSCALL;
		break;
	case 0x07:				/* sysret */
	case 0x35:				/* sysexit */
		out[n++] = C_sysret;
		*cause = CAUSE_SYSRET;
		break;
	case 0x30:				/* wrmsr */
		out[n++] = C_wrmsr;
		out[n++] = C_serialising;
		break;
	case 0xa2:				/* cpuid */
		out[n++] = C_cpuid;
		out[n++] = C_serialising;
		break;
	case 0x08: case 0x09:			/* invd, wbinvd */
	case 0x23:				/* mov to DRn */
		out[n++] = C_serialising;
		break;
	case 0x22: {				/* mov to CRn */
		int cr = modrm_reg(d, 2) + (d->rex_r ? 8 : 0);

		if (cr == 3)
			out[n++] = C_cr3_writes;
		if (cr != 8)
			out[n++] = C_serialising;
		break;
	}
	case 0x00:				/* group 6 */
		switch (modrm_reg(d, 2)) {
		case 5:				/* verw */
			out[n++] = C_verw;
			break;
		case 2: case 3:			/* lldt, ltr */
			out[n++] = C_serialising;
			break;
		}
		break;
	case 0x01:				/* group 7 */
		if (d->len >= 3 && op[2] == 0xf8) {
			out[n++] = C_swapgs;
		} else if (d->len >= 3 && op[2] == 0xe8) {
			out[n++] = C_serialising;	/* serialize */
		} else if (modrm_mod(d, 2) != 3) {
			int reg = modrm_reg(d, 2);

			if (reg == 2 || reg == 3 || reg == 7)	/* lgdt, lidt, invlpg */
				out[n++] = C_serialising;
		}
		break;
	case 0xae:				/* group 15 */
		if (d->len >= 3 && op[2] >= 0xe8 && op[2] <= 0xef)
			out[n++] = C_lfence;
		else if (d->len >= 3 && op[2] >= 0xf0 && op[2] <= 0xf7)
			out[n++] = C_mfence;
		break;
	case 0x38:				/* 66 0f 38 82: invpcid */
		if (d->opsize && d->len >= 3 && op[2] == 0x82)
			out[n++] = C_serialising;
		break;
	}
	return n;
}

/* 0f 1f 80 disp32: nopl disp32(%rax); a marker when disp32 says so. */
static bool marker(const uint8_t *bytes, size_t size, uint32_t *disp)
{
	if (size != 7 || bytes[0] != 0x0f || bytes[1] != 0x1f || bytes[2] != 0x80)
		return false;
	*disp = bytes[3] | bytes[4] << 8 | bytes[5] << 16 | (uint32_t)bytes[6] << 24;
	switch (*disp & 0xffffff00u) {
	case MARK_BEGIN: case MARK_END: case MARK_FLUSH:
		return true;
	}
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Each counter's median over the passes in `each`. */
static void medians(GArray *each, uint64_t *out)
{
	uint64_t *column = g_new(uint64_t, each->len ? each->len : 1);
	unsigned int i, k;

	for (k = 0; k < NR_COUNTERS; k++) {
		for (i = 0; i < each->len; i++)
			column[i] = g_array_index(each, struct pass, i).c[k];
		qsort(column, each->len, sizeof(*column), cmp_u64);
		out[k] = each->len ? column[each->len / 2] : 0;
	}
	g_free(column);
}

static void on_marker(unsigned int vcpu, void *udata)
{
	uint32_t disp = (uint32_t)(uintptr_t)udata;
	struct window *w = &windows[disp & 0xff];
	struct pass one;
	int i;

	g_mutex_lock(&lock);
	if ((disp & 0xffffff00u) == MARK_BEGIN) {
		memcpy(w->start, counts, sizeof(counts));
		w->open = true;
		g_mutex_unlock(&lock);
		return;
	}
	if ((disp & 0xffffff00u) == MARK_FLUSH) {
		struct flushed row = { .window = disp & 0xff, .seq = w->flushes++,
				       .passes = w->passes };

		memcpy(row.sum, w->sum, sizeof(row.sum));
		medians(w->each, row.median);
		g_array_append_val(flushed_rows, row);
		memset(w->sum, 0, sizeof(w->sum));
		g_array_set_size(w->each, 0);
		w->passes = 0;
		g_mutex_unlock(&lock);
		return;
	}
	if (w->open) {
		for (i = 0; i < NR_COUNTERS; i++)
			one.c[i] = counts[i] - w->start[i];
		derive(one.c);
		for (i = 0; i < NR_COUNTERS; i++)
			w->sum[i] += one.c[i];
		g_array_append_val(w->each, one);
		w->passes++;
		w->open = false;
	}
	g_mutex_unlock(&lock);
}

static void on_cause(unsigned int vcpu, void *udata)
{
	struct vcpu_state *v;

	if (vcpu >= MAX_VCPUS)
		return;
	v = &vcpus[vcpu];
	v->cause = (enum cause)(uintptr_t)udata;
	if (v->cause == CAUSE_IRET)
		v->iret_to_user = v->user_gs;
}

static void on_swapgs(unsigned int vcpu, void *udata)
{
	if (vcpu < MAX_VCPUS)
		vcpus[vcpu].user_gs = !vcpus[vcpu].user_gs;
}

static void on_block(unsigned int vcpu, void *udata)
{
	uintptr_t block = (uintptr_t)udata;
	enum half half = BLOCK_HALF(block);
	enum kind kind = BLOCK_KIND(block);
	struct vcpu_state *v;

	if (vcpu >= MAX_VCPUS)
		return;
	v = &vcpus[vcpu];
	if (v->half == HALF_USER && half == HALF_KERNEL) {
		counts[v->cause == CAUSE_SYSCALL ? C_entries_syscall :
		       v->cause == CAUSE_INT ? C_entries_int : C_entries_other]++;
	} else if (v->half == HALF_KERNEL && half == HALF_USER) {
		counts[v->cause == CAUSE_SYSRET ? C_exits_sysret :
		       v->cause == CAUSE_IRET ? C_exits_iret : C_exits_other]++;
	} else if (v->half == HALF_KERNEL && half == HALF_KERNEL &&
		   (v->cause == CAUSE_SYSRET ||
		    (v->cause == CAUSE_IRET && v->iret_to_user && BLOCK_PF(block)))) {
		/* Back to CPL3 and straight into the kernel, no user block run. */
		counts[v->cause == CAUSE_SYSRET ? C_exits_sysret : C_exits_iret]++;
		counts[C_entries_other]++;
		counts[C_lost_user_blocks]++;
	}
	if (half == HALF_USER)
		v->user_gs = true;
	if (kind == KIND_ITHUNK && v->kind != KIND_ITHUNK)
		counts[C_retpolines]++;
	else if (kind == KIND_RTHUNK && v->kind == KIND_CODE)
		counts[C_return_thunks]++, counts[C_returns]++;
	v->kind = kind;
	v->half = half;
	v->cause = CAUSE_NONE;
}

/* The target of a direct CALL rel32 at `va`, or 0. */
static uint64_t call_target(const struct decoded *d, uint64_t va, size_t size)
{
	int32_t rel;

	if (d->len != 5 || d->op[0] != 0xe8)
		return 0;
	memcpy(&rel, d->op + 1, sizeof(rel));
	return va + size + (int64_t)rel;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t start = qemu_plugin_tb_vaddr(tb);
	enum half half = user_address(start) ? HALF_USER : HALF_KERNEL;
	enum kind kind = in_ranges(&ithunks, start) ? KIND_ITHUNK :
			 in_ranges(&rthunks, start) ? KIND_RTHUNK : KIND_CODE;
	bool pf = page_fault_entry && start == page_fault_entry;
	size_t i;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)BLOCK(half, kind, pf));
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *bytes = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		enum counter add[6];
		enum counter where;
		enum cause cause;
		struct decoded d;
		uint32_t disp;
		int k, nadd;

		bool thunk = in_ranges(&ithunks, va) || in_ranges(&rthunks, va);

		if (user_address(va))
			where = C_insns_user;
		else if (in_ranges(&app, va))
			where = C_insns_app;
		else
			where = C_insns_kernel;
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &counts[where], 1);
		decode(bytes, size, &d);
		nadd = classify(&d, add, &cause);
		for (k = 0; k < nadd; k++) {
			/* Branches inside the thunks are theirs, counted at entry. */
			if (thunk && (add[k] == C_returns || add[k] == C_indirect_calls ||
				      add[k] == C_indirect_jumps))
				continue;
			qemu_plugin_register_vcpu_insn_exec_inline(
				insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[add[k]], 1);
		}
		/* A call of a retpoline is an indirect call (always taken). */
		if (!thunk && in_ranges(&ithunks, call_target(&d, va, size))) {
			qemu_plugin_register_vcpu_insn_exec_inline(
				insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[C_indirect_calls], 1);
			qemu_plugin_register_vcpu_insn_exec_inline(
				insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[C_retpoline_calls], 1);
		}
		for (k = 0; k < nadd; k++)
			if (add[k] == C_swapgs)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_swapgs,
								       QEMU_PLUGIN_CB_NO_REGS, NULL);
		if (cause != CAUSE_NONE)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_cause,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)cause);
		if (marker(bytes, size, &disp))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)disp);
	}
}

static void write_row(FILE *f, const char *name, uint64_t passes, const uint64_t *c)
{
	int i;

	fprintf(f, "%s,%" PRIu64, name, passes);
	for (i = 0; i < NR_COUNTERS; i++)
		fprintf(f, ",%" PRIu64, c[i]);
	fputc('\n', f);
}

static void write_counts(qemu_plugin_id_t id, void *udata)
{
	/* Written aside and renamed: a partial file is never seen. */
	char *tmp = g_strdup_printf("%s.tmp", out_path);
	FILE *f = fopen(tmp, "w");
	uint64_t total[NR_COUNTERS];
	char name[24];
	int i;

	if (!f) {
		fprintf(stderr, "ukl_counts: cannot write %s\n", tmp);
		g_free(tmp);
		return;
	}
	g_mutex_lock(&lock);
	fputs("window,passes", f);
	for (i = 0; i < NR_COUNTERS; i++)
		fprintf(f, ",%s", counter_names[i]);
	fputc('\n', f);
	for (i = 0; i < (int)flushed_rows->len; i++) {
		struct flushed *row = &g_array_index(flushed_rows, struct flushed, i);

		snprintf(name, sizeof(name), "%u.%u", row->window, row->seq);
		write_row(f, name, row->passes, row->sum);
		snprintf(name, sizeof(name), "%u.%u.med", row->window, row->seq);
		write_row(f, name, row->passes, row->median);
	}
	for (i = 0; i < WINDOWS; i++) {
		if (!windows[i].passes)
			continue;
		snprintf(name, sizeof(name), "%d", i);
		write_row(f, name, windows[i].passes, windows[i].sum);
	}
	memcpy(total, counts, sizeof(total));
	derive(total);
	write_row(f, "total", 1, total);
	g_mutex_unlock(&lock);
	if (fclose(f) || rename(tmp, out_path))
		fprintf(stderr, "ukl_counts: cannot write %s\n", out_path);
	g_free(tmp);
}

/* "LO-HI[:LO-HI...]", hex, into `rs`. */
static bool parse_ranges(const char *text, struct ranges *rs)
{
	const char *p = text;
	char *end;

	rs->n = 0;
	while (*p) {
		struct range r;

		if (rs->n == MAX_RANGES)
			return false;
		r.lo = strtoull(p, &end, 16);
		if (*end != '-')
			return false;
		r.hi = strtoull(end + 1, &end, 16);
		if (r.lo >= r.hi || (*end != ':' && *end != '\0'))
			return false;
		rs->r[rs->n++] = r;
		p = *end ? end + 1 : end;
	}
	return rs->n > 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (strcmp(info->target_name, "x86_64") != 0) {
		fprintf(stderr, "ukl_counts: x86_64 guests only, not %s\n", info->target_name);
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			g_free(out_path);
			out_path = g_strdup(argv[i] + 4);
		} else if (!strncmp(argv[i], "app=", 4) ||
			   !strncmp(argv[i], "ithunks=", 8) ||
			   !strncmp(argv[i], "rthunks=", 8)) {
			char *value = strchr(argv[i], '=') + 1;
			struct ranges *rs = argv[i][0] == 'a' ? &app :
					    argv[i][0] == 'i' ? &ithunks : &rthunks;

			if (!parse_ranges(value, rs)) {
				fprintf(stderr, "ukl_counts: %s: give LO-HI[:LO-HI...] in hex\n",
					argv[i]);
				return -1;
			}
		} else if (!strncmp(argv[i], "pf=", 3)) {
			char *end;

			page_fault_entry = strtoull(argv[i] + 3, &end, 16);
			if (*end || !page_fault_entry) {
				fprintf(stderr, "ukl_counts: %s: give an address in hex\n", argv[i]);
				return -1;
			}
		} else {
			fprintf(stderr, "ukl_counts: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "ukl_counts: give out=FILE\n");
		return -1;
	}
	flushed_rows = g_array_new(false, true, sizeof(struct flushed));
	for (i = 0; i < WINDOWS; i++)
		windows[i].each = g_array_new(false, false, sizeof(struct pass));
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_counts, NULL);
	return 0;
}
