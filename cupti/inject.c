/* SPDX-License-Identifier: MIT */
/*
 * libxpusup_cupti.so: the CUPTI injection library (docs/cupti.md).
 *
 * Loaded into a profiled program by the CUDA driver through CUDA_INJECTION64_PATH (set by
 * `xpusup record` and `xpusup run`), which calls InitializeInjection once, at cuInit. It
 *
 *   - finds the session through the in-process hand-off (shm/inproc.h: hello kind
 *     XPU_INPROC_CUPTI) and gets a ring of its own; the reply's options say which activity
 *     kinds to enable and whether to mark launches;
 *   - registers a timestamp callback, so every CUPTI timestamp is CLOCK_MONOTONIC ns, the
 *     clock of the eBPF and perf sources;
 *   - enables the activity kinds, converts each completed buffer's records (cupti/convert.c)
 *     into the ring, and forces a flush every FLUSH_MS from a thread of its own, so activity
 *     streams during the run; the last flush is at exit;
 *   - on every launch API enter (runtime and driver, kernel and graph launches) records the
 *     launching thread's stack: by default it walks the stack itself, with the CFI of the
 *     loaded images (cupti/launch_stack.c), and writes the LAUNCH record into its ring
 *     (launch_stacks = inproc); or it calls xpusup_launch_marker(correlation id, api id), an
 *     exported function that does nothing, on which the cpu source's uprobe captures the
 *     stack (launch_stacks = marker); graph node creation does the same (event.h,
 *     XPU_LAUNCH_GRAPH_NODE);
 *   - turns NVTX push/pop/start/end/mark into RANGE records (XPU_RANGE_F_NVTX).
 *
 * It must never block or take down the program: no session, a refused hello, a CUPTI error
 * or the session going away each turn it off with one line on stderr, and from then on
 * every callback returns at its first test. The ring is written under one lock (it has one
 * producer: this process); a full ring drops and counts (the ring writes a LOSS record when
 * room returns). In-process launch stacks are walked before the lock is taken (the walk
 * needs nothing shared), and counted; the counts go to stderr at exit, in one line.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <nvtx3/nvToolsExt.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <generated_nvtx_meta.h>

#include "shm/inproc.h"
#include "cupti/buffer_pool.h"
#include "cupti/convert.h"
#include "cupti/inject.h"
#include "cupti/launch_stack.h"
#include "cupti/lib_stats.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define EXPORT __attribute__((visibility("default")))
#define FLUSH_MS 100 /* how often activity is forced out of CUPTI's buffers */
/* One CUPTI activity buffer. CUPTI 13 gives a thread's buffer back whenever it has something
 * complete in it (two to four times a kernel on an H200), so most come back nearly empty: a
 * small one is cleared quickly, and a busy thread's next comes from the pool
 * (buffer_pool.h). */
#define BUFFER_BYTES (256u << 10)
#define BUFFERS_KEPT 64 /* buffers the pool keeps for the next request: 16 MiB at most */
#define STRINGS_MAX 4096 /* NVTX registered strings remembered */
#define CONVERT_CHUNK 64 /* records converted per hold of the lock */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* ring, conv, strings */
static struct ring *ring;
static struct conv *conv;
static struct buffer_pool pool; /* CUPTI's activity buffers */
static int sock = -1;
static __u32 options;
static int enabled; /* read on every callback, relaxed: it gates work, publishes nothing */
static bool said; /* the one line on stderr has been written */
static CUpti_SubscriberHandle subscriber;
static bool subscribed;
static bool forked; /* this is a child forked without exec: it records nothing */

/* How a launch's stack is recorded (the options' launch bits, launch_stacks). */
static enum {
	LAUNCH_OFF,
	LAUNCH_MARKER, /* call xpusup_launch_marker: the cpu source's uprobe captures it */
	LAUNCH_INPROC, /* walk it here and write the LAUNCH record (launch_stack.c) */
} launch_mode;

static pthread_t flusher;
static bool flusher_running;
static pthread_mutex_t flusher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flusher_cond = PTHREAD_COND_INITIALIZER;
static bool flusher_stop;

