// SPDX-License-Identifier: GPL-2.0
/*
 * ukl_profile: a QEMU TCG plugin that profiles a whole guest per function,
 * exactly: how many instructions each function executed (self), what it
 * executed that costs cycles on hardware (privilege transitions, SYSCALL,
 * SWAPGS, CR3 writes, VERW, serialising instructions...) and a calling
 * context tree, from which ukl/profile/ makes inclusive counts, folded
 * stacks and a flame graph. In a UKL image the application and the kernel
 * are one vmlinux with one symbol table, so one profile shows both.
 *
 *   -plugin file=ukl_profile.so,out=FILE,syms=FILE[,window=markers|N][,from=A,to=A]
 *           [,every=N,track=F[:F...]]
 *
 * syms: the functions, one a line, sorted and not overlapping: "LO HI FLAGS
 * ..." (hex addresses, HI exclusive; FLAGS "e" for an event entry: an
 * exception, interrupt or SYSCALL entry point, "E" for a table of them,
 * the IRQ stubs, "r" for a program's entry point, where the call stack
 * starts empty, "s", "f" and "x" for the kernel's __switch_to_asm,
 * ret_from_fork and do_task_dead (see "Context switches"), "-" for none;
 * anything after is the profile tool's). A function's index is its line
 * number. An address in no function counts as "unknown", one bucket per
 * half of the address space.
 *
 * Counting: every instruction is counted by one inline addition to a
 * single counter, as -icount counts it (each iteration of a REP string
 * instruction, and an instruction that faults, once per attempt). A
 * callback at the start of each executed block attributes the instructions
 * executed since the previous one (the counter's delta) to the previous
 * block's instructions in order, each to the function its address lies in:
 * exact even when a block stops half-way (a fault) or spans two functions.
 *
 * Window: by default the whole run counts. window=markers counts what runs
 * between the UKL_COUNT_BEGIN(n) and UKL_COUNT_END(n) marker NOPs of any
 * window n (guest/ukl_marks.h; the BEGIN marker counted, as ukl_counts
 * counts one of the two), window=N only window N's; from=A,to=A (hex) count
 * from each execution of the instruction at A to the next of the one at B
 * (the instruction at A counted, the one at B not).
 *
 * Series: every=N,track=F:G... (N instructions, F and G function indices)
 * splits the tracked functions' counts into intervals of N instructions of
 * the run (the whole run's, window or not): interval k holds what executed
 * as instruction k * N + 1 to (k + 1) * N, the last interval what ran after
 * the last multiple. Per interval and tracked function: calls, how many
 * times its first instruction executed, and self instructions, both counted
 * only inside the window as the profile is, so that a function's intervals
 * add up to its profile. Exact, as the rest: the attribution that follows
 * the counter stops at each multiple of N, writes the row and goes on.
 *
 * Stacks: a shadow call stack per vCPU. A block that ends in a CALL and ran
 * to its end pushes the return address; a block that starts at the return
 * address on top of the stack pops it, and after a RET the stack is popped
 * down to the frame whose return address the RET reached (or, when none
 * does, by one frame: a ret always leaves one). A jump into another
 * function replaces the top function (a tail call). An event entry (FLAGS
 * "e") reached other than by a call, and any entry from the user half to
 * the kernel half, pushes a pseudo-frame under the code it interrupted
 * (one per event: an IRQ stub's jump to asm_common_interrupt, itself an
 * entry, is a tail call, or its IRET would leave the stub's behind); an
 * IRET or SYSRET pops down to the newest pseudo-frame, and a return to the
 * user half also drops the kernel frames left above it. The stack is
 * emptied at a program's entry point (_start), and when kernel code would
 * run on user frames with no entry between (the frames of a program that
 * exec'ed, or one that a UKL application replaced).
 *
 * Context switches: each task has its own shadow stack. The kernel's
 * __switch_to_asm (FLAGS "s") stores the outgoing task's stack pointer
 * with `mov %rsp, thread.sp(prev)` and loads the incoming one's with `mov
 * thread.sp(next), %rsp`; those two instructions are found by decoding
 * the function's code as it is translated, and a memory callback on each
 * gives the address of the task's thread.sp field, which names the task.
 * At the load, the vCPU's stack and calling context are saved under the
 * outgoing task's address and the incoming task's are restored (an empty
 * stack for a task never seen: a new one, whose first frames are
 * ret_from_fork's, FLAGS "f", where its stack is emptied again). A task
 * that switches out from do_task_dead (FLAGS "x") has exited: nothing is
 * saved for it, so its task_struct's next owner starts empty. Where the
 * two instructions are not found (another kernel), the output's
 * `switches` is 0 and the stacks are one per vCPU, as if switches did
 * not happen.
 *
 * What this gets wrong: a longjmp or a kernel exception fix-up leaves
 * frames that are popped only by later returns; an NMI taken between an
 * IRQ stub and the common entry gets no pseudo-frame of its own; a task
 * that exits without passing do_task_dead leaves its stack to the next
 * task at its address for the few instructions up to ret_from_fork.
 * Self counts do not depend on the stacks.
 *
 * Only one vCPU: the instruction counter is one global (exact because the
 * vCPUs of -icount run in one thread, but attributed per vCPU).
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
#define MAX_STACK	512
#define MAX_DEPTH	256	/* deeper contexts replace their leaf instead */
#define NO_FUNC		UINT32_MAX
#define PSEUDO_RET	1	/* a pseudo-frame's return address: never a block's */

