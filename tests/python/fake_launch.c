// SPDX-License-Identifier: MIT
/*
 * A stand-in launcher for Python programs (tests/python_test.sh): loaded with ctypes, it
 * exports xpusup_launch_marker with the CUPTI library's ABI, as the launch path calls it, and
 * fake_launch(first, n) calls it n times with correlation ids first..first+n-1, so a Python
 * caller's launch stacks are tested without a GPU. c_thread_spin(seconds) runs c_thread_hot on
 * a thread of its own, started in C, as autograd's backward threads are: a thread of a Python
 * process that never runs Python.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

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

EXPORT void c_thread_hot(double seconds);
EXPORT void c_thread_spin(double seconds);

static volatile uint64_t c_sink;

EXPORT void c_thread_hot(double seconds)
{
	struct timespec a, b;
	uint64_t i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (i = 0; i < 100000; i++)
			c_sink += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

static void *c_thread_main(void *arg)
{
	c_thread_hot(*(double *)arg);
	return NULL;
}

EXPORT void c_thread_spin(double seconds)
{
	pthread_t t;

	if (pthread_create(&t, NULL, c_thread_main, &seconds))
		return;
	pthread_join(t, NULL);
}
