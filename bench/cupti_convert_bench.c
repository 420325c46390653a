/* SPDX-License-Identifier: MIT */
/*
 * ns per CUPTI activity record turned into ring records by cupti/convert.c, what the
 * injection library does in the profiled process for every kernel and API call:
 *
 *	baseline	ring__write of the finished records (the same bytes), no conversion
 *	convert		conv__activity of CUpti_ActivityKernel10 and CUpti_ActivityAPI structs,
 *			kernel names from a set of 64 (each sent once, then looked up)
 *
 * Both write into one in-memory ring of the cupti source's default size (8 MiB) and drain it
 * in the same thread every BATCH records, as the actor would, so the figures include the
 * ring. Median of REPEAT interleaved runs.
 *
 * Usage: cupti_convert_bench [-n ACTIVITIES] [-r REPEAT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_runtime_cbid.h>

#include "cupti/convert.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define RING_BYTES (8u << 20)
#define BATCH 4096 /* activities between two drains (a CUPTI buffer holds about this many) */
#define NAMES 64

static long activities = 2000000;
static int repeat = 5;
static struct ring *prod, *cons;
static char names[NAMES][96];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int put(void *ctx, const void *rec, __u32 size)
{
	return ring__write(prod, rec, size);
}

static int count(const void *rec, __u32 size, void *ctx)
{
	(*(long *)ctx)++;
	return 0;
}

static long drain(void)
{
	long n = 0;

	ring__flush(prod);
	while (ring__consume(cons, count, &n, 65536) > 0)
		;
	return n;
}

static void fill(CUpti_ActivityKernel10 *k, CUpti_ActivityAPI *a, long i)
{
	k->start = 1000000 + (__u64)i * 1000;
	k->end = k->start + 500;
	k->correlationId = (uint32_t)i;
	k->name = names[(i / 2) % NAMES];
	a->start = k->start - 200;
	a->end = k->start - 100;
	a->correlationId = (uint32_t)i;
}

/* The activities converted: each a kernel and its API call. */
static double run_convert(long *out)
{
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				     .gridX = 1024,
				     .blockX = 256,
				     .streamId = 7 };
	CUpti_ActivityAPI a = { .kind = CUPTI_ACTIVITY_KIND_RUNTIME,
				.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
				.processId = 1,
				.threadId = 1 };
	struct conv *c = conv__new(1, put, NULL);
	double t0;
	long i;

	conv__set_launch_marked(c, true);
	t0 = now_s();
	for (i = 0; i < activities; i += 2) {
		fill(&k, &a, i);
		conv__activity(c, (CUpti_Activity *)&a);
		conv__activity(c, (CUpti_Activity *)&k);
		if (i % BATCH == 0)
			*out += drain();
	}
	*out += drain();
	t0 = now_s() - t0;
	conv__free(c);
	return t0;
}

/* The same records, already built: only the ring. */
static double run_baseline(long *out)
{
	struct xpu_gpu_kernel k;
	struct xpu_cuda_api a;
	double t0;
	long i;

	xpu_rec__init(&k, XPU_REC_GPU_KERNEL, sizeof(k), 0, 1, 0);
	xpu_rec__init(&a, XPU_REC_CUDA_API, sizeof(a), 0, 1, 1);
	t0 = now_s();
	for (i = 0; i < activities; i += 2) {
		k.hdr.ts_ns = k.start_ns = 1000000 + (__u64)i * 1000;
		k.correlation_id = a.correlation_id = (__u64)i;
		k.name_id = (__u64)(i % NAMES) + 1;
		a.hdr.ts_ns = k.start_ns - 200;
		ring__write(prod, &a, sizeof(a));
		ring__write(prod, &k, sizeof(k));
		if (i % BATCH == 0)
			*out += drain();
	}
	*out += drain();
	return now_s() - t0;
}

int main(int argc, char **argv)
{
	double base[32], conv[32];
	long n_base = 0, n_conv = 0;
	void *mem;
	int opt, r;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			activities = atol(optarg);
		else if (opt == 'r')
			repeat = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-n ACTIVITIES] [-r REPEAT]\n", argv[0]);
			return 2;
		}
	}
	if (activities < 2 || repeat < 1 || repeat > 32) {
		fprintf(stderr, "%s: -n at least 2, -r 1..32\n", argv[0]);
		return 2;
	}
	for (r = 0; r < NAMES; r++)
		snprintf(names[r], sizeof(names[r]),
			 "_ZN7kernels6detail14gemm_tile_%02dILi128ELi64EEEvPKfS3_Pfiii", r);
	mem = aligned_alloc(4096, XPU_RING_HDR_SIZE + RING_BYTES);
	if (!mem || ring__format_mem(mem, XPU_RING_HDR_SIZE + RING_BYTES, RING_BYTES, 0) ||
	    !(prod = ring__open_mem(mem, XPU_RING_HDR_SIZE + RING_BYTES, RING_PRODUCER)) ||
	    !(cons = ring__open_mem(mem, XPU_RING_HDR_SIZE + RING_BYTES, RING_CONSUMER))) {
		fprintf(stderr, "%s: no ring\n", argv[0]);
		return 1;
	}
	for (r = 0; r < repeat; r++) {
		base[r] = run_baseline(&n_base) * 1e9 / (double)activities;
		conv[r] = run_convert(&n_conv) * 1e9 / (double)activities;
	}
	qsort(base, (size_t)repeat, sizeof(double), cmp_double);
	qsort(conv, (size_t)repeat, sizeof(double), cmp_double);
	printf("cupti_convert_bench: %ld activities (kernel + API call pairs), median of %d runs\n",
	       activities, repeat);
	printf("case                          ns/activity\n");
	printf("baseline (ring only)          %8.2f\n", base[repeat / 2]);
	printf("convert (conv__activity)      %8.2f\n", conv[repeat / 2]);
	printf("ratio convert/baseline: %.2f\n", conv[repeat / 2] / base[repeat / 2]);
	/* every record through: the converted run adds one STRING per name and run */
	printf("records read: baseline %ld, convert %ld\n", n_base, n_conv);
	return n_base == activities * repeat && n_conv == activities * repeat + NAMES * repeat ? 0 :
												 1;
}