/*
 * What a function executed besides its instructions. Decoded here in the
 * same way as qemu/plugins/ukl_counts.c (a smaller set: no thunks, no
 * returns), so the two plugins' columns mean the same.
 */
#define EVENTS(X)						\
	X(entries)	X(exits)	X(syscall)	X(sysret)	\
	X(iret)		X(swapgs)	X(cr3_writes)	X(wrmsr)	\
	X(verw)		X(lfence)	X(mfence)	X(cpuid)	\
	X(serialising)	X(indirect)

enum event {
#define ENUM(name) E_##name,
	EVENTS(ENUM)
#undef ENUM
	NR_EVENTS
};

static const char *const event_names[NR_EVENTS] = {
#define NAME(name) #name,
	EVENTS(NAME)
#undef NAME
};

/* How a block ends, for the shadow stack. */
enum last { LAST_OTHER, LAST_CALL, LAST_RET, LAST_IRET };

/* Instructions [previous end, end) of a block belong to function `func`. */
struct seg {
	uint32_t func, end;
};

/* An instruction of a block that counts in an event column. */
struct flagged {
	uint32_t index, bits;
};

/* The first instruction of a tracked function, at `index` of a block. */
struct entry {
	uint32_t index, slot;
};

struct block {
	uint64_t start;
	uint64_t ret_addr;	/* LAST_CALL: the address after the call */
	uint32_t n_insns, nsegs, nflagged, nentries;
	bool user;		/* lower half: CPL3 */
	bool event_entry;	/* starts at an event entry point */
	bool stub;		/* in a table of entries (an IRQ stub) */
	bool reset;		/* starts at a program's entry point */
	bool fork_start;	/* starts at ret_from_fork: a new task's first code */
	enum last last;
	struct seg *segs;
	struct flagged *flagged;
	struct entry *entries;
};

struct frame {
	uint64_t ret;		/* PSEUDO_RET for an event's pseudo-frame */
	uint64_t pending;	/* a pseudo-frame's: a call to push when it returns */
	uint32_t node;		/* the calling context (its leaf: the caller) */
};

struct vcpu_state {
	struct block *cur;	/* the block executing */
	uint32_t off;		/* cur's instructions attributed so far */
	uint64_t mark;		/* `insns` when they were */
	uint32_t node;		/* calling context of the executing code */
	uint32_t last_func;	/* function of the last instruction executed */
	int depth;
	struct frame stack[MAX_STACK];
};

struct node {
	uint32_t parent, func, depth;
	uint64_t insns;
};

struct func {
	uint64_t lo, hi;
	bool event_entry;	/* FLAGS e: blocks starting at LO are event entries */
	bool entry_table;	/* FLAGS E: every block in it is (the IRQ stubs) */
	bool reset;		/* FLAGS r: a program's entry; its stack starts empty */
	bool switch_asm;	/* FLAGS s: __switch_to_asm, where tasks switch stacks */
	bool fork_ret;		/* FLAGS f: ret_from_fork, a new task's first code */
	bool task_dead;		/* FLAGS x: do_task_dead, an exited task's last call */
};

/* A switched-out task's shadow stack, until it runs again. */
struct saved_stack {
	uint32_t node;
	int depth;
	struct frame frames[];
};

static uint64_t insns;			/* every instruction executed */
static struct vcpu_state vcpu0;
static struct func *funcs;
static uint32_t nfuncs;			/* + 2 buckets: unknown user, kernel */
static uint64_t *self;			/* per function */
static uint64_t (*events)[NR_EVENTS];	/* per function */
static GArray *nodes;			/* struct node; 0 is the root */
static GHashTable *children;		/* parent << 32 | func -> node + 1 */
static bool counting;
static uint64_t counted, passes, window_start;
static uint64_t overruns;		/* deltas longer than the block: never, if exact */
static int window = -1;			/* -1: any marker window */
static bool markers, whole_run = true;
static uint64_t from_addr, to_addr;
static char *out_path, *syms_path;
/* Series: intervals of `every` instructions (0: none), per tracked slot. */
static uint64_t every, next_boundary, last_row_end;
static uint32_t ntracked;
static uint32_t *tracked;		/* slot -> function */
static int32_t *slot_of;		/* function -> slot, or -1 */
static uint64_t *interval_calls, *interval_self;	/* per slot, this interval */
static GArray *rows;			/* uint64_t: end, then calls, self per slot */
/*
 * Context switches: the switched-out tasks' shadow stacks, by the address
 * of the task's thread.sp (uint64_t -> struct saved_stack); the outgoing
 * task's address between the store and the load of __switch_to_asm.
 */
