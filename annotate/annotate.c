/* SPDX-License-Identifier: MIT */
/*
 * libxpusup_annotate: the annotate API (include/xpusup/annotate.h) over the in-process
 * hand-off (shm/inproc.h, docs/inproc.md).
 *
 * Cost model. Every entry point first reads one global flag, `active` (a session is attached
 * or a callback is registered); it is written only at load, at fork and when callbacks come
 * and go, so without a session and without callbacks a call is one predictable branch.
 *
 * The ring has one producer, the process, and the process has many threads. Each thread
 * builds its records in its own batch buffer (no lock, no shared cache line) and moves the
 * whole batch into the ring under `lock`, then publishes it with one ring__flush: when the
 * batch is full, when the thread's outermost range ends (so a finished top-level scope is in
 * the session at once), when a mark or counter is taken outside every range, when the batch
 * is older than BATCH_AGE_NS, at the thread's first record (so the session knows early that
 * it has ranges), and when the thread or the process exits. Records of one
 * thread stay in order; records of different threads may reach the ring up to a batch apart,
 * which the correlator's per-thread nesting does not mind.
 *
 * What is lost: the batches of threads still running when the process calls exit() (only
 * the exiting thread's batch is flushed: another thread may be writing its own), and all
 * records of a child forked without exec (it must not write into its parent's ring: one
 * producer per ring; it keeps calling the callbacks).
 */
#include "xpusup/annotate.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "shm/inproc.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define BATCH_BYTES 8192u /* a thread's records between two moves into the ring */
#define BATCH_AGE_NS 10000000ull /* the longest a record waits in its thread's batch */
#define NAME_STACK 64 /* range names remembered per thread, for the callbacks' pops */
#define STRING_CACHE 32 /* counter names a thread remembers having sent */
#define MAX_CALLBACKS 16
/* Counter-name STRING ids carry the top bit: ids are per (pid, producer) and the CUPTI
 * library, the other in-process producer, numbers its names from 1 with the bit clear. */
#define ANNOTATE_ID_BIT (1ull << 63)

struct tstate {
	__u32 tid;
	__u32 depth; /* open ranges, also beyond NAME_STACK */
	__u32 used; /* bytes of batch in use */
	__u32 unbalanced; /* pops without a push, ignored */
	bool flushed; /* a batch of it went out: its first one goes at once (annotate) */
	__u64 first_ns; /* when the oldest record in batch was taken */
	const char *names[NAME_STACK];
	__u64 sent_ids[STRING_CACHE]; /* direct-mapped by id */
	_Alignas(8) unsigned char batch[BATCH_BYTES];
};

struct callback {
	xpu_annotate_fn fn; /* NULL: free slot */
	void *ctx;
};

/* Read on every call: a session is attached or a callback is registered. Relaxed atomics
 * throughout: it only gates work, it publishes no data (the callbacks' slots have their own
 * release/acquire pair below). */
static int active;
static int enabled; /* a session is attached: ring and sock are valid */
static __u32 self_pid;
static int sock = -1;
static struct ring *ring;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER; /* the ring's one producer */
static pthread_key_t tstate_key;
static bool key_ok;

static pthread_mutex_t callbacks_lock = PTHREAD_MUTEX_INITIALIZER; /* writers only */
static struct callback callbacks[MAX_CALLBACKS];
static unsigned int n_callbacks; /* slots in use; readers scan all when it is non-zero */

/* initial-exec: one pointer, read on every call; the batch itself is on the heap so the
 * static TLS a dlopen()ed copy needs stays tiny. */
