// SPDX-License-Identifier: MIT
/*
 * A stand-in for a CUDA program under the CUPTI injection library: it exports
 * xpusup_launch_marker with the library's ABI and calls it from two known functions with
 * known correlation ids, so the CPU source's launch uprobe is tested without a GPU.
 *
 *   launcher [N] [--spin]   N launches (default 200), ids 1001..1000+N; even ids from
 *                           launcher_launch_even, odd ones from launcher_launch_odd, each
 *                           with api_id 211 (even) or 307 (odd); then a line on stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default"), noinline))

/* The marker: a real function the compiler may neither inline nor drop. */
EXPORT void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id);

EXPORT void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id)
{
	__asm__ volatile("" : : "r"(correlation_id), "r"(api_id) : "memory");
}

EXPORT void launcher_launch_even(uint64_t id);
EXPORT void launcher_launch_odd(uint64_t id);

EXPORT void launcher_launch_even(uint64_t id)
{
	xpusup_launch_marker(id, 211);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
}

EXPORT void launcher_launch_odd(uint64_t id)
{
	xpusup_launch_marker(id, 307);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200;
	struct timespec pause = { 0, 200000 }; /* spread the launches over time */
	unsigned long i;

	for (i = 1; i <= n; i++) {
		if (i % 2 == 0)
			launcher_launch_even(1000 + i);
		else
			launcher_launch_odd(1000 + i);
		nanosleep(&pause, NULL);
	}
	printf("launcher: %lu launches\n", n);
	return 0;
}
