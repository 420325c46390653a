// SPDX-License-Identifier: MIT
/*
 * pmu_work: workloads with known software-counter counts, for checking the PMU source.
 *
 *	pmu_work --faults N	map N fresh anonymous pages and write one byte to each: N minor
 *				page faults (plus the few of starting a process)
 *	pmu_work --sleeps N	sleep 2 ms N times: N voluntary context switches (plus a few)
 *	pmu_work --spin S	burn the CPU for S seconds (task-clock about S * 1e9 ns)
 *
 * The options combine and run in that order. One summary line on stderr at the end. Exits 0,
 * 100 on a usage error, 111 on a system failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int touch_pages(unsigned long n)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p;
	unsigned long i;

	/* MAP_POPULATE is not used: each first write is the fault being counted */
	p = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		return -errno;
	/* no transparent huge pages: one fault per 4 KiB page, not one per 2 MiB */
	madvise((void *)p, (size_t)page * n, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * (unsigned long)page] = 1;
	munmap((void *)p, (size_t)page * n);
	return 0;
}

static void sleeps(unsigned long n)
{
	struct timespec pause = { 0, 2000000 };
	unsigned long i;

	for (i = 0; i < n; i++)
		nanosleep(&pause, NULL);
}

static void spin(double seconds)
{
	volatile unsigned long x = 0;
	double end = now_s() + seconds;

	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

int main(int argc, char **argv)
{
	unsigned long faults = 0, n_sleeps = 0;
	struct rusage ru;
	double spin_s = 0;
	int i, err;

	for (i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--faults"))
			faults = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--sleeps"))
			n_sleeps = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--spin"))
			spin_s = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "usage: pmu_work [--faults N] [--sleeps N] [--spin S]\n");
			return 100;
		}
	}
	if (faults && (err = touch_pages(faults))) {
		fprintf(stderr, "pmu_work: unable to map %lu pages: %s\n", faults, strerror(-err));
		return 111;
	}
	sleeps(n_sleeps);
	if (spin_s > 0)
		spin(spin_s);
	/* The switches the kernel counted for us, involuntary ones included: a busy machine
	 * preempts the workload more, and a test comparing with the context-switches counter
	 * needs the real figure, not only the sleeps. */
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr,
		"pmu_work: %lu pages touched, %lu sleeps, %.2f s spun, context switches %ld "
		"voluntary %ld involuntary\n",
		faults, n_sleeps, spin_s, ru.ru_nvcsw, ru.ru_nivcsw);
	return 0;
}
