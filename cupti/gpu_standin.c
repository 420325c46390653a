/* SPDX-License-Identifier: MIT */
/*
 * cupti_gpu_standin LIB: the injection library's path through the pipeline, without a GPU.
 *
 * A real process does what libxpusup_cupti.so does inside a CUDA program, with the same code
 * wherever it can: it says hello to the session's cupti actor (common/inproc.c), calls the
 * launch marker exported by LIB (the very file the cpu source puts its uprobe on) from
 * distinctly named host functions, and converts CUPTI activity structs, as the CUDA 13
 * headers define them, with cupti/convert.c into its ring. Only the structs' contents are
 * made up (times are taken around the marker calls, as a GPU would run them just after).
 *
 * What it does, for tests/cupti_test.sh to find in the outputs:
 *   - 40 launches of _Z6matmulPKfS0_Pfi from launch_matmul(), each with its runtime API
 *     record and an NVTX push/pop of "train_step" around it;
 *   - one CUDA graph node created in build_graph() (node 77), instantiated as clone 900,
 *     and 5 graph launches from launch_graph(), each running _Z11graph_stepPf on node 900;
 *   - 8 HtoD copies of 1 MiB from copy_inputs();
 *   - a LOSS of 3 records with cause CUPTI.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_runtime_cbid.h>

#include "common/inproc.h"
#include "cupti/convert.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define MATMULS 40
#define GRAPH_LAUNCHES 5
#define COPIES 8

static void (*marker)(uint64_t, uint32_t);
static struct ring *ring;
static struct conv *conv;

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Stream 7 runs one thing at a time, as a GPU stream does: the next start is after the last
 * end. */
static __u64 stream_free_ns;

static __u64 stream_start(__u64 dur)
{
	__u64 now = now_ns() + 10000, start = now > stream_free_ns ? now : stream_free_ns + 1000;

	stream_free_ns = start + dur;
	return start;
}

static int put(void *ctx, const void *rec, __u32 size)
{
	return ring__write(ring, rec, size);
}

/* Some CPU work between launches, so the CPU sampler sees this process too. */
static void __attribute__((noinline)) host_work(unsigned int n)
{
	volatile double x = 1;
	unsigned int i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
}

static void kernel_record(__u32 corr, const char *name, __u64 graph_node)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = stream_start(200000);
	k.end = k.start + 200000;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = k.gridY = k.gridZ = 1;
	k.blockX = 128;
	k.blockY = k.blockZ = 1;
	k.registersPerThread = 40;
	k.correlationId = corr;
	k.name = name;
	if (graph_node) {
		k.graphId = 1;
		k.graphNodeId = graph_node;
	}
	conv__activity(conv, (CUpti_Activity *)&k);
}

static void api_record(__u32 corr, __u32 cbid, __u64 start, __u64 end)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = cbid;
	a.start = start;
	a.end = end;
	a.processId = (uint32_t)getpid();
	a.threadId = (uint32_t)gettid();
	a.correlationId = corr;
	conv__activity(conv, (CUpti_Activity *)&a);
}

static void __attribute__((noinline)) launch_matmul(__u32 corr)
{
	__u64 start = now_ns();

	marker(corr, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	api_record(corr, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, start, now_ns());
	kernel_record(corr, "_Z6matmulPKfS0_Pfi", 0);
}

static void __attribute__((noinline)) build_graph(void)
{
	marker(XPU_LAUNCH_GRAPH_NODE | 77, XPU_LAUNCH_API_GRAPH_NODE);
	conv__node_cloned(conv, 900, 77); /* cudaGraphInstantiate */
}

static void __attribute__((noinline)) launch_graph(__u32 corr)
{
	__u64 start = now_ns();

	marker(corr, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
	api_record(corr, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, start, now_ns());
	kernel_record(corr, "_Z10graph_stepPf", 900);
}

static void __attribute__((noinline)) copy_inputs(__u32 corr)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.bytes = 1 << 20;
	m.start = stream_start(80000);
	m.end = m.start + 80000;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	conv__activity(conv, (CUpti_Activity *)&m);
}

int main(int argc, char **argv)
{
	char why[256];
	void *lib, *sym;
	__u32 options = 0, corr = 1, i;
	int sock, err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBXPUSUP_CUPTI\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	sym = lib ? dlsym(lib, "xpusup_launch_marker") : NULL;
	if (!sym) {
		fprintf(stderr, "cupti_gpu_standin: %s\n", dlerror());
		return 1;
	}
	memcpy(&marker, &sym, sizeof(marker));
	err = inproc__connect(XPU_INPROC_CUPTI, 2000, &sock, &ring, &options, why, sizeof(why));
	if (err) {
		fprintf(stderr, "cupti_gpu_standin: %s\n", why);
		return 1;
	}
	conv = conv__new((__u32)getpid(), put, NULL);
	if (!conv)
		return 1;
	conv__set_launch_marked(conv, options & XPU_CUPTI_OPT_LAUNCH_STACKS);
	printf("options %#x\n", options);

	for (i = 0; i < COPIES; i++)
		copy_inputs(corr++);
	build_graph();
	for (i = 0; i < MATMULS; i++) {
		conv__range(conv, now_ns(), (__u32)gettid(), XPU_RANGE_PUSH, 0, 0, "train_step");
		host_work(200000);
		launch_matmul(corr++);
		conv__range(conv, now_ns(), (__u32)gettid(), XPU_RANGE_POP, 0, 0, NULL);
		if (i % 8 == 7)
			ring__flush(ring);
	}
	for (i = 0; i < GRAPH_LAUNCHES; i++) {
		host_work(100000);
		launch_graph(corr++);
	}
	conv__loss(conv, now_ns(), XPU_LOSS_CUPTI, 3, 0);
	ring__flush(ring);
	/* The uprobe's records travel through the cpu source; give them a moment to be read
	 * before the process's exit starts its grace period. */
	usleep(200000);
	conv__free(conv);
	ring__close(ring);
	close(sock);
	return 0;
}
