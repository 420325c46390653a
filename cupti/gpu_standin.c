/* SPDX-License-Identifier: MIT */
/*
 * cupti_gpu_standin LIB: the injection library's path through the pipeline, without a GPU.
 *
 * A real process does what libxpusup_cupti.so does inside a CUDA program, with the same code
 * wherever it can: it says hello to the session's cupti actor (shm/inproc.c), converts
 * CUPTI activity structs, as the CUDA 13 headers define them, with cupti/convert.c into its
 * ring, and at each launch does what the reply's options say: captures the launch stack in
 * process with cupti/launch_stack.c (launch_stacks = inproc) or calls the launch marker
 * exported by LIB, the very file the cpu source puts its uprobe on (launch_stacks = marker).
 * Only the structs' contents are made up (times are taken around the launches, as a GPU
 * would run them just after).
 *
 * Each launch goes as in CUDA: the application's host function calls the vendor library
 * (vendor_launch, libvendor_standin.so, standing in for libcudart and libcuda), which calls
 * the tool's callback (on_api_enter, standing in for inject.c's), which captures:
 *
 *	main -> train_step -> launch_matmul -> vendor_launch -> on_api_enter -> capture
 *
 * Built twice (cupti/meson.build): cupti_gpu_standin_nofp with -fomit-frame-pointer and
 * the vendor library that keeps data in rbp across the callback, as CUDA's does: only a CFI
 * walk gets from the callback to main (the inproc run); and cupti_gpu_standin with frame
 * pointers everywhere, vendor library included (the marker run: the uprobe walks them).
 *
 * What it does, for tests/cupti_test.sh to find in the outputs:
 *   - 40 launches of _Z6matmulPKfS0_Pfi from launch_matmul() in train_step(), each with its
 *     runtime API record and an NVTX push/pop of "train_step" around it;
 *   - one CUDA graph kernel node created in build_graph() (node 77) and a memset node
 *     created in zero_grads() (node 78), instantiated as clones 900 and 901, and 5 graph
 *     launches from launch_graph(), each running _Z10graph_stepPf on node 900 and a memset
 *     of 4 KiB on node 901;
 *   - 8 HtoD copies of 1 MiB from copy_inputs(), each with its cudaMemcpyAsync record and its
 *     stack, recorded as a launch's;
 *   - a LOSS of 3 records with cause CUPTI;
 *   - on stdout: the options, and in the inproc run the capture counters and what a
 *     frame-pointer walk from the callback would have found (the test checks it is lost).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_runtime_cbid.h>

#include "shm/inproc.h"
#include "cupti/convert.h"
#include "cupti/launch_stack.h"
#include "cupti/lib_stats.h"
#include "cupti/vendor_standin.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define MATMULS 40
#define GRAPH_LAUNCHES 5
#define COPIES 8

static void (*marker)(uint64_t, uint32_t);
static struct ring *ring;
static struct conv *conv;
static __u32 options;
static int put_errors;

/* What a frame-pointer walk and the CFI walk find from the first launch's callback. */
static int fp_frames = -1, cfi_frames = -1;
static enum unwind_end fp_end, cfi_end;

/* One API call, as the callback sees it. */
struct api_call {
	__u64 corr;
	__u32 api;
};

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

/* The tool's launch callback (inject.c's on_launch): runs inside vendor_launch. */
static void on_api_enter(void *arg)
{
	const struct api_call *call = arg;
	struct unwind_result res;
	__u64 ips[XPU_MAX_FRAMES];

	if (options & XPU_CUPTI_OPT_LAUNCH_INPROC) {
		if (fp_frames < 0) {
			fp_frames =
				launch_stack__capture(ips, XPU_MAX_FRAMES, UNWIND_FP_ONLY, &res);
			fp_end = res.end;
			cfi_frames = launch_stack__capture(ips, XPU_MAX_FRAMES, 0, &res);
			cfi_end = res.end;
		}
		if (launch_stack__record(call->corr, call->api, put, NULL))
			put_errors++;
	} else if (options & XPU_CUPTI_OPT_LAUNCH_STACKS) {
		marker(call->corr, call->api);
	}
}

static void __attribute__((noinline)) launch_matmul(__u32 corr)
{
	struct api_call call = { corr, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 };
	__u64 start = now_ns();

	vendor_launch(on_api_enter, &call, corr);
	api_record(corr, call.api, start, now_ns());
	kernel_record(corr, "_Z6matmulPKfS0_Pfi", 0);
}