static __thread struct tstate *tls __attribute__((tls_model("initial-exec")));

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void update_active(void)
{
	__atomic_store_n(&active,
			 __atomic_load_n(&enabled, __ATOMIC_RELAXED) ||
				 __atomic_load_n(&n_callbacks, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

/* Move the thread's batch into the ring and publish it. Records that do not fit are dropped
 * and counted by the ring, which writes the LOSS record itself once there is room. */
static void batch__flush(struct tstate *t)
{
	__u32 off = 0, size;

	if (!t->used)
		return;
	if (__atomic_load_n(&enabled, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&ring_lock);
		while (off < t->used) {
			size = ((const struct xpu_rec *)(t->batch + off))->size;
			ring__write(ring, t->batch + off, size);
			off += size;
		}
		ring__flush(ring);
		pthread_mutex_unlock(&ring_lock);
	}
	t->used = 0;
}

static void tstate__free(void *arg)
{
	struct tstate *t = arg;

	batch__flush(t);
	if (tls == t)
		tls = NULL;
	free(t);
}

static struct tstate *tstate__get(void)
{
	struct tstate *t = tls;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = (__u32)gettid();
	if (key_ok)
		pthread_setspecific(tstate_key, t); /* flushed and freed when the thread ends */
	tls = t;
	return t;
}

/* Room for size more bytes in the batch, flushing it first when needed. */
static unsigned char *batch__room(struct tstate *t, __u32 size, __u64 ts)
{
	unsigned char *p;

	if (t->used + size > BATCH_BYTES)
		batch__flush(t);
	if (!t->used)
		t->first_ns = ts;
	p = t->batch + t->used;
	t->used += size;
	return p;
}

static void record_range(struct tstate *t, __u32 phase, const char *name, __u64 ts)
{
	size_t len = phase == XPU_RANGE_POP || !name ? 0 : strnlen(name, XPU_RANGE_NAME_MAX);
	__u32 size = xpu_range__size((__u32)len);
	unsigned char *p = batch__room(t, size, ts);

	xpu_range__build(p, size, ts, self_pid, t->tid, phase, 0, 0, 0, name, len);
}

static __u64 name_id(const char *name)
{
	return xpu_hash_bytes(name, strnlen(name, XPU_STRING_MAX)) | ANNOTATE_ID_BIT;
}

static void record_counter(struct tstate *t, const char *name, __s64 value, __u64 ts)
{
	__u64 id = name_id(name);
	__u64 *sent = &t->sent_ids[id % STRING_CACHE];
	struct xpu_pmu_counter *c;

	/* The name goes first, once per thread while it stays in the cache: a STRING sent
	 * twice only rewrites the same (pid, id) entry. */
	if (*sent != id) {
		size_t len = strnlen(name, XPU_STRING_MAX);
		__u32 size = xpu_string__size((__u32)len);

		if (size > BATCH_BYTES)
			return;
		xpu_string__build(batch__room(t, size, ts), size, ts, self_pid, t->tid, id,
				  XPU_STR_COUNTER, name, len);
		*sent = id;
	}
	c = (struct xpu_pmu_counter *)batch__room(t, sizeof(*c), ts);
	xpu_rec__init(c, XPU_REC_PMU_COUNTER, sizeof(*c), ts, self_pid, t->tid);
	c->counter_id = id;
	c->value = (__u64)value;
	c->time_enabled = 1; /* a sampled value is never multiplexed: scale 1 */
	c->time_running = 1;
	c->cpu = XPU_PMU_NO_CPU;
	c->scope = XPU_PMU_SCOPE_THREAD;
}

static void call_back(int phase, const char *name, __s64 value, __u64 ts, __u32 tid)
{
	xpu_annotate_fn fn;
	unsigned int i;

	for (i = 0; i < MAX_CALLBACKS; i++) {
		/* pairs with the release store in xpu_annotate_add_callback: ctx is set */
		fn = __atomic_load_n(&callbacks[i].fn, __ATOMIC_ACQUIRE);
		if (fn)
			fn(phase, name, value, ts, tid, callbacks[i].ctx);
	}
}

/* The slow path of every entry point: only taken while active. */
static void annotate(int phase, const char *name, __s64 value)
{
	struct tstate *t = tstate__get();
	__u64 ts = now_ns();

	if (!t)
		return;
	if (!name && phase != XPU_ANNOTATE_POP)
		name = "";
	if (phase == XPU_ANNOTATE_PUSH) {
		if (t->depth < NAME_STACK)
			t->names[t->depth] = name;
		t->depth++;
	} else if (phase == XPU_ANNOTATE_POP) {
		if (!t->depth) {
			t->unbalanced++;
			return;
		}
		t->depth--;
		name = t->depth < NAME_STACK ? t->names[t->depth] : NULL;
	}
	if (__atomic_load_n(&n_callbacks, __ATOMIC_RELAXED))
		call_back(phase, name, value, ts, t->tid);
	if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED))
		return;
	if (phase == XPU_ANNOTATE_COUNTER)
		record_counter(t, name, value, ts);
	else
		record_range(t, (__u32)phase, name, ts);
	/* A thread's first record goes out at once: the correlator then knows its process has
	 * ranges and holds its CPU samples until its range records reach their time (they
	 * come a batch late); samples that came before would miss the ranges around them. */
	if (!t->depth || ts - t->first_ns > BATCH_AGE_NS || !t->flushed) {
		t->flushed = true;
		batch__flush(t);
	}
}

void xpu_range_push(const char *name)
{
	if (__atomic_load_n(&active, __ATOMIC_RELAXED))
		annotate(XPU_ANNOTATE_PUSH, name, 0);
}

void xpu_range_pop(void)
{
	if (__atomic_load_n(&active, __ATOMIC_RELAXED))
		annotate(XPU_ANNOTATE_POP, NULL, 0);
}

void xpu_mark(const char *name)
{
	if (__atomic_load_n(&active, __ATOMIC_RELAXED))
		annotate(XPU_ANNOTATE_MARK, name, 0);
}

void xpu_counter(const char *name, int64_t value)
{
	if (__atomic_load_n(&active, __ATOMIC_RELAXED))
		annotate(XPU_ANNOTATE_COUNTER, name, value);
}

int xpu_annotate_enabled(void)
{
	return __atomic_load_n(&enabled, __ATOMIC_RELAXED);
}

uint64_t xpu_annotate_dropped(void)
{
	struct ring_stats st;

	if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED))
		return 0;
	ring__stats(ring, &st);
	return st.lost_full + st.lost_too_big;
}

