// SPDX-License-Identifier: MIT
/*
 * The timeline format without a session: hand-made correlated events in, trace.json out,
 * and the exact text of the events that carry its rules: names escaped to valid UTF-8,
 * ranges paired into one slice, an arrow only where both ends are in the file, slices that
 * do not nest moved to an overlap lane, SM-active from merged kernel intervals, the sync
 * metadata, counters as scaled rates per interval with IPC where instructions and cycles
 * pair up, the counters the correlator attached to kernels and ranges as their args, and
 * Python frames in stacks ("[py] " and the whole name, line included; code and line unnamed). tests/sink_timeline_test.sh checks whole sessions with an independent reader.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pyframe.h"
#include "tests/tap.h"

#define BASE 1000000000000ull /* 1000 s of CLOCK_MONOTONIC: ts 1000000000.000 */
#define MS 1000000ull

static char path[256];

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	return strcmp(key, "path") ? NULL : path;
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	if (strcmp(key, "path"))
		return -ENOENT;
	snprintf(buf, size, "%s", path);
	return 0;
}

static __u64 counter(void *st, const char *name)
{
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	unsigned int i, n = fmt_timeline.counters(st, names, values, FMT_COUNTERS_MAX);

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return values[i];
	return ~0ull;
}

static unsigned int occurrences(const char *text, const char *s)
{
	unsigned int n = 0;

	for (; (text = strstr(text, s)); text++)
		n++;
	return n;
}

static struct xpu_cevent ev(__u64 id, __u16 kind, __u32 pid, __u32 tid, __u64 ts, __u64 end)
{
	return (struct xpu_cevent){
		.id = id, .kind = kind, .pid = pid, .tid = tid, .ts_ns = ts, .end_ns = end
	};
}

static void link_to(struct xpu_cevent *e, __u32 type, __u64 target)
{
	e->links[e->n_links++] = (struct xpu_link){ .type = type, .target = target };
}

/* The time of kernel i of batch j of the put_us memo check: 24 spans of 10 ms taking turns in
 * a scrambled order, a sub-ms part of its own */
static __u64 memo_ts(__u32 i, __u32 j)
{
	return 17341600000000ull + (i * 7 + j * 5) % 24 * 10000000ull + j * 32 + i;
}

/* A runtime call of pid and thread 42 lasting 800 ns: its id is its correlation id. */
static struct xpu_cevent call(__u64 id, __u64 ts, __u32 api_id)
{
	struct xpu_cevent e = ev(id, XPU_REC_CUDA_API, 42, 42, ts, ts + 800);

	e.api_id = api_id;
	e.sub_kind = XPU_API_RUNTIME;
	e.correlation_id = id;
	return e;
}

/* A kernel of 1 ms on stream 9 launched by call (and of its correlation id). */
static struct xpu_cevent kernel_of(__u64 id, __u64 ts, __u64 call_id)
{
	struct xpu_cevent e = ev(id, XPU_REC_GPU_KERNEL, 42, 42, ts, ts + MS);

	e.stream = 9;
	e.correlation_id = call_id;
	link_to(&e, XPU_LINK_LAUNCHED_BY, call_id);
	return e;
}

/* A LAUNCH of correlation corr on thread 42 with the stack of 1 kernel and 2 user frames. */
static struct xpu_cevent launch_of(__u64 id, __u64 ts, __u64 corr, const __u64 *stack,
				   const char *const *frames)
{
	struct xpu_cevent e = ev(id, XPU_REC_LAUNCH, 42, 42, ts, 0);

	e.correlation_id = corr;
	e.stack = stack;
	e.frames = frames;
	e.n_kernel = 1;
	e.n_user = 2;
	return e;
}

static struct xpu_cevent reading(__u64 id, __u32 pid, __u32 scope, __u32 cpu, const char *name,
				 __u64 ts, __u64 delta, double scale)
{
	struct xpu_cevent e = ev(id, XPU_REC_PMU_COUNTER, pid, pid, ts, 0);

	e.sub_kind = scope;
	e.cpu = cpu;
	e.name = name;
	e.name_len = (__u32)strlen(name);
	e.delta = delta;
	e.scale = scale;
	return e;
}

static void attach(struct xpu_cevent *e, double insn, double cycles, bool estimated)
{
	e->n_counters = 2;
	e->counters[0] =
		(struct xpu_wire_counter){ .name = "instructions", .name_len = 12, .delta = insn };
	e->counters[1] =
		(struct xpu_wire_counter){ .name = "cycles", .name_len = 6, .delta = cycles };
	e->ipc = insn / cycles;
	e->counter_flags = estimated ? XPU_COUNTERS_F_ESTIMATED : 0;
}

