// SPDX-License-Identifier: MIT
/*
 * A process for symbolize_test to name the frames of: it prints "fn NAME 0xADDRESS" for some
 * of its functions (their first byte, and a return address in the middle of one, as stack
 * frames have), then "ready", then follows commands on stdin:
 *   dlopen PATH   load the library symbolize_lib.c and print its functions the same way;
 *   exit          (or end of input) exit 0.
 * Built PIE, non-PIE, and stripped with its symbols in a separate debug file.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*report_fn)(const char *name, uintptr_t addr);

int child_global(int x);
void *child_caller(void);

static __attribute__((noinline)) int child_static(int x)
{
	volatile int v = x;

	return v * 3 + 1;
}

__attribute__((noinline)) int child_global(int x)
{
	volatile int v = x;

	return v + child_static(x);
}

static __attribute__((noinline)) void *return_address(void)
{
	return __builtin_extract_return_addr(__builtin_return_address(0));
}

/* Returns an address in its own middle: where return_address returns to. */
__attribute__((noinline)) void *child_caller(void)
{
	void *ret = return_address();

	__asm__ volatile("" ::: "memory"); /* no tail call: the return address stays inside */
	return ret;
}

static void report(const char *name, uintptr_t addr)
{
	printf("fn %s %#llx\n", name, (unsigned long long)addr);
}

int main(void)
{
	void (*lib_report)(report_fn) = NULL;
	void *lib = NULL, *sym;
	char line[4096];

	report("child_static", (uintptr_t)child_static);
	report("child_global", (uintptr_t)child_global);
	report("child_caller", (uintptr_t)child_caller());
	report("main", (uintptr_t)main);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "dlopen ", 7))
			break;
		lib = dlopen(line + 7, RTLD_NOW);
		sym = lib ? dlsym(lib, "symbolize_lib_report") : NULL;
		if (!sym) {
			printf("error %s\n", dlerror());
			fflush(stdout);
			return 1;
		}
		memcpy(&lib_report, &sym, sizeof(sym)); /* POSIX: dlsym's pointer is the function */
		lib_report(report);
		printf("ready\n");
		fflush(stdout);
	}
	if (lib)
		dlclose(lib);
	return 0;
}