static GHashTable *saved_stacks;
static uint64_t outgoing;
static bool outgoing_known;
static uint64_t switches;		/* context switches followed */

static uint32_t unknown(bool user)
{
	return nfuncs + (user ? 0 : 1);
}

static uint32_t lookup(uint64_t va)
{
	uint32_t lo = 0, hi = nfuncs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (va < funcs[mid].lo)
			hi = mid;
		else if (va >= funcs[mid].hi)
			lo = mid + 1;
		else
			return mid;
	}
	return unknown((int64_t)va >= 0);
}

static struct node *node_at(uint32_t id)
{
	return &g_array_index(nodes, struct node, id);
}

static uint32_t child(uint32_t parent, uint32_t func)
{
	uint64_t key = (uint64_t)parent << 32 | func;
	gpointer found = g_hash_table_lookup(children, &key);
	struct node n;
	uint64_t *k;

	if (found)
		return (uint32_t)(uintptr_t)found - 1;
	if (node_at(parent)->depth >= MAX_DEPTH)
		return parent;	/* too deep: charged to the deepest context */
	n = (struct node){ .parent = parent, .func = func,
			   .depth = node_at(parent)->depth + 1 };
	g_array_append_val(nodes, n);
	k = g_new(uint64_t, 1);
	*k = key;
	g_hash_table_insert(children, k, (gpointer)(uintptr_t)nodes->len);
	return nodes->len - 1;
}

/* The context `node` with its leaf function replaced by `func`. */
static uint32_t leaf(uint32_t node, uint32_t func)
{
	struct node *n = node_at(node);

	if (n->func == func)
		return node;
	return child(node ? n->parent : 0, func);
}

/* The function of a block's instruction `index`. */
static uint32_t lookup_func_of(const struct block *b, uint32_t index)
{
	uint32_t s;

	for (s = 0; s < b->nsegs - 1; s++)
		if (index < b->segs[s].end)
			break;
	return b->segs[s].func;
}

/* Attribute the next `n` instructions of the executing block. */
static void attribute(struct vcpu_state *v, uint64_t n)
{
	struct block *b = v->cur;
	uint32_t end, s, k;

	if (!b || !n)
		return;
	if (n > b->n_insns - v->off) {
		overruns++;
		n = b->n_insns - v->off;
	}
	end = v->off + (uint32_t)n;
	for (s = 0; s < b->nsegs; s++) {
		uint32_t lo = s ? b->segs[s - 1].end : 0, hi = b->segs[s].end;
		uint32_t func = b->segs[s].func;

		if (hi <= v->off)
			continue;
		if (lo >= end)
			break;
		lo = lo > v->off ? lo : v->off;
		hi = hi < end ? hi : end;
		v->node = leaf(v->node, func);
		v->last_func = func;
		if (counting) {
			self[func] += hi - lo;
			node_at(v->node)->insns += hi - lo;
			if (ntracked && slot_of[func] >= 0)
				interval_self[slot_of[func]] += hi - lo;
		}
	}
	if (counting) {
		for (k = 0; k < b->nentries; k++)
			if (b->entries[k].index >= v->off && b->entries[k].index < end)
				interval_calls[b->entries[k].slot]++;
		for (k = 0; k < b->nflagged; k++) {
			struct flagged *f = &b->flagged[k];
			int e;

			if (f->index < v->off || f->index >= end)
				continue;
			for (e = 0; e < NR_EVENTS; e++)
				if (f->bits & (1u << e))
					events[lookup_func_of(b, f->index)][e]++;
		}
	}
	v->off = end;
}

/* The series' row of the interval that ends after instruction `end`. */
static void end_interval(uint64_t end)
{
	uint32_t s;

	g_array_append_val(rows, end);
	for (s = 0; s < ntracked; s++) {
		g_array_append_val(rows, interval_calls[s]);
		g_array_append_val(rows, interval_self[s]);
		interval_calls[s] = interval_self[s] = 0;
	}
	last_row_end = end;
}

/*
 * Attribute the next `n` instructions executed (after `mark`), ending an
 * interval of the series at each multiple of `every` they reach: the
 * instructions up to it in that interval, the rest in the next.
 */
static void advance(struct vcpu_state *v, uint64_t n)
{
	while (every && v->mark + n >= next_boundary) {
		uint64_t before = next_boundary - v->mark;

		attribute(v, before);
		v->mark = next_boundary;
		n -= before;
		end_interval(next_boundary);
		next_boundary += every;
	}
	attribute(v, n);
	v->mark += n;
}

/* Everything executed up to now, attributed. */
static void sync_vcpu(struct vcpu_state *v)
{
	advance(v, insns - v->mark);
}