int main(void)
{
	static const char bad_name[] = "k\xff\x01\"\xc3\xa9"; /* invalid byte, control, é */
	static const __u64 stack[3] = { 0xffffffff81000010ull, 0x401000, 0x401100 };
	static const char *const frames[3] = { "sys_read", NULL, "main\"q\x01" };
	static const char *const frames2[3] = { "sys_write", NULL, "main\"q\x01" };
	static const __u64 other_leaf[3] = { 0xffffffff81000020ull, 0x401000, 0x401100 };
	/* a Python program's stack: native, Python named, Python unnamed, Python named */
	const __u64 py_stack[4] = { 0x401000, xpu_pyframe__ip(0x7f0000001000ull, 9),
				    xpu_pyframe__ip(0x7f0000005000ull, 7),
				    xpu_pyframe__ip(0x7f0000004000ull, 30) };
	static const char *const py_frames[4] = { "long_mul", "hot_a (/w/p.py:9)", NULL,
						  "<module> (/w/p.py:30)" };
	struct fmt_env env = { .get = env_get, .path = env_path };
	struct xpu_wire_batch b = { .version = 1, .producer = 3 };
	struct xpu_cevent e[32];
	static __u64 deep[127];
	static char long_name[200], long_head[300];
	char why[512], *text;
	__u64 written;
	__u32 i, j;
	void *st = NULL;
	__u32 n = 0;
	int err;

	snprintf(path, sizeof(path), "/tmp/xpusup-timeline-test-%d.json", (int)getpid());
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open: %s", err ? why : "ok"))
		return tap_done();

	/* a thread: a range around a call, the call's launch, a CPU sample */
	e[n] = ev(1, XPU_REC_CPU_SAMPLE, 42, 42, BASE, 0);
	e[n].name = "train";
	e[n].stack = stack;
	e[n].frames = frames; /* named frames, a kernel one, one without a name */
	e[n].n_kernel = 1;
	e[n].n_user = 2;
	e[n++].name_len = 5;
	e[n] = ev(27, XPU_REC_CPU_SAMPLE, 44, 44, BASE, 0);
	e[n].stack = py_stack;
	e[n].frames = py_frames;
	e[n++].n_user = 4;
	e[n] = ev(28, XPU_REC_LAUNCH, 44, 44, BASE + 10, 0); /* no names, ts not whole us */
	e[n].stack = py_stack + 1;
	e[n++].n_user = 1;
	/* the same stack again, and one that shares its callers: no new node but one */
	e[n] = ev(29, XPU_REC_CPU_SAMPLE, 42, 42, BASE + 1, 0);
	e[n].stack = stack;
	e[n].frames = frames;
	e[n].n_kernel = 1;
	e[n++].n_user = 2;
	e[n] = ev(30, XPU_REC_CPU_SAMPLE, 42, 42, BASE + 2, 0);
	e[n].stack = other_leaf;
	e[n].frames = frames;
	e[n].n_kernel = 1;
	e[n++].n_user = 2;
	e[n] = ev(2, XPU_REC_RANGE, 42, 42, BASE, 0);
	e[n].sub_kind = XPU_RANGE_PUSH;
	e[n].name = "step";
	e[n++].name_len = 4;
	e[n] = ev(3, XPU_REC_CUDA_API, 42, 42, BASE + 1000, BASE + 5000);
	e[n].api_id = 211;
	e[n].sub_kind = XPU_API_RUNTIME;
	e[n++].correlation_id = 7;
	/* a second call that overlaps the first without nesting: an overlap lane */
	e[n] = ev(4, XPU_REC_CUDA_API, 42, 42, BASE + 3000, BASE + 7000);
	e[n].api_id = 211;
	e[n].sub_kind = XPU_API_RUNTIME;
	e[n++].correlation_id = 8;
	e[n] = ev(5, XPU_REC_RANGE, 42, 42, BASE + 9000, 0);
	e[n].sub_kind = XPU_RANGE_POP;
	attach(&e[n], 900, 1800, false);
	link_to(&e[n++], XPU_LINK_COMPLETES, 2);
	/* a pop whose push never came */
	e[n] = ev(6, XPU_REC_RANGE, 42, 42, BASE + 9500, 0);
	e[n++].sub_kind = XPU_RANGE_POP;
	/* two kernels of the first call on two streams, overlapping: 10..60 ms, 40..90 ms */
	e[n] = ev(7, XPU_REC_GPU_KERNEL, 42, 42, BASE + 10 * MS, BASE + 60 * MS);
	e[n].stream = 7;
	e[n].correlation_id = 7;
	e[n].corr_type = XPU_CORR_EXACT_ID;
	e[n].confidence = 1;
	e[n].name = bad_name;
	e[n].name_len = sizeof(bad_name) - 1;
	attach(&e[n], 1500, 2000, true);
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 3);
	e[n] = ev(8, XPU_REC_GPU_KERNEL, 42, 42, BASE + 40 * MS, BASE + 90 * MS);
	e[n].stream = 8;
	e[n].correlation_id = 8;
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 4);
	/* a copy whose launch this sink never saw */
	e[n] = ev(9, XPU_REC_GPU_MEMCPY, 42, 42, BASE + 95 * MS, BASE + 96 * MS);
	e[n].stream = 7;
	e[n].sub_kind = XPU_COPY_HTOD;
	e[n].bytes = 4096;
	e[n].flags = XPU_COPY_F_GRAPH; /* a graph's copy node */
	e[n].graph_id = 3;
	e[n].graph_node_id = 77;
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 99);
	/* a memset with counters that are not whole, joined by time with confidence 0.95 */
	e[n] = ev(31, XPU_REC_GPU_MEMSET, 42, 42, BASE + 97 * MS, BASE + 97 * MS + 1500);
	e[n].stream = 8;
	e[n].corr_type = XPU_CORR_TIMESTAMP;
	e[n].confidence = 0.95f;
	attach(&e[n], 1234.5678, 1e20, false);
	e[n++].counters[0].name_len = 3; /* "ins" */
	/* a calibration reading: into otherData */
	e[n] = ev(10, XPU_REC_CLOCK_SYNC, 42, 42, BASE, BASE + 2000);
	e[n].sub_kind = XPU_CLOCK_CUPTI;
	e[n++].value = 555;
	/* a second, 1 s later on both clocks: the model is exact, target = source + BASE +
	 * 445 (the midpoints' offset), within half a bracket; and a bracket that ends before it
	 * begins, refused */
	e[n] = ev(25, XPU_REC_CLOCK_SYNC, 42, 42, BASE + 1000 * MS, BASE + 1000 * MS + 2000);
	e[n].sub_kind = XPU_CLOCK_CUPTI;
	e[n++].value = 555 + 1000 * MS;
	e[n] = ev(26, XPU_REC_CLOCK_SYNC, 42, 42, BASE + 5000, BASE + 4000);
	e[n].sub_kind = XPU_CLOCK_CUPTI;
	e[n++].value = 999;
	/* a range without a name (name NULL), a counter scaled past what a double holds, and
	 * allocations past INT64_MAX: hostile numbers still make valid JSON, no UB */
	e[n] = ev(11, XPU_REC_RANGE, 43, 43, BASE, 0);
	e[n++].sub_kind = XPU_RANGE_PUSH;
	e[n] = ev(12, XPU_REC_RANGE, 43, 43, BASE + 2000, 0);
	e[n].sub_kind = XPU_RANGE_POP;
	link_to(&e[n++], XPU_LINK_COMPLETES, 11);
	e[n++] = reading(13, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "cache-misses", BASE, 10,
			 1e308);
	e[n++] = reading(16, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "cache-misses",
			 BASE + 100 * MS, 10, 1e308);
	e[n] = ev(14, XPU_REC_GPU_MEMORY, 42, 42, BASE + 97 * MS, 0);
	e[n].sub_kind = XPU_MEM_ALLOC;
	e[n++].bytes = (1ull << 63) + 5;
	e[n] = ev(15, XPU_REC_GPU_MEMORY, 42, 42, BASE + 98 * MS, 0);
	e[n].sub_kind = XPU_MEM_ALLOC;
	e[n++].bytes = (1ull << 63) + 5;
	/* pid 42's instructions and cycles (multiplexed: scale 2) over [0, 100 ms]; a CPU's
	 * cycles over [0, 50 ms], then a reading of a counter that did not run */
	e[n++] = reading(17, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "instructions", BASE, 5,
			 1.0);
	e[n++] = reading(18, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "cycles", BASE, 5, 1.0);
	e[n++] = reading(19, 0, XPU_PMU_SCOPE_CPU, 3, "cycles", BASE, 5, 1.0);
	e[n++] = reading(20, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "instructions",
			 BASE + 100 * MS, 2000, 1.0);
	e[n++] = reading(21, 42, XPU_PMU_SCOPE_PROCESS, XPU_PMU_NO_CPU, "cycles", BASE + 100 * MS,
			 4000, 2.0);
	e[n++] = reading(22, 0, XPU_PMU_SCOPE_CPU, 3, "cycles", BASE + 50 * MS, 1000, 1.0);
	e[n++] = reading(23, 0, XPU_PMU_SCOPE_CPU, 3, "cycles", BASE + 100 * MS, 0, 0.0);
	e[n++] = reading(24, 0, XPU_PMU_SCOPE_CPU, 3, "cycles", BASE + 150 * MS, 500, 1.0);
	b.n_events = n;
	fmt_timeline.batch(st, &b, e);

	tap_eq_u64(counter(st, "flows"), 2, "two arrows: both kernels' launches are known");
	tap_eq_u64(counter(st, "flows_unknown_launch"), 1, "the copy's launch is unknown");
	tap_eq_u64(counter(st, "ranges_unmatched"), 1, "the pop without a push is counted");

	/* GPU work before its call (CUPTI's API and GPU records come in separate buffers):
	 * two kernels of correlation 50 (a graph launch's) linked only to their LAUNCH, then
	 * the call; a kernel of correlation 51 whose call never comes */
	n = 0;
	e[n] = ev(40, XPU_REC_GPU_KERNEL, 42, 42, BASE + 200 * MS, BASE + 201 * MS);
	e[n].stream = 7;
	e[n].correlation_id = 50;
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 39);
	e[n] = ev(41, XPU_REC_GPU_KERNEL, 42, 42, BASE + 202 * MS, BASE + 203 * MS);
	e[n].stream = 7;
	e[n].correlation_id = 50;
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 39);
	e[n] = ev(43, XPU_REC_GPU_KERNEL, 42, 42, BASE + 204 * MS, BASE + 205 * MS);
	e[n].stream = 7;
	e[n].correlation_id = 51;
	link_to(&e[n++], XPU_LINK_LAUNCHED_BY, 44);
	tap_eq_u64(counter(st, "flows"), 2, "no arrow yet for work whose call has not come");
	e[n] = ev(42, XPU_REC_CUDA_API, 42, 42, BASE + 199 * MS, BASE + 199 * MS + 800);
	e[n].api_id = 211;
	e[n].sub_kind = XPU_API_RUNTIME;
	e[n++].correlation_id = 50;
	b.n_events = n;
	fmt_timeline.batch(st, &b, e);
	tap_eq_u64(counter(st, "flows"), 4,
		   "the call, when it comes, starts the arrows to both "
		   "of its kernels");

	/* a graph launch whose call comes first: both kernels bind to its one flow_out; a
	 * kernel launched by a call that is not a launch (cudaDeviceSynchronize, 165): an "s"
	 * and "f" arrow, as the call's slice has no flow_out */
	n = 0;
	e[n++] = call(60, BASE + 300 * MS, 311); /* cudaGraphLaunch */
	e[n++] = kernel_of(61, BASE + 301 * MS, 60);
	e[n++] = kernel_of(62, BASE + 302 * MS, 60);
	e[n++] = call(63, BASE + 310 * MS, 165);
	e[n++] = kernel_of(64, BASE + 311 * MS, 63);
	b.n_events = n;
	fmt_timeline.batch(st, &b, e);
	tap_eq_u64(counter(st, "flows"), 7,
		   "a graph launch's two kernels and the last kernel: "
		   "three arrows more");
	written = counter(st, "events_written");

	/* a call, then its LAUNCH (the marker fires inside the call): one slice that names the
	 * stack. A call, then a LAUNCH of another call: both as they are, the LAUNCH's frames
	 * named otherwise than the same addresses were a moment ago (another program's
	 * binary), which are other frames even within one batch (stack_node's memo) */
	n = 0;
	e[n++] = call(70, BASE + 400 * MS, 211);
	e[n++] = launch_of(71, BASE + 400 * MS + 100, 70, stack, frames);
	e[n++] = call(72, BASE + 410 * MS, 211);
	e[n++] = launch_of(73, BASE + 410 * MS + 100, 99, stack, frames2);
	b.n_events = n;
	fmt_timeline.batch(st, &b, e);
	tap_eq_u64(counter(st, "events_written"), written + 3,
		   "three events for two calls and two LAUNCHes");
	tap_ok(access(path, F_OK) != 0, "no trace.json before finish");
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	tap_eq_u64(counter(st, "flows_unknown_launch"), 2,
		   "at the end, the kernel whose call never came is counted unknown too");
	fmt_timeline.free(st);

	text = tap_slurp(path);
	if (!tap_ok(text != NULL, "trace.json is there after finish"))
		return tap_done();
	tap_ok(occurrences(text, "{\"ph\":\"s\",") == 3 &&
		       occurrences(text, "{\"ph\":\"f\",") == 3 &&
		       occurrences(text, "\"ts\":1000199000,\"id\":3}") == 1 &&
		       occurrences(text, "\"ts\":1000199000,\"id\":4}") == 1 &&
		       occurrences(text, "\"ts\":1000202000,\"bp\":\"e\",\"id\":3}") == 1 &&
		       occurrences(text, "\"ts\":1000200000,\"bp\":\"e\",\"id\":4}") == 1 &&
		       occurrences(text, "\"ts\":1000310000,\"id\":7}") == 1 &&
		       occurrences(text, "\"ts\":1000311000,\"bp\":\"e\",\"id\":7}") == 1,
	       "the arrows to work that came before its call, and from a call that is not a "
	       "launch, are s and f events, each with both ends");
	tap_ok(occurrences(text, "\"flow_out\":true}") == 5 &&
		       occurrences(text, "\"flow_out\":true,\"sf\":3}") == 1 &&
		       occurrences(text, "\"flow_in\":true}") == 4 &&
		       occurrences(text, "\"bind_id\":4,\"flow_out\":true}") == 1 &&
		       occurrences(text, "\"bind_id\":4,\"flow_in\":true}") == 2 &&
		       strstr(text, "\"correlation_id\":63,\"api_id\":165}}"),
	       "the others are on the slices: a flow_out on each launch's call (the late call's "
	       "too, which binds nothing), a flow_in on each kernel, a graph's two on one "
	       "bind_id; none on cudaDeviceSynchronize");
	tap_ok(!strncmp(text, "{\"traceEvents\":[\n", 17) &&
		       strstr(text, "\n],\n\"stackFrames\":{\n") &&
		       strstr(text, "},\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{") &&
		       !strcmp(text + strlen(text) - 3, "}}\n"),
	       "one object: the events array, stackFrames, displayTimeUnit, otherData");
	tap_ok(strstr(text, "{\"ph\":\"i\",\"name\":\"cpu sample\",\"cat\":\"cpu\",\"pid\":42,"
			    "\"tid\":42,\"ts\":1000000000,\"s\":\"t\",\"args\":{\"cpu\":0,"
			    "\"weight\":0},\"sf\":3}") &&
		       strstr(text, "\n\"1\":{\"name\":\"main\\\"q\\u0001\"},\n"
				    "\"2\":{\"name\":\"0x401000\",\"parent\":\"1\"},\n"
				    "\"3\":{\"name\":\"sys_read_[k]\",\"parent\":\"2\"},\n"),
	       "a stack is its innermost frame in stackFrames, each frame under its caller: names "
	       "where it has them, escaped, hex where not");
	tap_ok(strstr(text, "\"4\":{\"name\":\"[py] <module> (/w/p.py:30)\"},\n"
			    "\"5\":{\"name\":\"[py] 0x7f0000005000 (line 7)\",\"parent\":\"4\"},\n"
			    "\"6\":{\"name\":\"[py] hot_a (/w/p.py:9)\",\"parent\":\"5\"},\n"
			    "\"7\":{\"name\":\"long_mul\",\"parent\":\"6\"},\n"
			    "\"8\":{\"name\":\"[py] 0x7f0000001000 (line 9)\"},\n") &&
		       strstr(text, "\"sf\":7}") && strstr(text, "\"sf\":8}") &&
		       !strstr(text, "\"stack\""),
	       "Python frames: \"[py] \" and the whole name, line included; unnamed, their code "
	       "and line; no stack inline");
	tap_ok(occurrences(text, "\"sf\":3}") == 3 && occurrences(text, "\n\"3\":{") == 1 &&
		       strstr(text, "\"9\":{\"name\":\"sys_read_[k]\",\"parent\":\"2\"}") &&
		       strstr(text, "\"sf\":9}") &&
		       strstr(text, "\"10\":{\"name\":\"sys_write_[k]\",\"parent\":\"2\"}") &&
		       !strstr(text, "\"11\":{"),
	       "a stack seen again is the same node; one that shares its callers adds its frame "
	       "under theirs");
	tap_ok(strstr(text, "\"ts\":1000400000,\"dur\":0.8,\"args\":{\"correlation_id\":70,"
			    "\"api_id\":211},\"bind_id\":5,\"flow_out\":true,\"sf\":3}") &&
		       !strstr(text, "\"correlation_id\":70,\"api_id\":0}"),
	       "a call and its LAUNCH: one slice, with the launch's stack");
	tap_ok(strstr(text, "\"ts\":1000410000,\"dur\":0.8,\"args\":{\"correlation_id\":72,"
			    "\"api_id\":211},\"bind_id\":6,\"flow_out\":true}") &&
		       strstr(text,
			      "\"ts\":1000410000.1,\"s\":\"t\",\"args\":{\"correlation_id\":99,"
			      "\"api_id\":0},\"sf\":10}"),
	       "a LAUNCH of another call: an instant of its own, its frames new nodes");
	tap_ok(strstr(text, "\"ts\":1000000000.01,\"s\":\"t\",\"args\":{\"correlation_id\":0,"
			    "\"api_id\":0},\"sf\":8}") != NULL,
	       "a launch 10 ns into a microsecond: ts exact, without trailing zeros");
	tap_ok(strstr(text,
		      "\"args\":{\"correlation_id\":0,\"graph\":3,\"graph_node\":77,"
		      "\"context\":0,\"bytes\":4096,\"copy_kind\":\"HtoD\",\"async\":false") &&
		       occurrences(text, "\"graph_node\":") == 1,
	       "a graph's copy node: its graph and node in args, as a graph kernel's");
	tap_ok(strstr(text, "\"cat\":\"memset\",\"pid\":1073741824,\"tid\":8,\"ts\":1000097000,"
			    "\"dur\":1.5,\"args\":{\"correlation_id\":0,\"context\":0,\"bytes\":0,"
			    "\"value\":0,\"corr_type\":\"timestamp\",\"confidence\":0.95,"
			    "\"counters\":{\"ins\":1234.5678,\"cycles\":1e+20},"
			    "\"ipc\":1.23457e-17}}") != NULL,
	       "a memset on its stream track (device and stream named by the track, not args); "
	       "counts that are not whole, confidence and IPC as %%g writes them");
	tap_ok(strstr(text, "\"name\":\"k\\u00ff\\u0001\\\"\xc3\xa9\"") != NULL,
	       "a name is escaped to valid UTF-8: a bad byte is its Latin-1 code point, é stays");
	tap_ok(strstr(text, "{\"ph\":\"X\",\"name\":\"step\",\"cat\":\"range\",\"pid\":42,"
			    "\"tid\":42,\"ts\":1000000000,\"dur\":9,") != NULL,
	       "push and pop are one slice of 9 us on the thread");
	tap_ok(strstr(text, "\"cat\":\"cuda_api\",\"pid\":42,\"tid\":42,\"ts\":1000000001,"
			    "\"dur\":4,\"args\":{\"correlation_id\":7,\"api_id\":211},"
			    "\"bind_id\":1,\"flow_out\":true}") != NULL,
	       "the first call is on its thread; its name says its domain");
	tap_ok(strstr(text, "\"cat\":\"cuda_api\",\"pid\":42,\"tid\":4194346,"
			    "\"ts\":1000000003,\"dur\":4,") != NULL,
	       "the overlapping call is on the thread's first overlap lane (42 + 1 << 22)");
	tap_ok(strstr(text, "\"cat\":\"cuda_api\",\"pid\":42,\"tid\":4194346,"
			    "\"ts\":1000000003,\"dur\":4,\"args\":{\"correlation_id\":8,"
			    "\"api_id\":211},\"bind_id\":2,\"flow_out\":true}") != NULL,
	       "an arrow starts on the slice of its call, on the track the call went to");
	tap_ok(strstr(text, "\"cat\":\"kernel\",\"pid\":1073741824,\"tid\":7,"
			    "\"ts\":1000010000,") &&
		       strstr(text, "\"counters_estimated\":true},\"bind_id\":1,\"flow_in\":true}"),
	       "and ends on its kernel's, on the GPU pseudo-process's stream track");
	tap_ok(strstr(text, "\"name\":\"SM active\",\"cat\":\"gpu\",\"pid\":1073741825,"
			    "\"tid\":1073741825,\"ts\":1000000000,\"args\":{\"%\":80}") != NULL,
	       "SM active of the device: 10..90 ms merged, 80 %% of the 100 ms window");
	tap_ok(strstr(text, "\"ts\":1000100000,\"args\":{\"%\":0}") != NULL,
	       "and back to 0 after its last window");
	tap_ok(strstr(text, "\"name\":\"SM active\",\"cat\":\"gpu\",\"pid\":42,") != NULL,
	       "SM active of the process, on its own track");
	tap_ok(strstr(text, "\"args\":{\"name\":\"GPU 0 (pid 42)\"}") &&
		       strstr(text, "\"args\":{\"name\":\"stream 8\"}") &&
		       strstr(text, "\"args\":{\"name\":\"train\"}") &&
		       strstr(text, "\"args\":{\"name\":\"train 42 (overlap 1)\"}"),
	       "processes, threads, streams and lanes are named");
	tap_ok(strstr(text, "\"clock_sync_readings\":3,\"clock_sync_samples\":[{\"pid\":42,"
			    "\"clock\":\"cupti\",\"ref_before_ns\":1000000000000,\"other_ns\":555,"
			    "\"ref_after_ns\":1000000002000},") != NULL,
	       "the clock sync readings are in otherData");
	tap_ok(strstr(text, "\"clock_sync\":{\"cupti\":{\"source\":\"cupti\",\"target\":"
			    "\"CLOCK_MONOTONIC\",\"slope\":1,\"intercept_ns\":1000000000445,"
			    "\"error_ns\":1001,") != NULL &&
		       strstr(text, "\"samples\":2,\"tightest_ns\":2000,") &&
		       strstr(text, "\"message\":\"\",\"readings\":3,\"refused\":1}}"),
	       "and the model of the CUPTI clock they give: offset and slope exact, error half a "
	       "bracket, the bad bracket refused");
	tap_ok(strstr(text, "{\"ph\":\"X\",\"name\":\"range\",\"cat\":\"range\",\"pid\":43,"
			    "\"tid\":43,\"ts\":1000000000,\"dur\":2,") != NULL,
	       "a range without a name is one slice named range");
	tap_ok(!strstr(text, "\"name\":\"cache-misses\"") && !strstr(text, "inf}"),
	       "a scale that would make the delta infinite writes no point: no 'inf' in JSON");
	tap_ok(strstr(text, "{\"ph\":\"C\",\"name\":\"instructions\",\"cat\":\"pmu\",\"pid\":42,"
			    "\"tid\":42,\"ts\":1000000000,\"args\":{\"/s\":20000}}") &&
		       strstr(text, "{\"ph\":\"C\",\"name\":\"cycles\",\"cat\":\"pmu\",\"pid\":42,"
				    "\"tid\":42,\"ts\":1000000000,\"args\":{\"/s\":80000}}"),
	       "a process's counter: its scaled rate over the interval, at the interval's start");
	tap_ok(strstr(text, "{\"ph\":\"C\",\"name\":\"IPC\",\"cat\":\"pmu\",\"pid\":42,"
			    "\"tid\":42,\"ts\":1000000000,\"args\":{\"insn/cycle\":0.25}}") != NULL,
	       "IPC of the process: instructions / scaled cycles of the same interval");
	tap_ok(strstr(text, "\"name\":\"cycles cpu3\",\"cat\":\"pmu\",\"pid\":1073741826,"
			    "\"tid\":1073741826,\"ts\":1000000000,\"args\":{\"/s\":20000}}") &&
		       strstr(text, "\"ts\":1000100000,\"args\":{\"/s\":10000}}") &&
		       !strstr(text, "\"ts\":1000050000,\"args\":{\"/s\"") &&
		       strstr(text,
			      "{\"ph\":\"M\",\"name\":\"process_name\",\"cat\":\"__metadata\","
			      "\"pid\":1073741826,\"tid\":1073741826,\"args\":{\"name\":"
			      "\"system\"}}"),
	       "a CPU's counter on the system track; the interval it did not run has no point");
	tap_ok(strstr(text, "\"corr_type\":\"exact_id\",\"counters\":{"
			    "\"instructions\":1500,\"cycles\":2000},\"ipc\":0.75,"
			    "\"counters_estimated\":true") != NULL,
	       "a kernel slice carries its counters, IPC and whether they are estimated");
	tap_ok(strstr(text,
		      "\"name\":\"step\",\"cat\":\"range\",\"pid\":42,\"tid\":42,"
		      "\"ts\":1000000000,\"dur\":9,\"args\":{\"range_id\":0,"
		      "\"counters\":{\"instructions\":900,\"cycles\":1800},\"ipc\":0.5}}") != NULL,
	       "a range slice carries its pop's counters");
	tap_ok(strstr(text, "\"args\":{\"bytes\":9223372036854775807}") != NULL,
	       "device memory saturates at INT64_MAX instead of overflowing");
	if (tap_failed_)
		tap_diag("%s", text);
	free(text);

	/* no CLOCK_SYNC at all: every source stamped CLOCK_MONOTONIC, and otherData says so */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open again: %s", err ? why : "ok"))
		return tap_done();
	b.n_events = 1;
	fmt_timeline.batch(st, &b, e);
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_timeline.free(st);
	text = tap_slurp(path);
	tap_ok(text && strstr(text, "\"clock_sync\":{\"all\":{\"source\":\"all sources stamp "
				    "CLOCK_MONOTONIC\",\"target\":\"CLOCK_MONOTONIC\","
				    "\"slope\":1,\"intercept_ns\":0,\"error_ns\":0,"),
	       "without readings: all sources stamp CLOCK_MONOTONIC, error 0");
	free(text);

	/* stacks of 127 frames never seen before fill the frame tree (131072 nodes) after 1032:
	 * the rest are written inline, and counted */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open a third time: %s", err ? why : "ok"))
		return tap_done();
	for (i = 0; i < 1040; i++) {
		for (j = 0; j < 127; j++)
			deep[j] = 0x100000 + (__u64)i * 128 + j;
		e[0] = ev(1000 + i, XPU_REC_CPU_SAMPLE, 42, 42, BASE + i, 0);
		e[0].stack = deep;
		e[0].n_user = 127;
		b.n_events = 1;
		fmt_timeline.batch(st, &b, e);
	}
	tap_eq_u64(counter(st, "stacks_inline"), 1040 - 1032,
		   "the stacks beyond the tree are counted");
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_timeline.free(st);
	text = tap_slurp(path);
	tap_ok(text && strstr(text, "\"sf\":131064}") && strstr(text, "\n\"131064\":{") &&
		       !strstr(text, "\"131065\":{") &&
		       occurrences(text, ",\"stack\":[\"0x") == 1040 - 1032 &&
		       strstr(text, "\"stack\":[\"0x") > strstr(text, "\"sf\":131064}") &&
		       strstr(text, ",\"stacks_inline\":8,"),
	       "a full tree: the last stack that fits has its node, the others are inline, "
	       "otherData counts them; the nodes the first stack that did not fit made are "
	       "not written: no event names them");
	free(text);

	/* event heads come from a memo (begin): each must still be its own event's, whatever
	 * copy its name is in, for names differing only in their last byte, on another stream,
	 * with characters to escape and too long for the memo */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open a fourth time: %s", err ? why : "ok"))
		return tap_done();
	{
		/* the 11-byte ones differ in their first word only (bytes 0, 2) or in their
		 * last, which overlaps the first (byte 10) */
		static const char *const names[] = { "alpha",	    "alpha",	   "alphb",
						     "alpha",	    "k\"q",	   "k\"q",
						     "abcdefghijk", "Xbcdefghijk", "abXdefghijk",
						     "abcdefghijX" };
		static const __u32 streams[] = { 9, 9, 9, 10, 9, 9, 9, 9, 9, 9 };
		char copies[10][16];

		memset(long_name, 'x', sizeof(long_name) - 1);
		snprintf(long_head, sizeof(long_head),
			 "\"name\":\"%s\",\"cat\":\"kernel\",\"pid\":1073741824,\"tid\":9,",
			 long_name);
		for (i = 0; i < 12; i++) {
			e[i] = ev(2000 + i, XPU_REC_GPU_KERNEL, 42, 42, BASE + i * 1000,
				  BASE + i * 1000 + 500);
			e[i].stream = i < 10 ? streams[i] : 9;
			if (i < 10)
				snprintf(copies[i], sizeof(copies[i]), "%s", names[i]);
			e[i].name = i < 10 ? copies[i] : long_name;
			e[i].name_len = (__u32)strlen(e[i].name);
		}
		b.n_events = 12;
		fmt_timeline.batch(st, &b, e);
	}
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_timeline.free(st);
	text = tap_slurp(path);
	tap_ok(text &&
		       occurrences(text, "{\"ph\":\"X\",\"name\":\"alpha\",\"cat\":\"kernel\","
					 "\"pid\":1073741824,\"tid\":9,\"ts\":") == 2 &&
		       occurrences(text, "{\"ph\":\"X\",\"name\":\"alphb\",\"cat\":\"kernel\","
					 "\"pid\":1073741824,\"tid\":9,\"ts\":") == 1 &&
		       occurrences(text, "{\"ph\":\"X\",\"name\":\"alpha\",\"cat\":\"kernel\","
					 "\"pid\":1073741824,\"tid\":10,\"ts\":") == 1 &&
		       occurrences(text, "{\"ph\":\"X\",\"name\":\"k\\\"q\",\"cat\":\"kernel\","
					 "\"pid\":1073741824,\"tid\":9,\"ts\":") == 2 &&
		       occurrences(text, long_head) == 2 &&
		       occurrences(text,
				   "{\"ph\":\"X\",\"name\":\"abcdefghijk\",\"cat\":\"kernel\"") ==
			       1 &&
		       occurrences(text,
				   "{\"ph\":\"X\",\"name\":\"Xbcdefghijk\",\"cat\":\"kernel\"") ==
			       1 &&
		       occurrences(text,
				   "{\"ph\":\"X\",\"name\":\"abXdefghijk\",\"cat\":\"kernel\"") ==
			       1 &&
		       occurrences(text,
				   "{\"ph\":\"X\",\"name\":\"abcdefghijX\",\"cat\":\"kernel\"") ==
			       1,
	       "heads: two copies of one name, names differing in their last byte, another "
	       "stream, a name to escape, 11-byte names differing in their first or last word, "
	       "and one too long for the memo: each event its own head");
	free(text);

	/* a kernel's launch configuration comes from a memo (put_kconf), timestamps' upper
	 * digits from the one before (put_us): each event must still have its own, for
	 * configurations differing in one integer of nine, a negative one, and timestamps on
	 * both sides of a 10 ms boundary, with trailing and leading zeros, and below 10 ms */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open a fifth time: %s", err ? why : "ok"))
		return tap_done();
	{
		static const __s32 conf[][9] = {
			/* context, grid, block, registers, shared memory */
			{ 1, 256, 1, 1, 128, 1, 1, 32, 0 },  { 1, 256, 1, 1, 128, 1, 1, 32, 0 },
			{ 1, 256, 1, 1, 128, 1, 2, 32, 0 },  { 1, 256, 1, 1, 128, 1, 1, 32, 0 },
			{ 1, 256, 1, 1, 128, 1, 1, 32, 48 }, { 2, 256, 1, 1, 128, 1, 1, 32, 0 },
			{ 1, -3, 1, 1, 128, 1, 1, 32, 0 },
		};
		static const __u64 ts[] = { 17341609999999ull, 17341610000001ull, 17341610000000ull,
					    17341609990010ull, 5000120ull,	  17341610999000ull,
					    9999999ull };

		for (i = 0; i < 7; i++) {
			e[i] = ev(3000 + i, XPU_REC_GPU_KERNEL, 42, 42, ts[i], ts[i] + 500);
			e[i].stream = 9;
			e[i].context = (__u32)conf[i][0];
			memcpy(e[i].grid, &conf[i][1], sizeof(e[i].grid));
			memcpy(e[i].block, &conf[i][4], sizeof(e[i].block));
			e[i].registers = (__u32)conf[i][7];
			e[i].shared_mem = (__u32)conf[i][8];
		}
		b.n_events = 7;
		fmt_timeline.batch(st, &b, e);
	}
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_timeline.free(st);
	text = tap_slurp(path);
