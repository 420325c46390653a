// SPDX-License-Identifier: MIT
/*
 * xpusup-synthetic: a source that generates what a CUDA program under xpusup would produce,
 * for tests and benchmarks. Per kernel launch of a simulated thread: a CUDA_API record and a
 * LAUNCH record (with a user stack), then the GPU activity (a kernel; every 4th launch a
 * memcpy, every 8th a memset) delivered late and out of order the way CUPTI delivers its
 * buffers; CPU samples, user ranges around launches, PMU counters and the kernel names as
 * STRING records in between. Each process's records go to the correlator shard that owns its
 * pid (xpu_shard_of).
 *
 * Answer key: a configured share of launches leaves out its CUDA_API and LAUNCH records, so
 * its GPU record can only go out unmatched; the counters say how many, so a test compares
 * them with what the correlators matched: every GPU record with a launch must be matched
 * (launches - gpu_missing_launch), every other unmatched. With answer_frame (the default)
 * the LAUNCH stack's innermost frame is 0x7f0000000000 + correlation id, so a consumer can
 * check that a join is the right one; without it, stacks are those of a small training loop
 * (three code paths, the same addresses in every process), which makes a readable flame
 * graph.
 *
 * With story (what scripts/demo shows; no answer frame), that training loop is told as the
 * README tells it: its functions have names, through the path real frames take (the source
 * writes a symbol file for its addresses and reports it in MODULE records: symfile.h), its
 * kernels are named after the layer that launched them and last as long as a small network's
 * do (hundreds of microseconds: about as much GPU time as CPU time in the flame graph), and
 * its CPU samples have no kernel frames (a made-up kernel address has no name on this host).
 */
#include "actors/actor.h"
#include "actors/synthetic/synthetic_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/synthetic/symfile.h"
#include "common/mix.h"
#include "common/topology.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define PROG "xpusup-synthetic"
#define GPU_REC_MAX 120
#define BATCH 256 /* launches per loop step: one flush per ring per step */

/* The simulated program's code paths to a kernel launch, outermost first: main, train_step,
 * then forward/conv2d, backward/gemm_grad or optimizer_step, then cudaLaunchKernel in the
 * CUDA runtime. 0 ends a path. */
#define PATH_FRAMES 6
static const __u64 code_paths[3][PATH_FRAMES] = {
	{ 0x401a20, 0x402b40, 0x403c10, 0x404d80, 0x7f3a10021e40, 0 },
	{ 0x401a20, 0x402b40, 0x405e30, 0x406f50, 0x7f3a10021e40, 0 },
	{ 0x401a20, 0x402b40, 0x407a70, 0x7f3a10021e40, 0, 0 },
};

/* A path's frames innermost first (as stacks travel), after `extra` deeper frames; returns
 * the frame count. */
static __u32 path_stack(__u32 path, const __u64 *extra, __u32 n_extra, __u64 *ips)
{
	__u32 n = 0, i, depth = 0;

	while (depth < PATH_FRAMES && code_paths[path][depth])
		depth++;
	for (i = 0; i < n_extra; i++)
		ips[n++] = extra[i];
	for (i = depth; i-- > 0;)
		ips[n++] = code_paths[path][i];
	return n;
}

/* `story`: where the simulated process maps its code (program, CUDA driver, CUDA runtime),
 * and the functions at code_paths' addresses and the CPU samples' library frames. */
static const struct symfile_image story_images[] = {
	{ .section = ".text", .vaddr = 0x401000, .size = 0x7000 },
	{ .section = ".text.libcuda", .vaddr = 0x7f3a0f8a1000, .size = 0x1000 },
	{ .section = ".text.libcudart", .vaddr = 0x7f3a10021000, .size = 0x2000 },
};
#define STORY_IMAGES (sizeof(story_images) / sizeof(story_images[0]))

