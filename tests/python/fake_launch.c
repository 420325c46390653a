// SPDX-License-Identifier: MIT
/*
 * A stand-in launcher for Python programs (tests/python_test.sh): loaded with ctypes, it
 * exports xpusup_launch_marker with the CUPTI library's ABI, as the launch path calls it, and
 * fake_launch(first, n) calls it n times with correlation ids first..first+n-1, so a Python
 * caller's launch stacks are tested without a GPU.
 */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default"), noinline))

EXPORT void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id);
EXPORT void fake_launch(uint64_t first, uint32_t n);

EXPORT void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id)
{
	__asm__ volatile("" : : "r"(correlation_id), "r"(api_id) : "memory");
}

EXPORT void fake_launch(uint64_t first, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		xpusup_launch_marker(first + i, 211);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
}
