// SPDX-License-Identifier: MIT
/* A library symbolize_child dlopen()s: its functions appear in the process after its maps
 * were first read. Only symbolize_lib_report is exported; the others are in .symtab only. */
#include <stdint.h>

typedef void (*report_fn)(const char *name, uintptr_t addr);

__attribute__((visibility("default"))) void symbolize_lib_report(report_fn report);
int lib_global(int x);
void *lib_caller(void);

static __attribute__((noinline)) int lib_static(int x)
{
	volatile int v = x;

	return v * 5 + 2;
}

__attribute__((noinline)) int lib_global(int x)
{
	volatile int v = x;

	return v + lib_static(x);
}

static __attribute__((noinline)) void *return_address(void)
{
	return __builtin_extract_return_addr(__builtin_return_address(0));
}

__attribute__((noinline)) void *lib_caller(void)
{
	void *ret = return_address();

	__asm__ volatile("" ::: "memory"); /* no tail call: the return address stays inside */
	return ret;
}

void symbolize_lib_report(report_fn report)
{
	report("lib_static", (uintptr_t)lib_static);
	report("lib_global", (uintptr_t)lib_global);
	report("lib_caller", (uintptr_t)lib_caller());
	report("symbolize_lib_report", (uintptr_t)symbolize_lib_report);
}