static const struct symfile_function story_functions[] = {
	{ 0x401a20, "main" },
	{ 0x402b40, "train_step" },
	{ 0x403c10, "forward" },
	{ 0x404d80, "conv2d" },
	{ 0x405e30, "backward" },
	{ 0x406f50, "gemm_grad" },
	{ 0x407a70, "optimizer_step" },
	{ 0x7f3a0f8a1c30, "cuLaunchKernel" },
	{ 0x7f3a10021e40, "cudaLaunchKernel" },
	{ 0x7f3a10022010, "cudart::cudaApiLaunchKernel" },
};

/* `story`: the kernel each code path launches and its typical length in microseconds */
static const struct {
	const char *name;
	__u64 us;
} story_kernels[3] = {
	{ "conv2d_fwd_kernel", 800 },
	{ "gemm_grad_kernel", 1000 },
	{ "adam_step_kernel", 400 },
};

struct delayed {
	_Alignas(8) unsigned char rec[GPU_REC_MAX];
	__u32 shard;
};

#define SYN_STREAMS 2 /* streams per process: 7 and 8 */

struct synth {
	struct actor *a;
	struct synthetic_options k; /* story clears answer_frame (load_keys) */
	struct ring *rings[CONF_MAX_SHARDS];
	__u32 shards;
	/* `story`: the symbol file, as the MODULE records name it */
	struct symfile_image images[STORY_IMAGES];
	char sym_path[XPU_PATH_MAX + 1];
	__u64 sym_dev, sym_ino;
	bool flat_out; /* wait for room instead of dropping */
	struct delayed *delay; /* reorder buffer of GPU records */
	__u32 n_delayed;
	__u64 rng;
	__u64 launches, records, dropped, gpu_records, gpu_missing;
	/* per process and stream, when the stream's last activity ends: work on a stream runs
	 * one after another, as on a GPU */
	__u64 stream_free[4096][SYN_STREAMS];
	int c_launches, c_records, c_dropped, c_gpu, c_missing;
};

static int load_keys(const struct actor *a, struct synthetic_options *k)
{
	if (conf_actor__options(a->self, k, sizeof(*k)))
		return -EINVAL;
	if (k->story)
		k->answer_frame = false; /* its innermost frame would have no name */
	return 0;
}

/* Write one record into shard's ring; flat out waits for room, paced drops (and the ring
 * counts the loss). */
static void put(struct synth *s, __u32 shard, const void *rec)
{
	__u32 size = ((const struct xpu_rec *)rec)->size;
	unsigned int step = 0;
	void *p;

	if (s->flat_out) {
		while (!(p = ring__try_reserve(s->rings[shard], size))) {
			if (errno != EAGAIN || actor__stopping(s->a))
				goto drop;
			ring__flush(s->rings[shard]);
			actor__wait_room(s->a, &step);
		}
	} else {
		p = ring__reserve(s->rings[shard], size);
		if (!p)
			goto drop;
	}
	memcpy(p, rec, size);
	ring__commit(s->rings[shard]);
	s->records++;
	return;
drop:
	s->dropped++;
}

/* A GPU record waits in the reorder buffer; when it is full a random one goes out. */
static void delay_gpu(struct synth *s, __u32 shard, const void *rec)
{
	__u32 i;

	if (!s->k.reorder) {
		put(s, shard, rec);
		return;
	}
	if (s->n_delayed == s->k.reorder) {
		s->rng = xpu_mix64(s->rng);
		i = (__u32)(s->rng % s->n_delayed);
		put(s, s->delay[i].shard, s->delay[i].rec);
		s->delay[i] = s->delay[--s->n_delayed];
	}
	memcpy(s->delay[s->n_delayed].rec, rec, ((const struct xpu_rec *)rec)->size);
	s->delay[s->n_delayed++].shard = shard;
}

static void flush_delayed(struct synth *s)
{
	while (s->n_delayed) {
		s->n_delayed--;
		put(s, s->delay[s->n_delayed].shard, s->delay[s->n_delayed].rec);
	}
}