static void push(struct vcpu_state *v, uint64_t ret)
{
	if (v->depth == MAX_STACK) {
		/* Runaway (a context switch's leftovers): forget the oldest. */
		memmove(v->stack, v->stack + MAX_STACK / 2,
			sizeof(v->stack[0]) * (MAX_STACK - MAX_STACK / 2));
		v->depth -= MAX_STACK / 2;
	}
	v->stack[v->depth++] = (struct frame){ .ret = ret, .node = v->node };
}

/* Pop down to (and including) frame `i`; its context becomes current. */
static void pop_to(struct vcpu_state *v, int i)
{
	v->node = v->stack[i].node;
	v->depth = i;
}

/* The newest pseudo-frame, or -1. */
static int newest_pseudo(const struct vcpu_state *v)
{
	int i;

	for (i = v->depth - 1; i >= 0; i--)
		if (v->stack[i].ret == PSEUDO_RET)
			break;
	return i;
}

/* Follow the flow from the block that ran to block `b`. */
static void follow(struct vcpu_state *v, struct block *prev, bool ran, struct block *b)
{
	bool call = ran && prev->last == LAST_CALL;
	bool iret = ran && prev->last == LAST_IRET;
	bool to_kernel = prev && prev->user && !b->user;
	bool to_user = prev && !prev->user && b->user;
	uint32_t func = b->segs[0].func;
	/*
	 * An IRQ stub pushes the vector and jumps to the common entry: the
	 * event the stub's pseudo-frame stands for goes on there.
	 */
	bool chained = ran && prev->stub && b->event_entry && !b->stub;
	bool event = to_kernel || (b->event_entry && !call && !chained);
	int i;

	if (b->reset || (b->fork_start && switches) ||
	    (!b->user && !to_kernel && v->depth &&
	     v->stack[v->depth - 1].ret != PSEUDO_RET &&
	     (int64_t)v->stack[v->depth - 1].ret >= 0)) {
		/*
		 * A new program starts with no frames, and so does a new task
		 * (when switches are followed: its stack is its own, and
		 * whatever was restored for it was an earlier task's at the
		 * same address); and kernel code never runs on user frames
		 * without an entry's pseudo-frame between (the frames of a
		 * program that exec'ed, or one that a UKL application replaced).
		 */
		v->depth = 0;
		v->node = child(0, func);
		return;
	}
	if (iret) {
		/*
		 * First, as the next block may be an event entry: an interrupt
		 * pending when IRET turned interrupts back on.
		 */
		i = newest_pseudo(v);
		if (i >= 0) {
			uint64_t pending = v->stack[i].pending;

			pop_to(v, i);
			if (pending) {
				push(v, pending);
				if (!event) {
					v->node = child(v->node, func);
					return;
				}
			}
		}
	}
	if (event) {
		/*
		 * A call whose target faulted (a code page not mapped yet) has
		 * pushed its return address but not run its callee: the frame
		 * is pushed when the entry returns to the callee.
		 */
		push(v, PSEUDO_RET);
		v->stack[v->depth - 1].pending = call ? prev->ret_addr : 0;
		v->node = child(v->node, func);
		return;
	}
	if (call) {
		push(v, prev->ret_addr);
		v->node = child(v->node, func);
		return;
	}
	if (!iret && v->depth && v->stack[v->depth - 1].ret == b->start) {
		pop_to(v, v->depth - 1);
	} else if (ran && prev->last == LAST_RET && v->depth) {
		for (i = v->depth - 1; i >= 0; i--)
			if (v->stack[i].ret == b->start || v->stack[i].ret == PSEUDO_RET)
				break;
		if (i >= 0 && v->stack[i].ret == b->start)
			pop_to(v, i);
		else if (v->stack[v->depth - 1].ret != PSEUDO_RET)
			pop_to(v, v->depth - 1);
	}
	if (to_user) {
		/* No kernel frame is live in user mode. */
		while (v->depth && (v->stack[v->depth - 1].ret == PSEUDO_RET ||
				    (int64_t)v->stack[v->depth - 1].ret < 0)) {
			uint64_t pending = v->stack[v->depth - 1].pending;

			pop_to(v, v->depth - 1);
			if (pending) {
				push(v, pending);
				v->node = child(v->node, func);
				return;
			}
		}
	}
	v->node = leaf(v->node, func);
}

static void on_block(unsigned int vcpu_index, void *udata)
{
	struct vcpu_state *v = &vcpu0;
	struct block *b = udata, *prev = v->cur;
	bool ran = prev && v->off + (insns - v->mark) >= prev->n_insns;

	sync_vcpu(v);
	if (counting && prev && prev->user != b->user && v->last_func != NO_FUNC)
		events[v->last_func][b->user ? E_exits : E_entries]++;
	follow(v, prev, ran, b);
	v->cur = b;
	v->off = 0;
}

/*
 * Attribute the executing block's instructions before its instruction
 * `index`, whether or not QEMU has run that one's inline addition yet: a
 * window opens and closes at an exact instruction.
 */
static void sync_before(struct vcpu_state *v, uint32_t index)
{
	if (index > v->off)
		advance(v, index - v->off);
}

