/*
 * mb2pvh: boots an image's vmlinux from a Multiboot2 boot loader (GRUB, on
 * BIOS and EFI machines) through the kernel's PVH entry point.
 *
 * Why: the images' kernels are ELF vmlinux files, which QEMU boots through
 * their PVH entry (CONFIG_PVH), and their flavours have no EFI stub and no
 * bzImage; boot loaders cannot start such a file. `ukl pkg --iso`
 * (ukl/image/iso.py) puts this code in front of the kernel's loadable
 * segments, laid out flat at their physical addresses, with a Multiboot2
 * header whose address tag makes GRUB load the whole file in place: this
 * code just below the kernel, the kernel at its link address. GRUB passes
 * the command line, the initramfs (the first module), the memory map and
 * the ACPI root pointer in its information structure; this code turns them
 * into the hvm_start_info structure the PVH entry takes (Xen's public
 * arch-x86/hvm/start_info.h, version 1) and jumps there.
 *
 * State on entry (Multiboot2 spec, i386): 32-bit protected mode, paging
 * off, flat segments, interrupts off; EAX the magic, EBX the information.
 * That is also the state the PVH entry needs, with EBX pointing at
 * hvm_start_info. No header of the host is used: this is freestanding
 * 32-bit code.
 */

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define MB2_BOOTLOADER_MAGIC 0x36d76289u
#define MB2_TAG_END 0
#define MB2_TAG_CMDLINE 1
#define MB2_TAG_MODULE 3
#define MB2_TAG_MMAP 6
#define MB2_TAG_ACPI_OLD 14
#define MB2_TAG_ACPI_NEW 15

#define HVM_START_MAGIC 0x336ec578u
#define E820_RAM 1
#define E820_RESERVED 2

/* Linux copies the map into boot_params' e820 table (128 entries) and
 * adds one of its own for the ISA hole. */
#define MAX_MEMMAP 126
#define CMDLINE_MAX 2048
#define COM1 0x3f8

/* Filled in by iso.py at fixed offsets after the Multiboot2 header (see
 * mb2pvh.ld): the kernel's PVH entry and the physical range this code
 * occupies, which the memory map given to the kernel marks reserved. */
struct params {
	u32 pvh_entry;
	u32 shim_start;
	u32 shim_end;
	u32 reserved;
};
extern struct params mb2pvh_params;

struct hvm_start_info {
	u32 magic;
	u32 version;
	u32 flags;
	u32 nr_modules;
	u64 modlist_paddr;
	u64 cmdline_paddr;
	u64 rsdp_paddr;
	u64 memmap_paddr;
	u32 memmap_entries;
	u32 reserved;
};

struct hvm_modlist_entry {
	u64 paddr;
	u64 size;
	u64 cmdline_paddr;
	u64 reserved;
};

struct hvm_memmap_entry {
	u64 addr;
	u64 size;
	u32 type;
	u32 reserved;
};

struct mb2_tag {
	u32 type;
	u32 size;
};

struct mb2_mmap_entry {
	u64 addr;
	u64 len;
	u32 type;
	u32 zero;
};

static struct hvm_start_info start_info;
static struct hvm_modlist_entry module;
static struct hvm_memmap_entry memmap[MAX_MEMMAP];
static char cmdline[CMDLINE_MAX];
/* The ACPI root pointer, copied out of GRUB's information structure into
 * this code's reserved range so the kernel still finds it when it parses
 * ACPI, long after boot. 36 bytes is an ACPI 2.0 RSDP. */
static u8 rsdp[36] __attribute__((aligned(16)));