static bool launch_missing(const struct synth *s, __u32 pid, __u64 corr)
{
	return s->k.missing_launch_pct &&
	       xpu_mix64((__u64)pid << 40 ^ corr) % 100 < s->k.missing_launch_pct;
}

/* How long launch u's GPU work lasts: a memset in 8, a memcpy in 8, else a kernel. */
static __u64 gpu_duration(const struct synth *s, __u64 u, __u32 path)
{
	if (u % 8 == 7)
		return 1000;
	if (u % 4 == 3)
		return 40000;
	if (s->k.story) /* 75 % to 124 % of the kernel's typical length */
		return story_kernels[path].us * 10 * (75 + u % 50);
	return 1000 * (1 + u % 50);
}

/* `story`: the symbol file, in the session's folder (emptied when the session ends). 0 or
 * -errno. */
static int story__write_symbols(struct synth *s)
{
	char name[sizeof(s->a->self->name) + 16];
	int n;

	memcpy(s->images, story_images, sizeof(s->images));
	snprintf(name, sizeof(name), "%s.symbols", s->a->self->name);
	n = snprintf(s->sym_path, sizeof(s->sym_path), "%s/%s", s->a->dir, name);
	if (n < 0 || (size_t)n >= sizeof(s->sym_path) || s->sym_path[0] != '/')
		return -EINVAL; /* a MODULE record names an absolute path of XPU_PATH_MAX at most */
	return symfile__write(s->a->dirfd, name, s->images, STORY_IMAGES, story_functions,
			      sizeof(story_functions) / sizeof(story_functions[0]), &s->sym_dev,
			      &s->sym_ino);
}

/* A process's first launch: the names of its kernels, then (story) where its code is mapped,
 * before any stack that returns into it. */
static void announce_process(struct synth *s, __u32 shard, __u32 pid, __u64 now)
{
	_Alignas(8) unsigned char rec[sizeof(struct xpu_module) + XPU_PATH_MAX + 8];
	char name[48];
	__u32 i;
	int n;

	for (i = 0; i < (s->k.story ? 3 : 4); i++) {
		if (s->k.story)
			n = snprintf(name, sizeof(name), "%s", story_kernels[i].name);
		else
			n = snprintf(name, sizeof(name), "void synth_kernel_%u<float>(float*, int)",
				     i);
		xpu_string__build(rec, sizeof(rec), now, pid, pid, i + 1, XPU_STR_KERNEL, name,
				  (size_t)n);
		put(s, shard, rec);
	}
	for (i = 0; s->k.story && i < STORY_IMAGES; i++) {
		if (xpu_module__build(rec, sizeof(rec), now, pid, pid, s->images[i].vaddr,
				      s->images[i].vaddr + s->images[i].size, s->images[i].offset,
				      s->sym_dev, s->sym_ino, s->sym_path, strlen(s->sym_path)) > 0)
			put(s, shard, rec);
	}
}