/* A window opens before instruction `index` of the executing block. */
static void open_window(uint32_t index)
{
	sync_before(&vcpu0, index);
	if (!counting) {
		counting = true;
		window_start = vcpu0.mark;
	}
}

static void close_window(uint32_t index)
{
	sync_before(&vcpu0, index);
	if (counting) {
		counting = false;
		counted += vcpu0.mark - window_start;
		passes++;
	}
}

/* udata: the marker's displacement, and its index in the block above it. */
static void on_marker(unsigned int vcpu_index, void *udata)
{
	uint32_t disp = (uint32_t)(uintptr_t)udata;
	uint32_t index = (uint32_t)((uintptr_t)udata >> 32);

	if (window >= 0 && (int)(disp & 0xff) != window)
		return;
	if ((disp & 0xffffff00u) == MARK_BEGIN)
		open_window(index);
	else
		close_window(index);
}

static void on_from(unsigned int vcpu_index, void *udata)
{
	open_window((uint32_t)(uintptr_t)udata);
}

static void on_to(unsigned int vcpu_index, void *udata)
{
	close_window((uint32_t)(uintptr_t)udata);
}

/* Whether a task switching out from do_task_dead (it has exited). */
static bool exiting(const struct vcpu_state *v)
{
	int i;

	for (i = v->depth - 1; i >= 0; i--) {
		uint32_t func = node_at(v->stack[i].node)->func;

		if (func < nfuncs && funcs[func].task_dead)
			return true;
	}
	return false;
}

/* __switch_to_asm's `mov %rsp, thread.sp(prev)`: `vaddr` names prev. */
static void on_switch_out(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
			  uint64_t vaddr, void *udata)
{
	outgoing = vaddr;
	outgoing_known = true;
}

/*
 * __switch_to_asm's `mov thread.sp(next), %rsp`, instruction `index` of
 * its block: from here on the vCPU runs on next's stack. Everything up to
 * this instruction ran as prev, the rest of the block as next.
 */
static void on_switch_in(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
			 uint64_t vaddr, void *udata)
{
	struct vcpu_state *v = &vcpu0;
	uint32_t index = (uint32_t)(uintptr_t)udata;
	struct saved_stack *s;

	if (!outgoing_known)
		return;		/* a load without its store: not a switch we know */
	outgoing_known = false;
	sync_before(v, index + 1);
	if (exiting(v)) {
		/* Never resumed: its address is free for a new task. */
		g_hash_table_remove(saved_stacks, &outgoing);
	} else {
		uint64_t *key = g_new(uint64_t, 1);

		s = g_malloc(sizeof(*s) + sizeof(s->frames[0]) * v->depth);
		s->node = v->node;
		s->depth = v->depth;
		memcpy(s->frames, v->stack, sizeof(s->frames[0]) * v->depth);
		*key = outgoing;
		g_hash_table_replace(saved_stacks, key, s);
	}
	s = g_hash_table_lookup(saved_stacks, &vaddr);
	if (s) {
		v->node = s->node;
		v->depth = s->depth;
		memcpy(v->stack, s->frames, sizeof(s->frames[0]) * s->depth);
		/* Saved again when it switches out: the table holds the sleeping. */
		g_hash_table_remove(saved_stacks, &vaddr);
	} else {
		/* A task never seen: a new one; __switch_to_asm is its root. */
		v->depth = 0;
		v->node = child(0, v->last_func);
	}
	switches++;
}

/* Past legacy and REX prefixes: the opcode, and REX.R, REX.W and 0x66. */
struct decoded {
	const uint8_t *op;
	size_t len;
	bool rex_r, rex_w, opsize;
};

static void decode(const uint8_t *bytes, size_t size, struct decoded *d)
{
	size_t i;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < size; i++) {
		uint8_t b = bytes[i];

		if (b == 0x66) {
			d->opsize = true;
			d->rex_r = d->rex_w = false;
		} else if (b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 ||
			   b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 || b == 0x67) {
			d->rex_r = d->rex_w = false;
		} else if ((b & 0xf0) == 0x40) {
			d->rex_r = b & 0x04;
			d->rex_w = b & 0x08;
		} else {
			break;
		}
	}
	d->op = bytes + i;
	d->len = size - i;
}

static int reg_of(const struct decoded *d, size_t at)
{
	return at < d->len ? (d->op[at] >> 3) & 7 : -1;
}

static int mod_of(const struct decoded *d, size_t at)
{
	return at < d->len ? d->op[at] >> 6 : -1;
}

#define BIT(e) (1u << E_##e)