static inline void outb(u16 port, u8 value)
{
	__asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline u8 inb(u16 port)
{
	u8 value;

	__asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

/* A failure is said on the first serial port, where the console is. */
static void say(const char *s)
{
	for (; *s; s++) {
		while (!(inb(COM1 + 5) & 0x20))
			;
		outb(COM1, (u8)*s);
	}
}

static void __attribute__((noreturn)) fail(const char *why)
{
	say("ukl mb2pvh: cannot boot: ");
	say(why);
	say("\r\n");
	for (;;)
		__asm__ volatile("cli; hlt");
}

static void add_range(u64 addr, u64 size, u32 type)
{
	u32 n = start_info.memmap_entries;

	if (!size)
		return;
	/* EFI firmware's maps come in many small pieces: join neighbours of
	 * one type, so that they fit. */
	if (n && memmap[n - 1].type == type && memmap[n - 1].addr + memmap[n - 1].size == addr) {
		memmap[n - 1].size += size;
		return;
	}
	if (start_info.memmap_entries == MAX_MEMMAP)
		fail("the memory map has too many entries");
	memmap[start_info.memmap_entries].addr = addr;
	memmap[start_info.memmap_entries].size = size;
	memmap[start_info.memmap_entries].type = type;
	start_info.memmap_entries++;
}

/* One entry of GRUB's map; RAM under this code becomes reserved. Multiboot2
 * uses E820's type numbers (1 RAM, 3 ACPI, 4 NVS, 5 bad). */
static void add_mmap_entry(const struct mb2_mmap_entry *e)
{
	u64 start = e->addr, end = e->addr + e->len;
	u64 lo = mb2pvh_params.shim_start, hi = mb2pvh_params.shim_end;

	if (e->type != E820_RAM || end <= lo || start >= hi) {
		add_range(e->addr, e->len, e->type);
		return;
	}
	if (start < lo)
		add_range(start, lo - start, E820_RAM);
	add_range(start > lo ? start : lo, (end < hi ? end : hi) - (start > lo ? start : lo),
		  E820_RESERVED);
	if (end > hi)
		add_range(hi, end - hi, E820_RAM);
}

static void copy(void *to, const void *from, u32 n)
{
	u8 *d = to;
	const u8 *s = from;

	while (n--)
		*d++ = *s++;
}

/* Called by the entry code with GRUB's registers; returns the
 * hvm_start_info for the PVH entry. */
struct hvm_start_info *mb2pvh_main(u32 magic, u32 info)
{
	const u8 *p = (const u8 *)info + 8;
	const u8 *end = (const u8 *)info + *(const u32 *)info;

	if (magic != MB2_BOOTLOADER_MAGIC)
		fail("not started by a Multiboot2 boot loader");
	start_info.magic = HVM_START_MAGIC;
	start_info.version = 1;
	while (p < end) {
		const struct mb2_tag *tag = (const void *)p;

		if (tag->type == MB2_TAG_END)
			break;
		if (tag->type == MB2_TAG_CMDLINE) {
			const char *s = (const char *)(tag + 1);
			u32 n = 0;

			while (s[n] && n < CMDLINE_MAX - 1) {
				cmdline[n] = s[n];
				n++;
			}
			cmdline[n] = 0;
			start_info.cmdline_paddr = (u32)cmdline;
		} else if (tag->type == MB2_TAG_MODULE && !start_info.nr_modules) {
			const u32 *m = (const u32 *)(tag + 1);

			module.paddr = m[0];
			module.size = m[1] - m[0];
			start_info.nr_modules = 1;
			start_info.modlist_paddr = (u32)&module;
		} else if (tag->type == MB2_TAG_MMAP) {
			const u32 *h = (const u32 *)(tag + 1);
			u32 entry_size = h[0];
			const u8 *e = (const u8 *)(h + 2);

			for (; e + entry_size <= p + tag->size; e += entry_size)
				add_mmap_entry((const struct mb2_mmap_entry *)e);
			start_info.memmap_paddr = (u32)memmap;
		} else if (tag->type == MB2_TAG_ACPI_NEW ||
			   (tag->type == MB2_TAG_ACPI_OLD && !start_info.rsdp_paddr)) {
			u32 n = tag->size - 8;

			copy(rsdp, tag + 1, n < sizeof(rsdp) ? n : sizeof(rsdp));
			start_info.rsdp_paddr = (u32)rsdp;
		}
		p += (tag->size + 7) & ~7u;
	}
	if (!start_info.memmap_entries)
		fail("the boot loader gave no memory map");
	if (!start_info.nr_modules)
		fail("no initramfs: give it as the first module (module2)");
	return &start_info;
}

/* The entry point (the Multiboot2 entry address tag names it): a stack of
 * our own, then mb2pvh_main, then the kernel's PVH entry with EBX set. */
__asm__(
	"	.pushsection .text.entry, \"ax\"\n"
	"	.code32\n"
	"	.globl mb2pvh_start\n"
	"mb2pvh_start:\n"
	"	cli\n"
	"	cld\n"
	"	movl $mb2pvh_stack_top, %esp\n"
	"	pushl %ebx\n"
	"	pushl %eax\n"
	"	call mb2pvh_main\n"
	"	movl %eax, %ebx\n"
	"	movl mb2pvh_params, %ecx\n"
	"	jmp *%ecx\n"
	"	.popsection\n"
	"	.pushsection .bss\n"
	"	.balign 16\n"
	"	.skip 16384\n"
	"mb2pvh_stack_top:\n"
	"	.popsection\n"
);