/* One correlation id is recorded once per thread, although a runtime launch API and the
 * driver API it calls both pass through the callback with it. */
static __thread __u32 last_marked;
static struct conv_api_set stacked; /* the ids whose callbacks CUPTI accepted (subscribe) */
static __u32 callbacks_refused; /* ... and how many it refused */

struct registered {
	__u64 handle;
	char *text;
};
static struct registered strings[STRINGS_MAX];
static unsigned int n_strings;

/*
 * The uprobe target (docs/cupti.md, "Launch stacks"). noinline and an empty asm that uses
 * both arguments, so the compiler keeps the call and its arguments in registers as the ABI
 * passes them: the uprobe reads them there.
 */
EXPORT __attribute__((noinline)) void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id)
{
	__asm__ volatile("" : : "r"(correlation_id), "r"(api_id) : "memory");
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* CUPTI's clock becomes ours: kernels and CPU samples share one time axis. */
static uint64_t timestamp_cb(void)
{
	return now_ns();
}

/* The one line on stderr: why GPU activity is not recorded. */
static void say(const char *what, const char *detail)
{
	if (__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		return;
	fprintf(stderr, "xpusup: GPU activity off: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
}

static bool on(void)
{
	return __atomic_load_n(&enabled, __ATOMIC_RELAXED);
}

static int put(void *ctx, const void *rec, __u32 size)
{
	return ring__write(ring, rec, size);
}

/* launch_stack__record's put, on an application thread: the ring under the producer lock,
 * as the NVTX records go. The record is complete, so the lock is held for one copy. */
static int put_launch(void *ctx, const void *rec, __u32 size)
{
	int err = -ENODEV;

	pthread_mutex_lock(&lock);
	if (ring && on()) /* a failed set-up keeps the ring but is off */
		err = ring__write(ring, rec, size);
	pthread_mutex_unlock(&lock);
	return err;
}

/* A launch's stack, the way the options say. Both ways it starts at the return address
 * into the code that called for it: the walk's first frame is the caller's (launch_stack.h),
 * and the uprobe replaces the marker's entry address with it (actors/cpu/profile.bpf.c). */
static void launch_stack(__u64 correlation_id, __u32 api_id)
{
	/* counted by launch_stack.c; a full ring counts its own drops */
	if (launch_mode == LAUNCH_INPROC)
		launch_stack__record(correlation_id, api_id, put_launch, NULL);
	else if (launch_mode == LAUNCH_MARKER)
		xpusup_launch_marker(correlation_id, api_id);
}

static const char *cupti_error(CUptiResult res)
{
	const char *s = NULL;

	if (cuptiGetResultString(res, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

/* ---- activity buffers ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	/* zeroed, as CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER promises it (activities_enable) */
	*buffer = buffer_pool__get(&pool);
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0; /* as many as fit */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0, n = 0;

	if (!on() || !buffer)
		goto free_buffer;
	/* The lock is also taken by application threads (NVTX ranges, graph clones): give it
	 * up every CONVERT_CHUNK records (a few microseconds of conversion), so a thread
	 * pushing a range never waits for a whole buffer (thousands of records). */
	pthread_mutex_lock(&lock);
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		conv__activity(conv, rec);
		if (++n % CONVERT_CHUNK == 0) {
			pthread_mutex_unlock(&lock);
			pthread_mutex_lock(&lock);
		}
	}
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
		conv__loss(conv, now_ns(), XPU_LOSS_CUPTI, dropped, 0);
	ring__flush(ring);
	pthread_mutex_unlock(&lock);
free_buffer:
	buffer_pool__put(&pool, buffer);
}

/* ---- callbacks ---- */

/* Whether cbid is in stacked; atomic, as callbacks_enable may clear a bit of its word. */
static bool stack_wanted(bool driver, __u32 cbid)
{
	return cbid < CONV_API_IDS &&
	       (__atomic_load_n(&stacked.bits[driver][cbid / 64], __ATOMIC_RELAXED) >> (cbid % 64) &
		1);
}

static void on_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
		      const CUpti_CallbackData *cb)
{
	__u32 api_id;

	if (cb->callbackSite != CUPTI_API_ENTER || cb->correlationId == last_marked ||
	    !stack_wanted(domain == CUPTI_CB_DOMAIN_DRIVER_API, cbid))
		return;
	last_marked = cb->correlationId;
	api_id = (__u32)cbid | (domain == CUPTI_CB_DOMAIN_DRIVER_API ? XPU_LAUNCH_API_DRIVER : 0);
	launch_stack(cb->correlationId, api_id);
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *res)
{
	/* a graph node's callbacks only: others may have no descriptor */
	const CUpti_GraphData *g = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
						   cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED ?
					   res->resourceDescriptor :
					   NULL;
	uint64_t node = 0, orig = 0;
	uint32_t ctx_id, dev_id;

	switch (cbid) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		if (cuptiGetContextId(res->context, &ctx_id) == CUPTI_SUCCESS &&
		    cuptiGetDeviceId(res->context, &dev_id) == CUPTI_SUCCESS) {
			pthread_mutex_lock(&lock);
			conv__context(conv, ctx_id, dev_id);
			pthread_mutex_unlock(&lock);
		}
		break;
	case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
		/* The stack of the code that built the node (directly or by stream capture):
		 * what its kernels, copies and memsets are attributed to, whenever the graph is
		 * launched. */
		if (g && launch_mode != LAUNCH_OFF &&
		    cuptiGetGraphNodeId(g->node, &node) == CUPTI_SUCCESS)
			launch_stack(XPU_LAUNCH_GRAPH_NODE | node, XPU_LAUNCH_API_GRAPH_NODE);
		break;
	case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
		if (g && cuptiGetGraphNodeId(g->node, &node) == CUPTI_SUCCESS &&
		    cuptiGetGraphNodeId(g->originalNode, &orig) == CUPTI_SUCCESS) {
			pthread_mutex_lock(&lock);
			conv__node_cloned(conv, node, orig);
			pthread_mutex_unlock(&lock);
		}
		break;
	default:
		break;
	}
}

static const char *registered_text(__u64 handle)
{
	unsigned int i;

	for (i = 0; i < n_strings; i++)
		if (strings[i].handle == handle)
			return strings[i].text;
	return "[registered string]";
}

/* The message of NVTX event attributes: ASCII, or a string registered earlier. */
static const char *attr_name(const nvtxEventAttributes_t *a)
{
	if (!a)
		return NULL;
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return a->message.ascii;
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
		return registered_text((__u64)(uintptr_t)a->message.registered);
	return "[unicode]";
}

static void nvtx_record(__u32 phase, __u64 range_id, __u64 domain, const char *name)
{
	pthread_mutex_lock(&lock);
	conv__range(conv, now_ns(), (__u32)gettid(), phase, range_id, domain, name);
	pthread_mutex_unlock(&lock);
}

static void nvtx_domain(nvtxDomainHandle_t h, const char *name)
{
	pthread_mutex_lock(&lock);
	conv__domain(conv, (__u64)(uintptr_t)h, name, now_ns());
	pthread_mutex_unlock(&lock);
}

static void nvtx_register(const void *ret, const char *text)
{
	const nvtxStringHandle_t *h = ret;

	if (!h || !*h || !text)
		return;
	pthread_mutex_lock(&lock);
	if (n_strings < STRINGS_MAX) {
		strings[n_strings].text = strdup(text);
		if (strings[n_strings].text)
			strings[n_strings++].handle = (__u64)(uintptr_t)*h;
	}
	pthread_mutex_unlock(&lock);
}

static __u64 handle_id(nvtxDomainHandle_t h)
{
	return (__u64)(uintptr_t)h & ~(3ull << 62); /* as conv__domain numbers it */
}

static void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
	const void *p = d->functionParams;
	const nvtxRangeId_t *ret = d->functionReturnValue;

	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxRangePushA:
		nvtx_record(XPU_RANGE_PUSH, 0, 0, ((const nvtxRangePushA_params *)p)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushEx:
		nvtx_record(XPU_RANGE_PUSH, 0, 0,
			    attr_name(((const nvtxRangePushEx_params *)p)->eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
		const nvtxDomainRangePushEx_params *q = p;

		nvtx_record(XPU_RANGE_PUSH, 0, handle_id(q->domain),
			    attr_name(q->core.eventAttrib));
		break;
	}
	case CUPTI_CBID_NVTX_nvtxRangePop:
		nvtx_record(XPU_RANGE_POP, 0, 0, NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePop:
		nvtx_record(XPU_RANGE_POP, 0,
			    handle_id(((const nvtxDomainRangePop_params *)p)->domain), NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartA:
		nvtx_record(XPU_RANGE_START, ret ? *ret : 0, 0,
			    ((const nvtxRangeStartA_params *)p)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
		nvtx_record(XPU_RANGE_START, ret ? *ret : 0, 0,
			    attr_name(((const nvtxRangeStartEx_params *)p)->eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
		const nvtxDomainRangeStartEx_params *q = p;

		nvtx_record(XPU_RANGE_START, ret ? *ret : 0, handle_id(q->domain),
			    attr_name(q->core.eventAttrib));
		break;
	}
	case CUPTI_CBID_NVTX_nvtxRangeEnd:
		nvtx_record(XPU_RANGE_END, ((const nvtxRangeEnd_params *)p)->id, 0, NULL);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
		const nvtxDomainRangeEnd_params *q = p;

		nvtx_record(XPU_RANGE_END, q->core.id, handle_id(q->domain), NULL);
		break;
	}
	case CUPTI_CBID_NVTX_nvtxMarkA:
		nvtx_record(XPU_RANGE_MARK, 0, 0, ((const nvtxMarkA_params *)p)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxMarkEx:
		nvtx_record(XPU_RANGE_MARK, 0, 0,
			    attr_name(((const nvtxMarkEx_params *)p)->eventAttrib));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
		const nvtxDomainMarkEx_params *q = p;

		nvtx_record(XPU_RANGE_MARK, 0, handle_id(q->domain),
			    attr_name(q->core.eventAttrib));
		break;
	}
	case CUPTI_CBID_NVTX_nvtxDomainCreateA:
		if (d->functionReturnValue)
			nvtx_domain(*(const nvtxDomainHandle_t *)d->functionReturnValue,
				    ((const nvtxDomainCreateA_params *)p)->name);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
		nvtx_register(d->functionReturnValue,
			      ((const nvtxDomainRegisterStringA_params *)p)->string);
		break;
	default:
		break;
	}
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			      const void *data)
{
	/* CUDA 13's CUPTI calls some callbacks of a domain with no data (first seen on an
	 * H100: a resource callback, which read its descriptor and crashed the program) */
	if (!on() || !data)
		return;
	switch (domain) {
	case CUPTI_CB_DOMAIN_RUNTIME_API:
	case CUPTI_CB_DOMAIN_DRIVER_API:
		on_launch(domain, cbid, data);
		break;
	case CUPTI_CB_DOMAIN_RESOURCE:
		on_resource(cbid, data);
		break;
	case CUPTI_CB_DOMAIN_NVTX:
		on_nvtx(cbid, data);
		break;
	default:
		break;
	}
}

/* ---- set-up, flushing, tear-down ---- */

struct activity_kind {
	__u32 opt; /* XPU_CUPTI_ACT_* */
	CUpti_ActivityKind kind;
	const char *name;
};

static const struct activity_kind activity_kinds[] = {
	{ XPU_CUPTI_ACT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel" },
	{ XPU_CUPTI_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy" },
	{ XPU_CUPTI_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, "memcpy (peer)" },
	{ XPU_CUPTI_ACT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "memset" },
	{ XPU_CUPTI_ACT_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync" },
	{ XPU_CUPTI_ACT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime" },
	{ XPU_CUPTI_ACT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER, "driver" },
	{ XPU_CUPTI_ACT_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY2, "memory" },
	{ XPU_CUPTI_ACT_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD, "overhead" },
	{ XPU_CUPTI_ACT_EXTERNAL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "external" },
};

#define N_KINDS (sizeof(activity_kinds) / sizeof(activity_kinds[0]))

static void activities_disable(void)
{
	size_t i;

	for (i = 0; i < N_KINDS; i++)
		if (options & activity_kinds[i].opt)
			cuptiActivityDisable(activity_kinds[i].kind);
}

/* One clock pair per flush: with the timestamp callback both read CLOCK_MONOTONIC, and the
 * record lets a consumer check that; without it, it is what the clock module models. */
static void clock_pair(void)
{
	uint64_t cupti;
	__u64 before, after;

	before = now_ns();
	if (cuptiGetTimestamp(&cupti) != CUPTI_SUCCESS)
		return;
	after = now_ns();
	pthread_mutex_lock(&lock);
	conv__clock_sync(conv, before, cupti, after);
	ring__flush(ring);
	pthread_mutex_unlock(&lock);
}

/* The session is gone when the actor closed its end of the socket. */
static bool session_gone(void)
{
	struct pollfd p = { .fd = sock, .events = POLLIN | POLLRDHUP };
	char byte;

	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLRDHUP | POLLERR))
		return true;
	return recv(sock, &byte, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
}

static void turn_off(const char *why)
{
	if (!__atomic_exchange_n(&enabled, 0, __ATOMIC_RELAXED))
		return;
	say(why, NULL);
	activities_disable();
}

/* The library's counters to the actor (xpusup status: lib_*), running totals: after each
 * flush and at exit. One datagram without waiting; a lost one costs only freshness. */
static void send_stats(void)
{
	__u64 v[XPU_INPROC_STATS_N] = { 0 };
	struct launch_stack_stats st;

	if (forked || sock < 0)
		return;
	if (pool.free) { /* no pool: set-up failed before it */
		pthread_mutex_lock(&pool.lock);
		v[XPU_CUPTI_STAT_BUFFERS_ASKED] = pool.allocated + pool.reused;
		v[XPU_CUPTI_STAT_BUFFERS_MADE] = pool.allocated;
		v[XPU_CUPTI_STAT_BUFFERS_TWICE] = pool.twice;
		v[XPU_CUPTI_STAT_BUFFERS_DIRTY] = pool.dirty;
		v[XPU_CUPTI_STAT_BUFFERS_REFUSED] = pool.refused;
		pthread_mutex_unlock(&pool.lock);
	}
	if (launch_mode == LAUNCH_INPROC) {
		launch_stack__stats(&st);
		lib_stats__stacks(v, &st);
	}
	v[XPU_CUPTI_STAT_CALLBACKS_REFUSED] = callbacks_refused;
	inproc__send_stats(sock, v, XPU_INPROC_STATS_N);
}

static void *flusher_main(void *arg)
{
	struct timespec until;

	pthread_mutex_lock(&flusher_lock);
	while (!flusher_stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += FLUSH_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&flusher_cond, &flusher_lock, &until);
		if (flusher_stop || !on())
			break;
		pthread_mutex_unlock(&flusher_lock);
		if (session_gone()) {
			turn_off("the session went away");
		} else {
			/* Not forced: a forced flush also gives the work still running,
			 * without its times, lost for good (on the H100: 313 of 1 980 kernels
			 * of tests/cuda/torch_loop.py, 6 of 200 of the CUDA workload; the
			 * converter counts such records as incomplete). Full buffers come
			 * anyway, and the forced flush at the end takes the rest. */
			cuptiActivityFlushAll(0);
			clock_pair();
			send_stats();
		}
		pthread_mutex_lock(&flusher_lock);
	}
	pthread_mutex_unlock(&flusher_lock);
	return NULL;
}

/* The in-process captures' counts, once, at exit, where the program's user sees them (the
 * actor has them too: send_stats). */
static void say_launch_stacks(void)
{
	struct launch_stack_stats st;

	if (launch_mode != LAUNCH_INPROC || forked)
		return;
	launch_stack__stats(&st);
	if (!st.captured && !st.failed)
		return;
	fprintf(stderr,
		"xpusup: launch stacks: %llu captured (%llu truncated), %llu failed, %.1f frames "
		"each, %.2f rules a capture not in the cache; %llu mappings sent (%llu lost)\n",
		(unsigned long long)st.captured, (unsigned long long)st.truncated,
		(unsigned long long)st.failed,
		st.captured ? (double)st.frames / (double)st.captured : 0.0,
		st.captured ? (double)st.cache_misses / (double)st.captured : 0.0,
		(unsigned long long)st.modules, (unsigned long long)st.modules_lost);
	if (st.py_stacks)
		fprintf(stderr,
			"xpusup: launch stacks: %llu with Python frames (%llu truncated, %llu "
			"ending at a frame not read), %.1f Python frames each\n",
			(unsigned long long)st.py_stacks, (unsigned long long)st.py_truncated,
			(unsigned long long)st.py_bad, (double)st.py_frames / (double)st.py_stacks);
}

/* The activity buffers' counts, in the same way: how often CUPTI asked, and how often the
 * pool answered without making one (docs/cupti.md, "Activity buffers"). */
static void say_buffers(void)
{
	if (forked || !pool.free) /* no pool: set-up failed before it */
		return;
	pthread_mutex_lock(&pool.lock);
	if (pool.allocated)
		fprintf(stderr,
			"xpusup: CUPTI activity buffers: %llu asked for, %llu of them made (%u "
			"KiB each), %llu freed past the %u kept, %llu given back twice or not "
			"ours, %llu written after they came back, %llu refused (too many out)\n",
			(unsigned long long)(pool.allocated + pool.reused),
			(unsigned long long)pool.allocated, (unsigned int)(pool.bytes >> 10),
			(unsigned long long)pool.released, pool.max_free,
			(unsigned long long)pool.twice, (unsigned long long)pool.dirty,
			(unsigned long long)pool.refused);
	pthread_mutex_unlock(&pool.lock);
}

/* exit(): stop the flusher, force the last records out, publish them. */
static void at_exit(void)
{
	say_launch_stacks();
	if (flusher_running) {
		pthread_mutex_lock(&flusher_lock);
		flusher_stop = true;
		pthread_cond_signal(&flusher_cond);
		pthread_mutex_unlock(&flusher_lock);
		pthread_join(flusher, NULL);
		flusher_running = false;
	}
	if (!on())
		return;
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&lock);
	ring__flush(ring);
	pthread_mutex_unlock(&lock);
	send_stats(); /* before exit closes the socket: the actor reads it ahead of the EOF */
	say_buffers();
	/* Off from here: exit handlers registered before ours (the CUDA runtime's, if it
	 * registered before cuInit called us) and libraries' destructors still run, and
	 * buffers CUPTI completes meanwhile only go back to the pool. */
	__atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
}

/* A child forked without exec must not produce into its parent's ring (one producer). */
static void at_fork_child(void)
{
	/* The child's one thread: a lock another thread held at the fork stays held in the
	 * child, and CUPTI may still give buffers back there. */
	if (pool.free)
		pthread_mutex_init(&pool.lock, NULL);
	__atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
	flusher_running = false; /* the thread did not come along */
	forked = true;
}

/* The launch and transfer APIs' callbacks, where their stacks are taken (on_launch). Only the
 * ids CUPTI accepted stay in stacked and, in marker mode, are marked for the correlator: a
 * marked call whose marker never runs would hold its GPU work for a LAUNCH that never comes,
 * until launch_wait_ns, and be counted expired. An id is in stacked before its callback is
 * on; a refused one leaves it by an atomic clear, as on_launch may read the word meanwhile. */
static void callbacks_enable(void)
{
	__u32 id, refused = 0;
	int driver;

	conv__stack_apis(&stacked);
	for (driver = 0; driver < 2; driver++)
		for (id = 0; id < CONV_API_IDS; id++) {
			if (!conv_api_set__has(&stacked, driver, id) ||
			    cuptiEnableCallback(1, subscriber,
						driver ? CUPTI_CB_DOMAIN_DRIVER_API :
							 CUPTI_CB_DOMAIN_RUNTIME_API,
						id) == CUPTI_SUCCESS)
				continue;
			__atomic_fetch_and(&stacked.bits[driver][id / 64], ~(1ull << (id % 64)),
					   __ATOMIC_RELAXED);
			refused++;
		}
	if (launch_mode == LAUNCH_MARKER)
		conv__set_marked(conv, &stacked);
	callbacks_refused = refused;
	if (refused)
		fprintf(stderr,
			"xpusup: CUPTI refused the callbacks of %u launch, copy or memset APIs: "
			"their GPU work has no launch stacks\n",
			refused);
}

static int subscribe(void)
{
	CUptiResult res;

	res = cuptiSubscribe(&subscriber, callback, NULL);
	if (res != CUPTI_SUCCESS) {
		say("CUPTI refused a subscriber (no GPU or no driver?)", cupti_error(res));
		return -EIO;
	}
	subscribed = true;
	if (launch_mode != LAUNCH_OFF)
		callbacks_enable();
	res = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
	if (res != CUPTI_SUCCESS) {
		say("CUPTI resource callbacks", cupti_error(res));
		return -EIO;
	}
	if ((options & XPU_CUPTI_ACT_NVTX) &&
	    cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX) != CUPTI_SUCCESS)
		fprintf(stderr, "xpusup: NVTX ranges will not be recorded (CUPTI refused)\n");
	return 0;
}

/*
 * No records of the API calls that only ask for state (convert.h): most of a framework's
 * calls, each a record CUPTI makes on the calling thread. After the kinds are enabled:
 * enabling RUNTIME or DRIVER sets every call of that API on again. A CUPTI that refuses
 * records them, as before: more records, nothing lost.
 */
static void queries_disable(void)
{
	size_t i, refused = 0;

	if (options & XPU_CUPTI_ACT_RUNTIME)
		for (i = 0; i < conv_n_runtime_queries; i++)
			refused += cuptiActivityEnableRuntimeApi(conv_runtime_queries[i], 0) !=
				   CUPTI_SUCCESS;
	if (options & XPU_CUPTI_ACT_DRIVER)
		for (i = 0; i < conv_n_driver_queries; i++)
			refused += cuptiActivityEnableDriverApi(conv_driver_queries[i], 0) !=
				   CUPTI_SUCCESS;
	if (refused)
		fprintf(stderr,
			"xpusup: CUPTI records %zu kinds of state query anyway (it refused to leave "
			"them out)\n",
			refused);
}

static int activities_enable(void)
{
	uint8_t zeroed = 1;
	char missing[256] = "";
	CUptiResult res;
	size_t i, n = 0;

	/* Our buffers come zeroed (buffer_pool.h): without this CUPTI clears each one itself,
	 * on the thread whose record asked for it, inside that thread's CUDA call. Refused by
	 * an older CUPTI: it clears them then, as before, which costs time and loses nothing. */
	res = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
					&(size_t){ sizeof(zeroed) }, &zeroed);
	if (res != CUPTI_SUCCESS)
		fprintf(stderr, "xpusup: CUPTI clears its activity buffers itself (%s)\n",
			cupti_error(res));
	/* Thread ids as the kernel's (gettid), those of the cpu source's samples and the LAUNCH
	 * records: CUPTI's default on Linux is pthread_self(), cut to 32 bits, which put every
	 * API call of a program on a thread of its own in the timeline (on the H200: "tid
	 * 1223209728" beside the main thread's samples). */
	res = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (res != CUPTI_SUCCESS)
		fprintf(stderr,
			"xpusup: CUPTI keeps its own thread ids (%s): API calls are not on "
			"their threads' tracks\n",
			cupti_error(res));
	res = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (res != CUPTI_SUCCESS) {
		say("CUPTI activity buffers", cupti_error(res));
		return -EIO;
	}
	for (i = 0; i < N_KINDS; i++) {
		if (!(options & activity_kinds[i].opt))
			continue;
		if (cuptiActivityEnable(activity_kinds[i].kind) == CUPTI_SUCCESS) {
			n++;
			continue;
		}
		if (strlen(missing) + strlen(activity_kinds[i].name) + 3 < sizeof(missing))
			strcat(strcat(missing, *missing ? ", " : ""), activity_kinds[i].name);
	}
	if (*missing)
		fprintf(stderr, "xpusup: CUPTI activity not available: %s\n", missing);
	if (!n && (options & XPU_CUPTI_ACT_ALL & ~XPU_CUPTI_ACT_NVTX)) {
		say("CUPTI enabled none of the activity kinds", NULL);
		return -EIO;
	}
	if (!(options & XPU_CUPTI_OPT_API_QUERIES))
		queries_disable();
	return 0;
}

/* Undo a set-up that failed part way: nothing of ours stays in the process's way. */
static void teardown(void)
{
	__atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
	if (subscribed) {
		cuptiUnsubscribe(subscriber);
		subscribed = false;
	}
	activities_disable();
	/* conv and ring stay (a leak, once, of a set-up that failed): a callback that passed
	 * on() before enabled fell may be waiting for the lock to use them (an NVTX push on
	 * another thread, a resource callback, a buffer completing), and must not find them
	 * freed. The socket's close tells the actor the producer is gone. */
	if (sock >= 0)
		close(sock);
	sock = -1;
}

/*
 * Called by the CUDA driver once, at cuInit, because CUDA_INJECTION64_PATH names this
 * library. Returns 1 whatever happens: the program runs on without profiling rather than
 * fail its CUDA initialisation because of us.
 */
EXPORT int InitializeInjection(void)
{
	static bool done;
	char why[256];
	CUptiResult res;
	int err;

	if (__atomic_exchange_n(&done, true, __ATOMIC_RELAXED))
		return 1;
	err = inproc__connect(XPU_INPROC_CUPTI, XPU_INPROC_TIMEOUT_MS, &sock, &ring, &options, why,
			      sizeof(why));
	if (err) {
		say(why, NULL);
		return 1;
	}
	if (!(options & XPU_INPROC_OPT_SET))
		options = XPU_CUPTI_OPT_DEFAULTS; /* an actor that chooses nothing */
	conv = conv__new((__u32)getpid(), put, NULL);
	if (!conv || buffer_pool__init(&pool, BUFFER_BYTES, BUFFERS_KEPT)) {
		say("out of memory", NULL);
		goto err_teardown;
	}
	/* In process wins when an actor sets both bits. Only the marker's calls are marked for
	 * the correlator (XPU_API_F_LAUNCH_MARKED: hold the kernels for a LAUNCH from the cpu
	 * source); an in-process LAUNCH is in this ring already, ahead of the call's record. */
	if (options & XPU_CUPTI_OPT_LAUNCH_INPROC)
		launch_mode = LAUNCH_INPROC;
	else if (options & XPU_CUPTI_OPT_LAUNCH_STACKS)
		launch_mode = LAUNCH_MARKER;
	__atomic_store_n(&enabled, 1, __ATOMIC_RELAXED);
	res = cuptiActivityRegisterTimestampCallback(timestamp_cb);
	if (subscribe() || activities_enable())
		goto err_teardown;
	if (res != CUPTI_SUCCESS) /* said only now: when nothing else failed, it matters */
		fprintf(stderr,
			"xpusup: CUPTI keeps its own clock (%s): GPU times are aligned by the "
			"clock pairs sent with each flush\n",
			cupti_error(res));
	pthread_atfork(NULL, NULL, at_fork_child);
	atexit(at_exit);
	flusher_running = !pthread_create(&flusher, NULL, flusher_main, NULL);
	if (!flusher_running)
		fprintf(stderr, "xpusup: no flush thread: GPU activity arrives as buffers fill\n");
	return 1;

err_teardown:
	teardown();
	return 1;
}

/*
 * NVTX finds its tool through NVTX_INJECTION64_PATH; `record` names this library there too,
 * so one path serves both, and NVTX's calls go on to CUPTI's implementation, which turns
 * them into the callbacks above.
 */
EXPORT int InitializeInjectionNvtx2(const void *get_export_table)
{
	int (*next)(const void *);
	void *sym = dlsym(RTLD_NEXT, "InitializeInjectionNvtx2");

	/* POSIX dlsym: an object pointer that is a function's address */
	memcpy(&next, &sym, sizeof(next));
	return next ? next(get_export_table) : 0;
}