int xpu_annotate_add_callback(xpu_annotate_fn fn, void *ctx)
{
	int i, free_slot = -1, err = 0;

	if (!fn)
		return -EINVAL;
	pthread_mutex_lock(&callbacks_lock);
	for (i = 0; i < MAX_CALLBACKS; i++) {
		if (callbacks[i].fn == fn && callbacks[i].ctx == ctx) {
			err = -EEXIST;
			goto out;
		}
		if (!callbacks[i].fn && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		err = -ENOSPC;
		goto out;
	}
	callbacks[free_slot].ctx = ctx;
	/* pairs with the acquire load in call_back: a reader that sees fn sees its ctx */
	__atomic_store_n(&callbacks[free_slot].fn, fn, __ATOMIC_RELEASE);
	__atomic_store_n(&n_callbacks, n_callbacks + 1, __ATOMIC_RELAXED);
	update_active();
out:
	pthread_mutex_unlock(&callbacks_lock);
	return err;
}

int xpu_annotate_remove_callback(xpu_annotate_fn fn, void *ctx)
{
	int i, err = -ENOENT;

	pthread_mutex_lock(&callbacks_lock);
	for (i = 0; i < MAX_CALLBACKS; i++) {
		if (callbacks[i].fn != fn || callbacks[i].ctx != ctx || !fn)
			continue;
		/* ctx stays as it was: a reader that loaded fn just before may still use it */
		__atomic_store_n(&callbacks[i].fn, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&n_callbacks, n_callbacks - 1, __ATOMIC_RELAXED);
		update_active();
		err = 0;
		break;
	}
	pthread_mutex_unlock(&callbacks_lock);
	return err;
}

/* exit(): the exiting thread's batch; other threads' batches are theirs to touch. */
static void annotate_at_exit(void)
{
	if (tls)
		batch__flush(tls);
}

/* A child forked without exec must not produce into its parent's ring (one producer per
 * ring). It keeps its callbacks; the batch it inherited is the parent's to send. */
static void annotate_at_fork_child(void)
{
	__atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
	update_active();
	self_pid = (__u32)getpid();
	if (tls) {
		tls->used = 0;
		tls->tid = (__u32)gettid();
	}
}

/*
 * At load, once per process: find the session, or say once why there is none. A constructor
 * rather than a check on first use, so the calls themselves never test for "initialised".
 */
__attribute__((constructor)) static void annotate_init(void)
{
	char why[256];
	int err;

	key_ok = !pthread_key_create(&tstate_key, tstate__free);
	self_pid = (__u32)getpid();
	err = inproc__connect(XPU_INPROC_ANNOTATE, XPU_INPROC_TIMEOUT_MS, &sock, &ring, NULL, why,
			      sizeof(why));
	if (err) {
		fprintf(stderr, "xpusup: annotations off: %s\n", why);
		return;
	}
	atexit(annotate_at_exit);
	pthread_atfork(NULL, NULL, annotate_at_fork_child);
	__atomic_store_n(&enabled, 1, __ATOMIC_RELAXED);
	update_active();
}