/* The event columns an instruction counts in, and how it ends a block. */
static uint32_t classify(const struct decoded *d, enum last *last)
{
	const uint8_t *op = d->op;

	*last = LAST_OTHER;
	if (d->len == 0)
		return 0;
	switch (op[0]) {
	case 0xe8:
		*last = LAST_CALL;
		return 0;
	case 0xc2: case 0xc3:
		*last = LAST_RET;
		return 0;
	case 0xcf:
		*last = LAST_IRET;
		return BIT(iret) | BIT(serialising);
	case 0xff:
		switch (reg_of(d, 1)) {
		case 2:
			*last = LAST_CALL;
			return BIT(indirect);
		case 4:
			return BIT(indirect);
		}
		return 0;
	case 0x0f:
		break;
	default:
		return 0;
	}
	if (d->len < 2)
		return 0;
	switch (op[1]) {
	case 0x05:
		return BIT(syscall);
	case 0x07: case 0x35:			/* sysret, sysexit */
		*last = LAST_IRET;
		return BIT(sysret);
	case 0x30:
		return BIT(wrmsr) | BIT(serialising);
	case 0xa2:
		return BIT(cpuid) | BIT(serialising);
	case 0x08: case 0x09: case 0x23:	/* invd, wbinvd, mov to DRn */
		return BIT(serialising);
	case 0x22: {
		int cr = reg_of(d, 2) + (d->rex_r ? 8 : 0);

		return (cr == 3 ? BIT(cr3_writes) : 0) | (cr != 8 ? BIT(serialising) : 0);
	}
	case 0x00:
		switch (reg_of(d, 2)) {
		case 5:
			return BIT(verw);
		case 2: case 3:			/* lldt, ltr */
			return BIT(serialising);
		}
		return 0;
	case 0x01:
		if (d->len >= 3 && op[2] == 0xf8)
			return BIT(swapgs);
		if (d->len >= 3 && op[2] == 0xe8)
			return BIT(serialising);	/* serialize */
		if (mod_of(d, 2) != 3) {
			int reg = reg_of(d, 2);

			if (reg == 2 || reg == 3 || reg == 7)	/* lgdt, lidt, invlpg */
				return BIT(serialising);
		}
		return 0;
	case 0xae:
		if (d->len >= 3 && op[2] >= 0xe8 && op[2] <= 0xef)
			return BIT(lfence);
		if (d->len >= 3 && op[2] >= 0xf0 && op[2] <= 0xf7)
			return BIT(mfence);
		return 0;
	case 0x38:
		if (d->opsize && d->len >= 3 && op[2] == 0x82)
			return BIT(serialising);	/* invpcid */
		return 0;
	}
	return 0;
}

/*
 * A 64-bit mov between %rsp and memory: REX.W 89 /r stores it (`store`),
 * REX.W 8b /r loads it; ModRM.reg is %rsp (4, without REX.R), ModRM.mod
 * not 3 (a memory operand).
 */
static bool rsp_mov(const struct decoded *d, bool store)
{
	return d->len >= 2 && d->rex_w && !d->rex_r && d->op[0] == (store ? 0x89 : 0x8b) &&
	       reg_of(d, 1) == 4 && mod_of(d, 1) != 3;
}

