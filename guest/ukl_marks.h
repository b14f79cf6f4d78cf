/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting windows for the ukl_counts QEMU plugin (qemu/plugins/ukl_counts.c):
 * code between UKL_COUNT_BEGIN(n) and UKL_COUNT_END(n) is counted in window
 * n (0-255), summed over its passes. UKL_COUNT_FLUSH(n) ends a measurement:
 * what window n summed so far becomes a row of its own (n.K for the K-th
 * flush) and the window starts again. The markers are NOPs with a
 * distinctive displacement, so a program runs the same with or without the
 * plugin.
 */
#ifndef UKL_MARKS_H
#define UKL_MARKS_H

#define UKL_COUNT_BEGIN(n) \
	__asm__ volatile("nopl %c0(%%rax)" : : "i"(0x554b4200 + (n)) : "memory")
#define UKL_COUNT_END(n) \
	__asm__ volatile("nopl %c0(%%rax)" : : "i"(0x554b4500 + (n)) : "memory")
#define UKL_COUNT_FLUSH(n) \
	__asm__ volatile("nopl %c0(%%rax)" : : "i"(0x554b4600 + (n)) : "memory")

#endif
