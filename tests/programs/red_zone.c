/*
 * Keeps data in the red zone (the 128 bytes below %rsp that x86-64 leaf
 * code may use without moving the stack pointer, as OpenSSL's assembly
 * does) while interrupts, page faults and signals hit the code, and checks
 * the data each round.
 *
 * red_zone_hold() writes 15 words below %rsp, then per round touches a
 * page (a page fault when the page is new), spins (timer interrupts, and
 * the signal thread's signals, land there) and compares the words. A
 * second thread sends SIGUSR1 to the first all along; the handler runs on
 * the same stack, below the red zone if the kernel leaves it alone.
 *
 * Prints "red-zone: rounds=R faults=F signals=S preempted=P corrupted=C"
 * and exits 0 only if no word changed and faults, signals and preemptions
 * all happened. `--no-signals` leaves the signals out (to tell the
 * signal path from the interrupt and fault paths).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGES 2048
#define PAGE 4096L
#define CALLS 8
#define ROUNDS_PER_CALL PAGES
#define SPIN 3000

/*
 * long red_zone_hold(char *pages, long rounds, long spin): returns how
 * many rounds found a word below %rsp changed. Leaf code: it calls
 * nothing, so everything in [%rsp - 128, %rsp) is its own.
 */
__asm__(
	".text\n"
	".globl red_zone_hold\n"
	".type red_zone_hold, @function\n"
	"red_zone_hold:\n"
	"	xorl	%eax, %eax\n"		/* corrupted rounds */
	"	xorl	%ecx, %ecx\n"		/* round */
	"1:	cmpq	%rsi, %rcx\n"
	"	jae	5f\n"
	/* The words: -120(%rsp) .. -8(%rsp), each the round + its offset. */
	"	.irp	off, -120, -112, -104, -96, -88, -80, -72, -64, -56, -48, -40, -32, -24, -16, -8\n"
	"	leaq	\\off(%rcx), %r9\n"
	"	movq	%r9, \\off(%rsp)\n"
	"	.endr\n"
	/* A page of its own this round: a fault the first time. */
	"	movq	%rcx, %r10\n"
	"	shlq	$12, %r10\n"
	"	movb	$1, (%rdi,%r10)\n"
	/* Spin: interrupts and signals come in here. */
	"	movq	%rdx, %r11\n"
	"3:	pause\n"
	"	decq	%r11\n"
	"	jnz	3b\n"
	"	.irp	off, -120, -112, -104, -96, -88, -80, -72, -64, -56, -48, -40, -32, -24, -16, -8\n"
	"	leaq	\\off(%rcx), %r9\n"
	"	cmpq	%r9, \\off(%rsp)\n"
	"	jne	6f\n"
	"	.endr\n"
	"	incq	%rcx\n"
	"	jmp	1b\n"
	"6:	incq	%rax\n"
	"	incq	%rcx\n"
	"	jmp	1b\n"
	"5:	ret\n"
	".size red_zone_hold, .-red_zone_hold\n");

long red_zone_hold(char *pages, long rounds, long spin);

static atomic_long signals;
static atomic_int done;
static pthread_t holder;

static void on_usr1(int sig)
{
	/* A deep frame: a signal frame placed in the red zone would show. */
	volatile char scratch[512];

	(void)sig;
	memset((char *)scratch, 0x5a, sizeof(scratch));
	atomic_fetch_add(&signals, 1);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		pthread_kill(holder, SIGUSR1);
		usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int with_signals = !(argc > 1 && strcmp(argv[1], "--no-signals") == 0);
	struct sigaction sa;
	struct rusage before, after;
	pthread_t other;
	long corrupted = 0, rounds = 0, faults, preempted;
	char *pages;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("red-zone: sigaction");
		return 2;
	}
	pages = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED) {
		perror("red-zone: mmap");
		return 2;
	}
	holder = pthread_self();
	getrusage(RUSAGE_SELF, &before);
	if (with_signals && pthread_create(&other, NULL, signaller, NULL) != 0) {
		fprintf(stderr, "red-zone: pthread_create failed\n");
		return 2;
	}
	for (i = 0; i < CALLS; i++) {
		corrupted += red_zone_hold(pages, ROUNDS_PER_CALL, SPIN);
		rounds += ROUNDS_PER_CALL;
		/* Fresh pages again: every round of the next call faults. */
		madvise(pages, PAGES * PAGE, MADV_DONTNEED);
	}
	atomic_store(&done, 1);
	if (with_signals)
		pthread_join(other, NULL);
	getrusage(RUSAGE_SELF, &after);
	faults = after.ru_minflt - before.ru_minflt;
	preempted = after.ru_nivcsw - before.ru_nivcsw;

	printf("red-zone: rounds=%ld faults=%ld signals=%ld preempted=%ld corrupted=%ld\n",
	       rounds, faults, atomic_load(&signals), preempted, corrupted);
	return corrupted == 0 && faults >= rounds && (atomic_load(&signals) > 0 || !with_signals) &&
	       preempted > 0 ? 0 : 1;
}