/* 0f 1f 80 disp32: a marker NOP when disp32 says so. */
static bool marker(const uint8_t *bytes, size_t size, uint32_t *disp)
{
	if (size != 7 || bytes[0] != 0x0f || bytes[1] != 0x1f || bytes[2] != 0x80)
		return false;
	*disp = bytes[3] | bytes[4] << 8 | bytes[5] << 16 | (uint32_t)bytes[6] << 24;
	return (*disp & 0xffffff00u) == MARK_BEGIN || (*disp & 0xffffff00u) == MARK_END;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct block *b = g_new0(struct block, 1);
	GArray *segs = g_array_new(false, false, sizeof(struct seg));
	GArray *flagged = g_array_new(false, false, sizeof(struct flagged));
	GArray *entries = g_array_new(false, false, sizeof(struct entry));

	b->start = qemu_plugin_tb_vaddr(tb);
	b->n_insns = n;
	b->user = (int64_t)b->start >= 0;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *bytes = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		uint32_t func = lookup(va), bits, disp;
		struct decoded d;
		enum last last;

		if (segs->len && g_array_index(segs, struct seg, segs->len - 1).func == func) {
			g_array_index(segs, struct seg, segs->len - 1).end = i + 1;
		} else {
			struct seg s = { .func = func, .end = i + 1 };

			g_array_append_val(segs, s);
		}
		if (ntracked && func < nfuncs && slot_of[func] >= 0 && funcs[func].lo == va) {
			struct entry e = { .index = i, .slot = (uint32_t)slot_of[func] };

			g_array_append_val(entries, e);
		}
		if (i == 0)
			b->reset = func < nfuncs && funcs[func].reset && funcs[func].lo == va;
		if (i == 0)
			b->event_entry = func < nfuncs &&
					 (funcs[func].entry_table ||
					  (funcs[func].event_entry && funcs[func].lo == va));
		if (i == 0)
			b->stub = func < nfuncs && funcs[func].entry_table;
		if (i == 0)
			b->fork_start = func < nfuncs && funcs[func].fork_ret &&
					funcs[func].lo == va;
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &insns, 1);
		decode(bytes, size, &d);
		bits = classify(&d, &last);
		/*
		 * QEMU_PLUGIN_MEM_RW, though the one is a store and the other
		 * a load: QEMU 7.2 never injects a MEM_R-only callback into a
		 * load (accel/tcg/plugin-gen.c's op_rw tests cb->rw & (rw + 1),
		 * which is 0 for a read), and each instruction makes one access.
		 */
		if (func < nfuncs && funcs[func].switch_asm && rsp_mov(&d, true))
			qemu_plugin_register_vcpu_mem_cb(insn, on_switch_out,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, NULL);
		if (func < nfuncs && funcs[func].switch_asm && rsp_mov(&d, false))
			qemu_plugin_register_vcpu_mem_cb(insn, on_switch_in,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, (void *)(uintptr_t)i);
		if (bits) {
			struct flagged f = { .index = i, .bits = bits };

			g_array_append_val(flagged, f);
		}
		if (i == n - 1) {
			b->last = last;
			b->ret_addr = va + size;
		}
		if (markers && marker(bytes, size, &disp))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)((uintptr_t)i << 32 | disp));
		if (from_addr && va == from_addr)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_from,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)i);
		if (to_addr && va == to_addr)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_to,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)i);
	}
	b->nsegs = segs->len;
	b->segs = (struct seg *)g_array_free(segs, false);
	b->nflagged = flagged->len;
	b->flagged = (struct flagged *)g_array_free(flagged, false);
	b->nentries = entries->len;
	b->entries = (struct entry *)g_array_free(entries, false);
	/* Blocks live as long as QEMU: a retranslation makes a new one. */
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void write_profile(qemu_plugin_id_t id, void *udata)
{
	/* Written aside and renamed: a partial file is never seen. */
	char *tmp = g_strdup_printf("%s.tmp", out_path);
	FILE *f = fopen(tmp, "w");
	uint32_t i;
	int e;

	sync_vcpu(&vcpu0);
	if (counting) {
		counting = false;
		counted += vcpu0.mark - window_start;
		passes++;
	}
	if (whole_run)
		passes = 1;
	/* The run's last instructions, after the last multiple of `every`. */
	if (every && vcpu0.mark > last_row_end)
		end_interval(vcpu0.mark);
	if (!f) {
		fprintf(stderr, "ukl_profile: cannot write %s\n", tmp);
		g_free(tmp);
		return;
	}
	fprintf(f, "# ukl_profile 1\n");
	fprintf(f, "total\t%" PRIu64 "\tpasses\t%" PRIu64 "\toverruns\t%" PRIu64
		"\tswitches\t%" PRIu64 "\n", counted, passes, overruns, switches);
	fprintf(f, "functions\t%u\n", nfuncs + 2);
	fputs("columns\tself", f);
	for (e = 0; e < NR_EVENTS; e++)
		fprintf(f, "\t%s", event_names[e]);
	fputc('\n', f);
	for (i = 0; i < nfuncs + 2; i++) {
		bool any = self[i] != 0;

		for (e = 0; e < NR_EVENTS; e++)
			any |= events[i][e] != 0;
		if (!any)
			continue;
		fprintf(f, "f\t%u\t%" PRIu64, i, self[i]);
		for (e = 0; e < NR_EVENTS; e++)
			fprintf(f, "\t%" PRIu64, events[i][e]);
		fputc('\n', f);
	}
	/* Contexts in creation order: a parent comes before its children. */
	for (i = 1; i < nodes->len; i++) {
		struct node *n = node_at(i);

		fprintf(f, "n\t%u\t%u\t%u\t%" PRIu64 "\n", i, n->parent, n->func, n->insns);
	}
	if (every) {
		uint32_t width = 1 + 2 * ntracked, r, s;

		fprintf(f, "series\t%" PRIu64, every);
		for (s = 0; s < ntracked; s++)
			fprintf(f, "\t%u", tracked[s]);
		fputc('\n', f);
		for (r = 0; r < rows->len / width; r++) {
			uint64_t *row = &g_array_index(rows, uint64_t, r * width);

			fprintf(f, "s\t%u", r);
			for (s = 0; s < width; s++)
				fprintf(f, "\t%" PRIu64, row[s]);
			fputc('\n', f);
		}
	}
	if (fclose(f) || rename(tmp, out_path))
		fprintf(stderr, "ukl_profile: cannot write %s\n", out_path);
	g_free(tmp);
}