static void __attribute__((noinline)) train_step(__u32 corr)
{
	conv__range(conv, now_ns(), (__u32)gettid(), XPU_RANGE_PUSH, 0, 0, "train_step");
	host_work(200000);
	launch_matmul(corr);
	conv__range(conv, now_ns(), (__u32)gettid(), XPU_RANGE_POP, 0, 0, NULL);
}

static void __attribute__((noinline)) build_graph(void)
{
	struct api_call call = { XPU_LAUNCH_GRAPH_NODE | 77, XPU_LAUNCH_API_GRAPH_NODE };

	vendor_launch(on_api_enter, &call, 77);
	conv__node_cloned(conv, 900, 77); /* cudaGraphInstantiate */
}

/* A memset node of the same graph, built elsewhere: its GPU work's stack is this one. */
static void __attribute__((noinline)) zero_grads(void)
{
	struct api_call call = { XPU_LAUNCH_GRAPH_NODE | 78, XPU_LAUNCH_API_GRAPH_NODE };

	vendor_launch(on_api_enter, &call, 78);
	conv__node_cloned(conv, 901, 78);
}

static void memset_record(__u32 corr, __u64 graph_node)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = 4096;
	m.start = stream_start(20000);
	m.end = m.start + 20000;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	m.graphId = 1;
	m.graphNodeId = graph_node;
	conv__activity(conv, (CUpti_Activity *)&m);
}

static void __attribute__((noinline)) launch_graph(__u32 corr)
{
	struct api_call call = { corr, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 };
	__u64 start = now_ns();

	vendor_launch(on_api_enter, &call, corr);
	api_record(corr, call.api, start, now_ns());
	kernel_record(corr, "_Z10graph_stepPf", 900);
	memset_record(corr, 901);
}

static void __attribute__((noinline)) copy_inputs(__u32 corr)
{
	struct api_call call = { corr, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 };
	__u64 start = now_ns();
	CUpti_ActivityMemcpy6 m;

	/* a copy's stack is recorded as a launch's (conv__is_transfer) */
	vendor_launch(on_api_enter, &call, corr);
	api_record(corr, call.api, start, now_ns());
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
	struct launch_stack_stats st;
	char why[256];
	void *lib, *sym;
	__u32 corr = 1, i;
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
	/* as inject.c: only the marker's LAUNCH comes later, from another source */
	conv__set_launch_marked(conv, (options & XPU_CUPTI_OPT_LAUNCH_STACKS) &&
					      !(options & XPU_CUPTI_OPT_LAUNCH_INPROC));
	printf("options %#x\n", options);

	for (i = 0; i < COPIES; i++)
		copy_inputs(corr++);
	build_graph();
	zero_grads();
	for (i = 0; i < MATMULS; i++) {
		train_step(corr++);
		if (i % 8 == 7)
			ring__flush(ring);
	}
	for (i = 0; i < GRAPH_LAUNCHES; i++) {
		host_work(100000);
		launch_graph(corr++);
	}
	conv__loss(conv, now_ns(), XPU_LOSS_CUPTI, 3, 0);
	ring__flush(ring);
	if (options & XPU_CUPTI_OPT_LAUNCH_INPROC) {
		launch_stack__stats(&st);
		printf("launch stacks: %llu captured, %llu truncated, %llu failed, %llu frames, "
		       "%d not put\n",
		       (unsigned long long)st.captured, (unsigned long long)st.truncated,
		       (unsigned long long)st.failed, (unsigned long long)st.frames, put_errors);
		printf("from the callback: frame pointers %d frames (%s), CFI %d frames (%s)\n",
		       fp_frames, unwind_end__name(fp_end), cfi_frames, unwind_end__name(cfi_end));
	}
	{ /* the library's counters, as inject.c sends them (the stand-in has no buffers) */
		__u64 v[XPU_INPROC_STATS_N] = { 0 };

		launch_stack__stats(&st);
		lib_stats__stacks(v, &st);
		err = inproc__send_stats(sock, v, XPU_INPROC_STATS_N);
		printf("stats sent: %llu stacks, %llu truncated (%s)\n",
		       (unsigned long long)v[XPU_CUPTI_STAT_STACKS],
		       (unsigned long long)v[XPU_CUPTI_STAT_STACKS_TRUNCATED],
		       err ? strerror(-err) : "ok");
	}
	/* The uprobe's records travel through the cpu source; give them a moment to be read
	 * before the process's exit starts its grace period. */
	usleep(200000);
	conv__free(conv);
	ring__close(ring);
	close(sock);
	return 0;
}