static void one_launch(struct synth *s)
{
	_Alignas(8) unsigned char rec[1024];
	__u64 u = s->launches++, corr = u + 1, now = xpu_now_ns(), ips[16];
	__u32 path = (__u32)(u % 3), n_ips;
	__u32 p = (__u32)(u % s->k.processes), pid = (__u32)(s->k.pid_base + p);
	__u32 tid = pid + (__u32)((u / s->k.processes) % s->k.threads);
	__u32 shard = xpu_shard_of(pid, s->shards);
	__u32 stream = (__u32)((u / s->k.processes) % SYN_STREAMS);
	__u64 start = now + 20000, dur = gpu_duration(s, u, path);

	if (start < s->stream_free[p][stream])
		start = s->stream_free[p][stream];
	s->stream_free[p][stream] = start + dur;
	if (u < s->k.processes)
		announce_process(s, shard, pid, now);
	if (u % 32 == (u / 32) % 32) { /* one launch in 32 inside a user range on its thread */
		xpu_range__build(rec, sizeof(rec), now, pid, tid, XPU_RANGE_PUSH, corr, 0, 0,
				 "train_step", 10);
		put(s, shard, rec);
	}
	if (!launch_missing(s, pid, corr)) {
		struct xpu_cuda_api *api = (void *)rec;

		xpu_rec__init(api, XPU_REC_CUDA_API, sizeof(*api), now, pid, tid);
		api->end_ns = now + 4000;
		api->correlation_id = corr;
		api->api_id = 211; /* cudaLaunchKernel */
		api->domain = XPU_API_RUNTIME;
		put(s, shard, rec);
		__u64 key = 0x7f0000000000ull + corr; /* the answer key */

		n_ips = path_stack(path, &key, s->k.answer_frame ? 1 : 0, ips);
		xpu_launch__build(rec, sizeof(rec), now + 100, pid, tid, corr, 211, ips, n_ips);
		put(s, shard, rec);
	} else {
		s->gpu_missing++;
	}
	if (u % 8 == 7) {
		struct xpu_gpu_memset *m = (void *)rec;

		xpu_rec__init(m, XPU_REC_GPU_MEMSET, sizeof(*m), start, pid, tid);
		m->start_ns = start;
		m->end_ns = start + dur;
		m->correlation_id = corr;
		m->bytes = 1 << 20;
		m->stream_id = 7 + stream;
	} else if (u % 4 == 3) {
		struct xpu_gpu_memcpy *m = (void *)rec;

		xpu_rec__init(m, XPU_REC_GPU_MEMCPY, sizeof(*m), start, pid, tid);
		m->start_ns = start;
		m->end_ns = start + dur;
		m->correlation_id = corr;
		m->bytes = 4 << 20;
		m->copy_kind = XPU_COPY_HTOD;
		m->stream_id = 7 + stream;
	} else {
		struct xpu_gpu_kernel *k = (void *)rec;

		xpu_rec__init(k, XPU_REC_GPU_KERNEL, sizeof(*k), start, pid, tid);
		k->start_ns = start;
		k->end_ns = start + dur;
		k->correlation_id = corr;
		k->name_id = 1 + path; /* one kernel per code path */
		k->stream_id = 7 + stream;
		k->grid[0] = 256;
		k->grid[1] = k->grid[2] = 1;
		k->block[0] = 128;
		k->block[1] = k->block[2] = 1;
		k->registers = 32;
	}
	s->gpu_records++;
	delay_gpu(s, shard, rec);
	/* The range closes on the thread that opened it, before the thread's next launch: the
	 * correlator places CPU samples by their time, so a range stamped past the thread's later
	 * records would take in their samples. */
	if (u % 32 == (u / 32) % 32) {
		xpu_range__build(rec, sizeof(rec), now + 1, pid, tid, XPU_RANGE_POP, corr, 0, 0,
				 NULL, 0);
		put(s, shard, rec);
	}
	/* one launch in 16 (every process in turn) has a CPU sample on its thread during its
	 * API call: two frames inside the CUDA libraries below the code path, every other
	 * sample (but in the story) with two kernel frames */
	if (u % 16 == (u / 16) % 16) {
		/* the CUDA driver's and runtime's frames under cudaLaunchKernel, innermost first */
		static const __u64 work[2] = { 0x7f3a0f8a1c30, 0x7f3a10022010 };
		static const __u64 kernel[2] = { 0xffffffff81a0c2d0, 0xffffffff81a11f40 };

		n_ips = path_stack(path, work + (path == 2), path == 2 ? 1 : 2, ips);
		xpu_cpu_sample__build(rec, sizeof(rec), now, pid, tid, (__u32)(u % 2), 10101010,
				      "synth", kernel, u % 32 < 16 || s->k.story ? 0 : 2, ips,
				      n_ips);
		put(s, shard, rec);
	}
	if (u % 64 == 0) {
		struct xpu_pmu_counter *c = (void *)rec;

		xpu_rec__init(c, XPU_REC_PMU_COUNTER, sizeof(*c), now, pid, tid);
		c->counter_id = 1;
		c->value = u * 1000;
		c->delta = 64000;
		c->time_enabled = c->time_running = 1000000;
		c->cpu = XPU_PMU_NO_CPU;
		c->scope = XPU_PMU_SCOPE_PROCESS;
		put(s, shard, rec);
	}
}