#define KCONF(c, g, b3, r, m)                                           \
	"\"args\":{\"correlation_id\":0,\"context\":" c ",\"grid\":[" g \
	",1,1],\"block\":[128,1," b3 "],\"registers\":" r ",\"shared_memory\":" m ","
	tap_ok(text && occurrences(text, KCONF("1", "256", "1", "32", "0")) == 3 &&
		       occurrences(text, KCONF("1", "256", "2", "32", "0")) == 1 &&
		       occurrences(text, KCONF("1", "256", "1", "32", "48")) == 1 &&
		       occurrences(text, KCONF("2", "256", "1", "32", "0")) == 1 &&
		       occurrences(text, KCONF("1", "-3", "1", "32", "0")) == 1,
	       "launch configurations: three of one, and ones differing in a block dimension, "
	       "the shared memory, the context or a negative grid dimension: each its own");
#undef KCONF
	tap_ok(text && strstr(text, "\"ts\":17341609999.999,") &&
		       strstr(text, "\"ts\":17341610000.001,") &&
		       strstr(text, "\"ts\":17341610000,") &&
		       strstr(text, "\"ts\":17341609990.01,") && strstr(text, "\"ts\":5000.12,") &&
		       strstr(text, "\"ts\":17341610999,") && strstr(text, "\"ts\":9999.999,"),
	       "timestamps across a 10 ms boundary, with zeros in their last digits and below "
	       "10 ms: each its own");
	free(text);

	/* put_us keeps the upper digits of a few timestamps (a direct-mapped memo): 24 batches
	 * of 32 kernels, their 10 ms spans taking turns in a scrambled order among 24 spans, more
	 * than the memo holds, so that entries are replaced and found again; each event's ts must
	 * be its own */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open a sixth time: %s", err ? why : "ok"))
		return tap_done();
	for (j = 0, n = 0; j < 24; j++) {
		for (i = 0; i < 32; i++) {
			__u64 at = memo_ts(i, j);

			e[i] = ev(4000 + j * 32 + i, XPU_REC_GPU_KERNEL, 42, 42, at, at + 500);
			e[i].stream = 9;
		}
		b.n_events = 32;
		fmt_timeline.batch(st, &b, e);
	}
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_timeline.free(st);
	text = tap_slurp(path);
	for (j = 0; text && j < 24; j++) {
		for (i = 0; i < 32; i++) {
			__u64 at = memo_ts(i, j);
			char want[64];
			size_t k;

			/* the decimals without their trailing zeros, none for a whole us */
			k = (size_t)snprintf(want, sizeof(want), "\"ts\":%llu.%03llu",
					     (unsigned long long)(at / 1000),
					     (unsigned long long)(at % 1000));
			while (want[k - 1] == '0')
				k--;
			k -= want[k - 1] == '.';
			snprintf(want + k, sizeof(want) - k, ",");
			n += !strstr(text, want);
		}
	}
	tap_ok(text && !n,
	       "768 timestamps in 24 spans of 10 ms taking turns: each its own (%u wrong)", n);
	free(text);

	/* integers (put_u64: below 10^9 by fixed point, above by division) at every number of
	 * digits: 10^k - 1, 10^k and a middle one, up to 2^64 - 1 */
	err = fmt_timeline.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open for integers: %s", err ? why : "ok"))
		return tap_done();
	{
		static __u64 ids[64];
		__u64 p10 = 1;
		char want[64];

		for (j = 0, n = 0; j < 20; j++, p10 *= 10) {
			ids[n++] = p10 - 1 ? p10 - 1 : 18446744073709551615ull;
			ids[n++] = p10;
			ids[n++] = p10 + p10 / 3 * 2 + 7;
		}
		ids[n++] = 4294967295ull;
		for (i = 0; i < n; i++) {
			e[0] = ev(9000 + i, XPU_REC_GPU_KERNEL, 42, 42, BASE + i * MS,
				  BASE + i * MS + 9);
			e[0].stream = 9;
			e[0].correlation_id = ids[i];
			b.n_events = 1;
			fmt_timeline.batch(st, &b, e);
		}
		err = fmt_timeline.finish(st, why, sizeof(why));
		fmt_timeline.free(st);
		text = tap_slurp(path);
		for (i = 0, j = 0; text && i < n; i++) {
			snprintf(want, sizeof(want), "\"correlation_id\":%llu,",
				 (unsigned long long)ids[i]);
			j += !strstr(text, want);
		}
		tap_ok(!err && text && !j,
		       "%u integers of 1 to 20 digits: each written as printf "
		       "writes it (%u wrong)",
		       n, j);
		free(text);
	}

	/* ranges whose pops were lost, closed at finish: each must nest with every slice of its
	 * track, also with a call long before the end that was under way at its push (the last
	 * LANE_RECENT slices alone would not see it): one range pushed inside a call that came
	 * first, one pushed before a call under way at its push came, each followed by 40 calls */
	for (i = 0; i < 2; i++) {
		err = fmt_timeline.open(&st, &env, why, sizeof(why));
		if (!tap_ok(err == 0, "lost pop %u: open: %s", i, err ? why : "ok"))
			return tap_done();
		n = 0;
		e[n++] = call(500, BASE + 900, 1); /* under way at the push, 900..1700 */
		e[n] = ev(501, XPU_REC_RANGE, 42, 42, BASE + 1000, 0);
		e[n].sub_kind = XPU_RANGE_PUSH;
		e[n].name = "lost";
		e[n++].name_len = 4;
		if (i) { /* the call's record after the push's, as CUPTI sends a call at its end */
			struct xpu_cevent c = e[0];

			e[0] = e[1];
			e[1] = c;
		}
		b.n_events = n;
		fmt_timeline.batch(st, &b, e);
		for (j = 0; j < 40; j++) {
			e[0] = call(600 + j, BASE + 5000 + j * 1000, 1);
			b.n_events = 1;
			fmt_timeline.batch(st, &b, e);
		}
		err = fmt_timeline.finish(st, why, sizeof(why));
		tap_ok(err == 0, "lost pop %u: finish: %s", i, err ? why : "ok");
		fmt_timeline.free(st);
		text = tap_slurp(path);
		/* the call and the range on different tracks of thread 42, the range to the end */
		tap_ok(text &&
			       (strstr(text,
				       "\"name\":\"lost\",\"cat\":\"range\",\"pid\":42,\"tid\":42,") !=
				NULL) !=
				       (strstr(text,
					       "\"pid\":42,\"tid\":42,\"ts\":1000000000.9,\"dur\":0.8,") !=
					NULL) &&
			       strstr(text,
				      "\"ts\":1000000001,\"dur\":43.8,\"args\":{\"range_id\":0,"
				      "\"unfinished\":true}"),
		       "lost pop %u: the range whose pop was lost and the call under way at its push "
		       "are on two tracks; the range lasts to the end of its track",
		       i);
		free(text);
	}
	unlink(path);
	return tap_done();
}
