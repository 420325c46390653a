// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of record_fuzz (tests/fuzz/corpus/record) with the event builders:
 * an options byte, then records as a ring would hold them.
 *
 *	record_seeds DIR
 */
#include <stdio.h>
#include <string.h>

#include "xpusup/event.h"

static _Alignas(8) unsigned char buf[1 << 16];
static size_t used;

static void put(int size)
{
	if (size > 0)
		used += (size_t)size;
}

static void fixed(__u16 type, __u32 size, __u64 ts, __u32 pid, __u32 tid)
{
	xpu_rec__init(buf + used, type, size, ts, pid, tid);
}

/* API call, LAUNCH, then GPU work of one key; kernel_first puts the kernel before them. */
static void key(__u32 pid, __u64 corr, __u64 ts, int kernel_first, __u32 stream)
{
	__u64 ips[4] = { 0x401000, 0x402000, 0x403000, 0x404000 };
	struct xpu_gpu_kernel *k;
	struct xpu_cuda_api *a;

	if (kernel_first) {
		fixed(XPU_REC_GPU_KERNEL, sizeof(*k), ts + 500, pid, 0);
		k = (void *)(buf + used);
		k->start_ns = ts + 500;
		k->end_ns = ts + 900;
		k->correlation_id = corr;
		k->stream_id = stream;
		k->name_id = 1;
		put(sizeof(*k));
	}
	fixed(XPU_REC_CUDA_API, sizeof(*a), ts, pid, pid);
	a = (void *)(buf + used);
	a->end_ns = ts + 300;
	a->correlation_id = corr;
	a->api_id = 211;
	a->domain = XPU_API_RUNTIME;
	put(sizeof(*a));
	put(xpu_launch__build(buf + used, sizeof(buf) - used, ts + 10, pid, pid, corr, 211, ips,
			      4));
	put(xpu_cpu_sample__build(buf + used, sizeof(buf) - used, ts + 100, pid, pid, 0, 1, "seed",
				  ips, 1, ips + 1, 3));
	if (!kernel_first) {
		fixed(XPU_REC_GPU_MEMCPY, sizeof(struct xpu_gpu_memcpy), ts + 400, pid, 0);
		((struct xpu_gpu_memcpy *)(buf + used))->start_ns = ts + 400;
		((struct xpu_gpu_memcpy *)(buf + used))->end_ns = ts + 450;
		((struct xpu_gpu_memcpy *)(buf + used))->correlation_id = corr;
		((struct xpu_gpu_memcpy *)(buf + used))->stream_id = stream;
		put(sizeof(struct xpu_gpu_memcpy));
	}
}

static void session(int kernel_first)
{
	__u32 pid;
	__u64 c;

	for (pid = 10; pid < 12; pid++) {
		put(xpu_string__build(buf + used, sizeof(buf) - used, 1, pid, pid, 1,
				      XPU_STR_KERNEL, "gemm<float>", 11));
		put(xpu_range__build(buf + used, sizeof(buf) - used, 2, pid, pid, XPU_RANGE_PUSH, 1,
				     0, 0, "step", 4));
		for (c = 1; c < 5; c++)
			key(pid, c, 1000 * c, kernel_first && c % 2, 7);
		put(xpu_range__build(buf + used, sizeof(buf) - used, 9000, pid, pid, XPU_RANGE_POP,
				     1, 0, 0, NULL, 0));
		fixed(XPU_REC_PROC_EXIT, sizeof(struct xpu_proc_exit), 9500, pid, pid);
		put(sizeof(struct xpu_proc_exit));
	}
}

static void reading(__u32 pid, __u64 id, __u64 ts, __u64 value, __u32 scope)
{
	struct xpu_pmu_counter *c;

	fixed(XPU_REC_PMU_COUNTER, sizeof(*c), ts, pid, pid);
	c = (void *)(buf + used);
	c->counter_id = id;
	c->value = value;
	c->delta = value / 4;
	c->time_enabled = ts;
	c->time_running = ts / 2; /* multiplexed */
	c->cpu = scope == XPU_PMU_SCOPE_CPU ? 1 : XPU_PMU_NO_CPU;
	c->scope = scope;
	put(sizeof(*c));
}

/* Counter readings around kernels and ranges, for the counters stage: readings of three
 * counters of pid 10 (and a CPU's), kernels inside, past and before them, a pushed and
 * popped range, a start/end range across threads. */
static void counters_session(void)
{
	__u64 t, c;

	for (t = 1; t <= 4; t++) {
		for (c = 1; c <= 4; c++)
			reading(10, c, 1000 * t, 700 * t * c, XPU_PMU_SCOPE_PROCESS);
		reading(0, 1, 1000 * t, 900 * t, XPU_PMU_SCOPE_CPU);
		put(xpu_string__build(buf + used, sizeof(buf) - used, 1000 * t, 10, 10, t,
				      XPU_STR_COUNTER, "cycles", 6));
	}
	put(xpu_range__build(buf + used, sizeof(buf) - used, 1200, 10, 10, XPU_RANGE_PUSH, 1, 0, 0,
			     "step", 4));
	put(xpu_range__build(buf + used, sizeof(buf) - used, 1300, 10, 11, XPU_RANGE_START, 9, 0, 0,
			     "io", 2));
	key(10, 1, 1500, 1, 7); /* kernel 2000..2400 */
	key(10, 2, 3500, 0, 7);
	key(10, 3, 9000, 1, 7); /* far past the readings */
	put(xpu_range__build(buf + used, sizeof(buf) - used, 3300, 10, 12, XPU_RANGE_END, 9, 0, 0,
			     NULL, 0));
	put(xpu_range__build(buf + used, sizeof(buf) - used, 3800, 10, 10, XPU_RANGE_POP, 1, 0, 0,
			     NULL, 0));
	fixed(XPU_REC_PROC_EXIT, sizeof(struct xpu_proc_exit), 9500, 10, 10);
	put(sizeof(struct xpu_proc_exit));
}

static int write_seed(const char *dir, const char *name, unsigned char opts)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&opts, 1, 1, f) != 1 || fwrite(buf, 1, used, f) != used) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: record_seeds DIR\n");
		return 100;
	}
	session(0);
	err |= write_seed(argv[1], "in_order_all_stages", 0x0f);
	err |= write_seed(argv[1], "in_order_no_stages", 0x00);
	used = 0;
	session(1);
	err |= write_seed(argv[1], "kernels_first_timestamp", 0x01);
	/* a frame that is not a record in the middle: the reader must resync past it */
	memmove(buf + 64, buf, used);
	memset(buf, 0xa5, 64);
	used += 64;
	((struct xpu_rec *)(buf + 200))->size = 13;
	err |= write_seed(argv[1], "garbage_and_bad_size", 0x0e);
	used = 0;
	counters_session();
	err |= write_seed(argv[1], "counters", 0x3e); /* every enrich stage, counters included */
	return err ? 111 : 0;
}
