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
 *   -plugin file=ukl_counts.so,out=FILE[,app=LO-HI]
 *
 * out: the CSV written at exit. app: the UKL application's text, hex
 * kernel-half addresses [LO, HI), whose instructions count as the
 * application's.
 *
 * Privilege is read from the address (QEMU 7.2 gives plugins no register
 * access): code below the canonical hole, and the legacy vsyscall page,
 * runs at CPL3; everything else at CPL0, the UKL application included. A
 * transition is a change between the two from one translation block to the
 * next on a vCPU; its cause is the instruction executed just before it
 * (SYSCALL/SYSENTER, INT n, otherwise an exception or interrupt; SYSRET,
 * IRET, otherwise another return).
 *
 * Counters are plain inline additions: exact when the vCPUs run in one
 * thread, as they do under -icount (what `ukl bench` uses); with
 * multi-threaded TCG on several vCPUs they may lose increments.
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

/* The columns of the CSV, in order. */
#define COUNTERS(X)						\
	X(insns_user)		X(insns_kernel)	X(insns_app)	\
	X(entries_syscall)	X(entries_int)	X(entries_other) \
	X(exits_sysret)		X(exits_iret)	X(exits_other)	\
	X(syscall)		X(sysret)	X(iret)		\
	X(swapgs)		X(cr3_writes)	X(wrmsr)	\
	X(verw)			X(lfence)	X(mfence)	\
	X(cpuid)		X(serialising)			\
	X(indirect_calls)	X(indirect_jumps) X(returns)

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

/* What a transition-causing instruction leaves for the next block. */
enum cause { CAUSE_NONE, CAUSE_SYSCALL, CAUSE_INT, CAUSE_SYSRET, CAUSE_IRET };

enum half { HALF_UNKNOWN, HALF_USER, HALF_KERNEL };

struct vcpu_state {
	enum half half;
	enum cause cause;
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
static uint64_t app_lo, app_hi;

static bool user_address(uint64_t va)
{
	return va < 0x800000000000ull ||
	       (va >= 0xffffffffff600000ull && va < 0xffffffffff601000ull);
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

		if (b == 0x66)
			d->opsize = true;
		else if (b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
			 b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
			 b == 0x65 || b == 0x67)
			continue;
		else if ((b & 0xf0) == 0x40)
			d->rex_r = b & 0x04;
		else
			break;
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
		switch (modrm_reg(d, 1)) {
		case 2: case 3:
			out[n++] = C_indirect_calls;
			break;
		case 4: case 5:
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

	if ((disp & 0xffffff00u) == MARK_BEGIN) {
		memcpy(w->start, counts, sizeof(counts));
		w->open = true;
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
		return;
	}
	if (!w->open)
		return;
	for (i = 0; i < NR_COUNTERS; i++) {
		one.c[i] = counts[i] - w->start[i];
		w->sum[i] += one.c[i];
	}
	g_array_append_val(w->each, one);
	w->passes++;
	w->open = false;
}

static void on_cause(unsigned int vcpu, void *udata)
{
	if (vcpu < MAX_VCPUS)
		vcpus[vcpu].cause = (enum cause)(uintptr_t)udata;
}

static void on_block(unsigned int vcpu, void *udata)
{
	enum half half = (enum half)(uintptr_t)udata;
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
	}
	v->half = half;
	v->cause = CAUSE_NONE;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	enum half half = user_address(qemu_plugin_tb_vaddr(tb)) ? HALF_USER : HALF_KERNEL;
	size_t i;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)half);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *bytes = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		enum counter add[4];
		enum counter where;
		enum cause cause;
		struct decoded d;
		uint32_t disp;
		int k, nadd;

		if (user_address(va))
			where = C_insns_user;
		else if (va >= app_lo && va < app_hi)
			where = C_insns_app;
		else
			where = C_insns_kernel;
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &counts[where], 1);
		decode(bytes, size, &d);
		nadd = classify(&d, add, &cause);
		for (k = 0; k < nadd; k++)
			qemu_plugin_register_vcpu_insn_exec_inline(
				insn, QEMU_PLUGIN_INLINE_ADD_U64, &counts[add[k]], 1);
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
	FILE *f = fopen(out_path, "w");
	char name[24];
	int i;

	if (!f) {
		fprintf(stderr, "ukl_counts: cannot write %s\n", out_path);
		return;
	}
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
	write_row(f, "total", 1, counts);
	fclose(f);
}

static bool parse_range(const char *text, uint64_t *lo, uint64_t *hi)
{
	char *end;

	*lo = strtoull(text, &end, 16);
	if (*end != '-')
		return false;
	*hi = strtoull(end + 1, &end, 16);
	return *end == '\0' && *lo < *hi;
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
		} else if (!strncmp(argv[i], "app=", 4)) {
			if (!parse_range(argv[i] + 4, &app_lo, &app_hi)) {
				fprintf(stderr, "ukl_counts: app=%s: give LO-HI in hex\n",
					argv[i] + 4);
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