/* The function table: "LO HI FLAGS ..." a line, sorted, not overlapping. */
static bool read_syms(const char *path)
{
	FILE *f = fopen(path, "r");
	GArray *all = g_array_new(false, false, sizeof(struct func));
	char line[4096];
	uint64_t last_hi = 0;

	if (!f) {
		fprintf(stderr, "ukl_profile: cannot read %s\n", path);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		struct func fn = { 0 };
		char flags[16] = "";

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %15s", &fn.lo, &fn.hi, flags) != 3 ||
		    fn.lo >= fn.hi || fn.lo < last_hi) {
			fprintf(stderr, "ukl_profile: %s: bad or unsorted line: %s", path, line);
			fclose(f);
			return false;
		}
		fn.event_entry = strchr(flags, 'e') != NULL;
		fn.entry_table = strchr(flags, 'E') != NULL;
		fn.reset = strchr(flags, 'r') != NULL;
		fn.switch_asm = strchr(flags, 's') != NULL;
		fn.fork_ret = strchr(flags, 'f') != NULL;
		fn.task_dead = strchr(flags, 'x') != NULL;
		last_hi = fn.hi;
		g_array_append_val(all, fn);
	}
	fclose(f);
	nfuncs = all->len;
	funcs = (struct func *)g_array_free(all, false);
	return true;
}

/* track=F:G...: the functions (lines of syms=) whose series to keep. */
static bool read_track(const char *list)
{
	gchar **items = g_strsplit(list, ":", -1);
	uint32_t n = g_strv_length(items), f, s;

	if (!n) {
		fprintf(stderr, "ukl_profile: track=: give at least one function\n");
		g_strfreev(items);
		return false;
	}
	tracked = g_new(uint32_t, n);
	slot_of = g_new(int32_t, nfuncs + 2);
	for (f = 0; f < nfuncs + 2; f++)
		slot_of[f] = -1;
	for (s = 0; s < n; s++) {
		char *end;
		unsigned long long index = strtoull(items[s], &end, 10);

		if (!*items[s] || *end || index >= nfuncs || slot_of[index] >= 0) {
			fprintf(stderr, "ukl_profile: track=%s: give distinct function "
				"indices below %u\n", list, nfuncs);
			g_strfreev(items);
			return false;
		}
		tracked[s] = (uint32_t)index;
		slot_of[index] = (int32_t)s;
	}
	g_strfreev(items);
	ntracked = n;
	interval_calls = g_new0(uint64_t, n);
	interval_self = g_new0(uint64_t, n);
	rows = g_array_new(false, false, sizeof(uint64_t));
	next_boundary = every;
	return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	struct node root = { .parent = 0, .func = NO_FUNC, .depth = 0 };
	const char *track = NULL;
	int i;

	if (strcmp(info->target_name, "x86_64") != 0) {
		fprintf(stderr, "ukl_profile: x86_64 guests only, not %s\n", info->target_name);
		return -1;
	}
	if (info->system_emulation && info->system.smp_vcpus > 1) {
		fprintf(stderr, "ukl_profile: one vCPU only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		char *value = strchr(argv[i], '=');
		char *end;

		if (!value) {
			fprintf(stderr, "ukl_profile: unknown argument %s\n", argv[i]);
			return -1;
		}
		value++;
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = g_strdup(value);
		} else if (!strncmp(argv[i], "syms=", 5)) {
			syms_path = g_strdup(value);
		} else if (!strncmp(argv[i], "window=", 7)) {
			markers = true;
			whole_run = false;
			if (strcmp(value, "markers")) {
				window = (int)strtol(value, &end, 10);
				if (*end || window < 0 || window > 255) {
					fprintf(stderr, "ukl_profile: window=markers or 0-255\n");
					return -1;
				}
			}
		} else if (!strncmp(argv[i], "from=", 5) || !strncmp(argv[i], "to=", 3)) {
			uint64_t a = strtoull(value, &end, 16);

			if (*end || !a) {
				fprintf(stderr, "ukl_profile: %s: give an address in hex\n", argv[i]);
				return -1;
			}
			*(argv[i][0] == 'f' ? &from_addr : &to_addr) = a;
			whole_run = false;
		} else if (!strncmp(argv[i], "every=", 6)) {
			every = strtoull(value, &end, 10);
			if (*end || !every) {
				fprintf(stderr, "ukl_profile: every=N: a positive number of "
					"instructions\n");
				return -1;
			}
		} else if (!strncmp(argv[i], "track=", 6)) {
			track = value;
		} else {
			fprintf(stderr, "ukl_profile: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_path || !syms_path) {
		fprintf(stderr, "ukl_profile: give out=FILE and syms=FILE\n");
		return -1;
	}
	if (!from_addr != !to_addr) {
		fprintf(stderr, "ukl_profile: give both from= and to=\n");
		return -1;
	}
	if (!every != !track) {
		fprintf(stderr, "ukl_profile: give both every= and track=\n");
		return -1;
	}
	if (!read_syms(syms_path))
		return -1;
	if (track && !read_track(track))
		return -1;
	self = g_new0(uint64_t, nfuncs + 2);
	events = g_malloc0(sizeof(*events) * (nfuncs + 2));
	nodes = g_array_new(false, false, sizeof(struct node));
	g_array_append_val(nodes, root);
	children = g_hash_table_new(g_int64_hash, g_int64_equal);
	saved_stacks = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	vcpu0.last_func = NO_FUNC;
	counting = whole_run;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_profile, NULL);
	return 0;
}