static void publish(struct synth *s)
{
	__u32 i;

	for (i = 0; i < s->shards; i++)
		ring__flush(s->rings[i]);
	actor__count(s->a, s->c_launches, s->launches);
	actor__count(s->a, s->c_records, s->records);
	actor__count(s->a, s->c_dropped, s->dropped);
	actor__count(s->a, s->c_gpu, s->gpu_records);
	actor__count(s->a, s->c_missing, s->gpu_missing);
}

/* The simulated processes end: the correlators clean up after their exit grace. */
static void end_processes(struct synth *s)
{
	_Alignas(8) unsigned char rec[64];
	__u64 p;

	for (p = 0; p < s->k.processes; p++) {
		__u32 pid = (__u32)(s->k.pid_base + p);

		xpu_rec__init(rec, XPU_REC_PROC_EXIT, sizeof(struct xpu_proc_exit), xpu_now_ns(),
			      pid, pid);
		put(s, xpu_shard_of(pid, s->shards), rec);
	}
}

int main(int argc, char **argv)
{
	struct synth s = { .rng = 0x5eed };
	int code = ACTOR_EXIT_PERMANENT, err;
	struct actor a;
	__u64 start, due, n;
	bool done = false;
	__u32 i;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	s.a = &a;
	if (load_keys(&a, &s.k)) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a.self->section);
		goto out;
	}
	s.shards = a.conf->shards;
	s.flat_out = s.k.launches_per_s == 0;
	s.delay = calloc(s.k.reorder ? s.k.reorder : 1, sizeof(*s.delay));
	code = ACTOR_EXIT_RESTART;
	if (!s.delay)
		goto out;
	if (s.k.story && (err = story__write_symbols(&s))) {
		fprintf(stderr, PROG ": unable to write the symbol file %s: %s\n", s.sym_path,
			strerror(-err));
		goto out;
	}
	if ((err = actor__open_rings(&a, s.rings))) {
		code = actor__rings_exit(err);
		goto out;
	}
	s.c_launches = actor__counter(&a, "launches");
	s.c_records = actor__counter(&a, "records_out");
	s.c_dropped = actor__counter(&a, "records_dropped");
	s.c_gpu = actor__counter(&a, "gpu_records");
	s.c_missing = actor__counter(&a, "gpu_missing_launch");
	actor__ready(&a);

	start = xpu_now_ns();
	while (!actor__stopping(&a) && !done) {
		due = s.flat_out ? s.launches + BATCH :
				   (xpu_now_ns() - start) / 1000 * s.k.launches_per_s / 1000000;
		if (s.k.count && due > s.k.count)
			due = s.k.count;
		for (n = 0; s.launches < due && n < BATCH; n++)
			one_launch(&s);
		/* The last records go out with the last launches: `launches` reaching count in
		 * status then means every record is in the rings (tests wait on it). */
		done = s.k.count && s.launches >= s.k.count;
		if (done) {
			flush_delayed(&s);
			end_processes(&s);
		}
		publish(&s);
		actor__beat(&a);
		if (!n)
			actor__sleep_ms(&a, 1);
	}
	if (!done) {
		flush_delayed(&s);
		publish(&s);
	}
	/* Done producing: stay (a source that exits would be restarted) until told to stop. A
	 * ring that was full at the end still owes its consumer a LOSS record: each flush tries
	 * again, so the loss arrives once the shard has made room, not at stop. */
	while (!actor__stopping(&a)) {
		actor__sleep_ms(&a, 100);
		publish(&s);
	}
	code = 0;
out:
	for (i = 0; i < CONF_MAX_SHARDS; i++)
		ring__close(s.rings[i]);
	free(s.delay);
	actor__fini(&a);
	return code;
}
