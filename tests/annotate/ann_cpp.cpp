// SPDX-License-Identifier: MIT
// The annotate API from C++: XPU_SCOPE guards in nested functions, left by return, by
// falling off the end and by an exception; std::thread workers.
//
// Usage: ann_cpp [ITER]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "xpusup/annotate.h"

static int leaf(int i)
{
	XPU_SCOPE("leaf");
	return i * 2;
}

static int branch(int i)
{
	XPU_SCOPE("branch");
	if (i % 2)
		return leaf(i); // early return: the guard still pops
	return leaf(i) + leaf(i + 1);
}

static void thrower(int i)
{
	XPU_SCOPE("thrower");
	if (i % 10 == 0)
		throw std::runtime_error("unwind through the guard");
}

static long work(int iterations)
{
	long sum = 0;

	for (int i = 0; i < iterations; i++) {
		XPU_SCOPE("step");
		sum += branch(i);
		try {
			thrower(i);
		} catch (const std::exception &) {
			sum++;
		}
	}
	return sum;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? std::atoi(argv[1]) : 100;
	std::vector<std::thread> threads;
	long sums[2] = { 0, 0 };

	for (int t = 0; t < 2; t++)
		threads.emplace_back([&sums, t, iterations] { sums[t] = work(iterations); });
	for (auto &t : threads)
		t.join();
	std::printf("cpp iterations=%d enabled=%d sum=%ld\n", iterations, xpu_annotate_enabled(),
		    sums[0] + sums[1]);
	return 0;
}
