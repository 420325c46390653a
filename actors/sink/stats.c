// SPDX-License-Identifier: MIT
/*
 * The statistics format (kind stats): stats.json for programs, stats.txt for people
 * (docs/stats.md says what every field means).
 *
 *	cpu            CPU samples: their count and sampled time (the sum of their weights),
 *		       processes and threads seen, the top processes, and the hottest functions
 *		       by self time (the innermost frame) and by total time (every distinct
 *		       function on the stack, once per sample)
 *	kernels        per kernel name: count, total, mean, min, max and p50/p95/p99 of the
 *		       duration from a quantile sketch (sketch.h: within 1 %, bounded memory)
 *	memcpy         per copy kind (HtoD, DtoH, ...): count, bytes, time, bandwidth
 *	memset         count, bytes, time
 *	queue_delay    kernel start minus the start of the CUDA API call that launched it (the
 *		       kernel's launched_by link), in the same sketch
 *	correlation    GPU records by how the correlator joined them, and how sure it was
 *	losses         LOSS records by cause and stage, and the sequence gaps of the batches
 *		       this sink received
 *	sm_active      per device and per process, the merged kernel time over the run and
 *		       per window (sm_active.h, seed 002)
 *	counters       PMU counter readings: per counter name, system-wide (summed over CPUs)
 *		       and for the top processes, the scaled total, its rate, how much of the
 *		       time it really counted (multiplexing) and the ratios derived from pairs
 *		       (IPC, miss rates, faults and switches per second); and per kernel name
 *		       the mean IPC and instructions the correlator attached to its runs
 *
 * Everything is accumulated in memory, in bounded space, and written whole at stop through
 * out.h (a complete file or the previous one, never half of one). With interval_s = N the
 * sink also, every N seconds, appends that interval's statistics as one JSON line to
 * stats.intervals.jsonl and rewrites stats.json and stats.txt with the totals so far: events
 * are counted into an interval's accumulators, which are merged into the run's at the end of
 * the interval (the sketches merge exactly).
 *
 * A restarted stats sink (kill -9) starts over: its statistics are in memory only, and the
 * sink counts what the killed run had received as state_lost (tick never says
 * FMT_COMPLETE). The intervals file keeps the killed run's lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/sink/clock_sync.h"
#include "actors/sink/fmt.h"
#include "actors/sink/out.h"
#include "actors/sink/sink.h"
#include "actors/sink/sink_options.h"
#include "actors/sink/sketch.h"
#include "actors/sink/sm_active.h"
#include "common/config.h"
#include "common/mix.h"
#include "common/status.h"
#include "xpusup/event.h"

#define STATS_PATH_MAX 4096
#define STATS_VERSION 1
#define COPY_OTHER 11 /* enum xpu_copy_kind ends at 10; later kinds are counted here */
#define COPY_SLOTS 12
#define LAUNCH_MAP_MAX (1u << 16) /* launch-side events remembered for the queue delay */
#define LAUNCH_SLOTS (2 * LAUNCH_MAP_MAX)
#define TEXT_ROWS_MAX 50 /* kernels, devices, processes shown in stats.txt */
#define PENDING_MAX (16u << 20) /* interval lines held while their file cannot be written */
#define CPU_FUNCTIONS_MAX (1u << 16) /* functions kept apart; frames of others go to "(other)" */
#define CPU_NAME_BYTES_MAX (64u << 20) /* the bytes of their names, all together */
#define CPU_PROCESSES_MAX (1u << 16) /* processes kept apart; samples of others: "(other)" */
#define CPU_THREADS_MAX (1u << 18) /* threads counted; samples of others are only counted */
#define CPU_TOP_PROCESSES 10
#define CPU_TOP_FUNCTIONS 20
#define HEX_FRAME_MAX 19 /* "0x" and 16 hex digits: a frame without a name */
#define CTR_NAMES_MAX 256 /* counter names kept apart; readings of others are only counted */
#define CTR_GROUPS_MAX 8192 /* (name, process or system) pairs kept apart, the same */
#define CTR_TOP_PROCESSES 10
#define CTR_SYSTEM UINT32_MAX /* the owner of system-wide (CPU-scope) readings */

static const char *const copy_names[COPY_SLOTS] = {
	"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	"AtoD",	   "DtoA", "DtoD", "HtoH", "PtoP", "other",
};

/* ---- accumulators -------------------------------------------------------------------- */

struct volume {
	__u64 count, bytes, ns;
};

/* CPU samples over a period (of a process, a function, all): how many, and their weights. */
struct cpu_time {
	__u64 samples, ns;
};

/* What is counted over a period: one interval (cur), or the run (the intervals merged).
 * Per-kernel sketches live in the kernel table, one for each period. */
struct period {
	__u64 first_ns, last_ns; /* event time; first_ns 0: no event yet */
	__u64 batches, events;
	__u64 by_kind[XPU_REC_TYPE_MAX];
	__u64 kernels, kernel_ns;
	struct volume copy[COPY_SLOTS];
	struct volume memset;
	struct sketch queue;
	__u64 queue_unresolved, queue_negative;
	__u64 gpu_by_type[XPU_CORR_TYPE_MAX];
	double conf_by_type[XPU_CORR_TYPE_MAX];
	__u64 gpu_with_stack;
	__u64 loss_records;
	__u64 lost_by_cause[XPU_LOSS_CAUSE_MAX]; /* [0]: a cause this build does not know */
	__u64 missed, rewinds;
	struct cpu_time cpu; /* CPU_SAMPLE events and the sum of their weights */
	__u64 cpu_no_stack; /* samples without frames (none taken, or no room to decode them) */
};

/* The counters the correlator attached to a kernel name's runs, over a period. */
struct kctr {
	__u64 runs; /* runs with counters */
	__u64 estimated; /* of which extrapolated past the readings */
	__u64 ipc_runs, insn_runs; /* runs with an IPC, with instructions */
	double ipc_sum, insn_sum;
};

struct kstat {
	char *name; /* NULL: a kernel without a name */
	__u32 len;
	__u64 hash;
	struct sketch run, cur;
	struct kctr ctr_run, ctr_cur;
};

/* Recent CUDA_API and LAUNCH events by (producer, id): linear probing, the oldest entry
 * evicted first (a FIFO of keys), deletion by backward shift so probes stay short. */
struct launch_slot {
	__u64 id, ts;
	__u32 producer;
	__u16 kind;
	__u16 used;
};

struct launch_key {
	__u64 id;
	__u32 producer;
};

struct launch_map {
	struct launch_slot *slots;
	struct launch_key *fifo;
	__u32 head, n;
	__u64 evicted;
};

struct cpu_fn_time {
	struct cpu_time self; /* samples in which it was the innermost frame */
	struct cpu_time total; /* samples with it anywhere on the stack, each once */
};

/* A function, keyed by what the report shows for it: its name as the event gave it, or the
 * frame's address in hex when it had none (as the folded format writes frames), and whether
 * it is a kernel frame (shown with folded's "_[k]" suffix). */
struct cpu_fn {
	char *name; /* NUL-terminated, a copy: the event's names die with its batch */
	__u32 len;
	bool kernel;
	__u64 hash;
	__u64 last_sample; /* the sample that last added to total: recursion counts once */
	struct cpu_fn_time run, cur;
};

struct cpu_proc {
	__u32 pid;
	bool used;
	char comm[XPU_COMM_LEN + 1];
	__u64 comm_ts; /* the comm is the latest sample's, so it does not depend on the order
			* the shards' batches came in (exec renames a process) */
	struct cpu_time run, cur;
};

struct cpu_thread {
	__u64 key; /* pid << 32 | tid: replayed and simulated pids may reuse tids */
	bool used, run, cur; /* seen in the run (merged intervals), in this interval */
};

/* The CPU section's tables. Open addressing, at most half full, grown by doubling: a
 * CPU-only or GPU-only run pays for what it sees. */
struct cpu {
	struct cpu_fn **fns; /* fn_mask + 1 pointers; the entries do not move */
	__u32 fn_mask, n_fns, max_fns;
	size_t name_bytes;
	struct cpu_fn other; /* functions past max_fns or CPU_NAME_BYTES_MAX */
	__u64 frames_over; /* frames counted under other */
	__u64 serial; /* samples with frames so far: cpu_fn.last_sample's clock */

	struct cpu_proc *procs; /* proc_mask + 1 slots; they move when the table grows */
	__u32 proc_mask, n_procs;
	struct cpu_proc other_proc; /* processes past CPU_PROCESSES_MAX */

	struct cpu_thread *threads;
	__u32 thread_mask, n_threads;
	__u64 threads_over; /* samples of threads past CPU_THREADS_MAX: not in the counts */
};

/* PMU readings of one counter name, of one process or of the whole system, over a period. */
struct ctr_acc {
	__u64 readings;
	__u64 counted; /* readings of a counter that ran (scale > 0) */
	double total; /* the sum of their deltas, each times its scale */
	double running_sum, running_min; /* time_running / time_enabled of the counted ones */
};

struct ctr_group {
	__u32 name; /* index + 1 in counters.names; 0: an empty slot */
	__u32 owner; /* the pid, or CTR_SYSTEM */
	struct ctr_acc run, cur;
};

struct ctr_name {
	char *name; /* a copy; NULL with len 0: readings without a name */
	__u32 len;
	__u64 hash;
};

/* The counters section's tables: names in order of arrival (at most CTR_NAMES_MAX), groups
 * by (name, owner) in an open-addressing table made at the first reading (at most
 * CTR_GROUPS_MAX, at most half full). */
struct counters {
	struct ctr_name names[CTR_NAMES_MAX];
	__u32 n_names;
	struct ctr_group *groups; /* 2 * CTR_GROUPS_MAX slots */
	__u32 n_groups;
	__u64 over; /* readings past either limit: in no group */
};

/* A growable text buffer: a JSON document or a report is built here, then written. */
struct text {
	char *p;
	size_t len, cap;
	bool failed; /* out of memory: the text is incomplete and is not written */
};

struct stats {
	const struct xpu_status_block *status; /* NULL outside a session */
	char path[STATS_PATH_MAX];
	char text[STATS_PATH_MAX]; /* "" for none */
	char intervals[STATS_PATH_MAX];
	__u64 interval_ns, window_ns, lateness_ns;
	__u32 max_kernels;

	struct period run, cur;
	struct kstat **slots; /* mask + 1 pointers */
	struct kstat **kernels; /* the n_kernels made, in order of arrival */
	__u32 mask, n_kernels;
	struct kstat other; /* kernels past max_kernels */
	__u64 other_names; /* arrivals that went to other */

	struct launch_map launches;
	struct cpu cpu;
	struct counters ctr;
	struct sm_active *sm;
	struct xpu_wire_seq seq;
	struct sink_clocks clocks; /* a model per other clock, from the CLOCK_SYNC events */

	__u64 interval_start, last_interval, n_intervals;
	__u64 next_window; /* ordinal of the first window not yet in an interval line */
	struct text pending; /* interval lines not written yet */
	bool intervals_opened;
	__u64 lines_dropped;
	__u64 writes, gpu_records, sketch_nomem;
};

static const char *const counter_names[] = { "kernel_names",	 "gpu_records",
					     "queue_unresolved", "sm_windows_closed",
					     "sm_late_kernels",	 "files_written",
					     "cpu_samples",	 "cpu_functions" };

/* ---- text ---------------------------------------------------------------------------- */

static void text_reserve(struct text *t, size_t more)
{
	size_t cap;
	char *p;

	if (t->failed || t->len + more + 1 <= t->cap)
		return;
	for (cap = t->cap ? t->cap : 4096; cap < t->len + more + 1; cap *= 2)
		;
	p = realloc(t->p, cap);
	if (!p) {
		t->failed = true;
		return;
	}
	t->p = p;
	t->cap = cap;
}

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	text_reserve(t, (size_t)n);
	if (t->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

static void put_bytes(struct text *t, const void *data, size_t n)
{
	text_reserve(t, n);
	if (t->failed)
		return;
	memcpy(t->p + t->len, data, n);
	t->len += n;
	t->p[t->len] = 0;
}

static void text_free(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* no overlong forms */
	else if (s[0] == 0xed)
		hi = 0x9f; /* no surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f; /* nothing past U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* A name's characters inside a JSON string. Names are bytes (docs/wire.md): well-formed
 * UTF-8 is kept, and any other byte is written as the code point of the same value (Latin-1),
 * so the file is always valid JSON and no byte is silently lost. */
static void put_json_chars(struct text *t, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, len;

	while (i < n) {
		if (u[i] == '"' || u[i] == '\\') {
			put(t, "\\%c", u[i]);
			i++;
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			put(t, "\\u%04x", u[i]);
			i++;
		} else if (u[i] < 0x80) {
			for (len = 1; i + len < n && u[i + len] >= 0x20 && u[i + len] < 0x7f &&
				      u[i + len] != '"' && u[i + len] != '\\';
			     len++)
				;
			put_bytes(t, u + i, len);
			i += len;
		} else if ((len = utf8_len(u + i, n - i))) {
			put_bytes(t, u + i, len);
			i += len;
		} else {
			put(t, "\\u%04x", u[i]);
			i++;
		}
	}
}

/* A name as a JSON string. */
static void put_json_str(struct text *t, const char *s, size_t n)
{
	put_bytes(t, "\"", 1);
	put_json_chars(t, s, n);
	put_bytes(t, "\"", 1);
}

/* ---- launch map ---------------------------------------------------------------------- */

static __u32 launch_home(__u32 producer, __u64 id)
{
	return (__u32)xpu_mix64(id ^ ((__u64)producer << 48)) & (LAUNCH_SLOTS - 1);
}

static struct launch_slot *launch_find(struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 i = launch_home(producer, id);

	for (; m->slots[i].used; i = (i + 1) & (LAUNCH_SLOTS - 1))
		if (m->slots[i].id == id && m->slots[i].producer == producer)
			return &m->slots[i];
	return NULL;
}

static void launch_delete(struct launch_map *m, struct launch_slot *slot)
{
	__u32 i = (__u32)(slot - m->slots), j = i, home;

	m->slots[i].used = 0;
	for (;;) {
		j = (j + 1) & (LAUNCH_SLOTS - 1);
		if (!m->slots[j].used)
			return;
		home = launch_home(m->slots[j].producer, m->slots[j].id);
		/* the entry at j may move into the hole at i unless its home lies in (i, j] */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			m->slots[i] = m->slots[j];
			m->slots[j].used = 0;
			i = j;
		}
	}
}

static void launch_put(struct launch_map *m, __u32 producer, __u64 id, __u64 ts, __u16 kind)
{
	struct launch_slot *s = launch_find(m, producer, id);
	struct launch_key old;
	__u32 i;

	if (s) { /* a batch delivered twice: the same event again */
		s->ts = ts;
		s->kind = kind;
		return;
	}
	if (m->n == LAUNCH_MAP_MAX) {
		old = m->fifo[m->head];
		m->head = (m->head + 1) % LAUNCH_MAP_MAX;
		m->n--;
		m->evicted++;
		s = launch_find(m, old.producer, old.id);
		if (s)
			launch_delete(m, s);
	}
	m->fifo[(m->head + m->n++) % LAUNCH_MAP_MAX] = (struct launch_key){ id, producer };
	for (i = launch_home(producer, id); m->slots[i].used; i = (i + 1) & (LAUNCH_SLOTS - 1))
		;
	m->slots[i] = (struct launch_slot){
		.id = id, .ts = ts, .producer = producer, .kind = kind, .used = 1
	};
}

/* ---- counting ------------------------------------------------------------------------ */

static __u64 hash_name(const char *name, __u32 len)
{
	__u64 h = 0xcbf29ce484222325ull;
	__u32 i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	return h;
}

/* The kernel's entry: found, made, or the shared one past max_kernels. */
static struct kstat *kernel_of(struct stats *st, const char *name, __u32 len)
{
	__u64 h = hash_name(name, len);
	__u32 i = (__u32)h & st->mask;
	struct kstat *k;

	for (; (k = st->slots[i]); i = (i + 1) & st->mask)
		if (k->hash == h && k->len == len && (!len || !memcmp(k->name, name, len)))
			return k;
	if (st->n_kernels == st->max_kernels)
		goto other;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto other;
	if (len) {
		k->name = malloc(len);
		if (!k->name) {
			free(k);
			goto other;
		}
		memcpy(k->name, name, len);
	}
	k->len = len;
	k->hash = h;
	sketch__init(&k->run);
	sketch__init(&k->cur);
	st->slots[i] = k;
	st->kernels[st->n_kernels++] = k;
	return k;
other:
	st->other_names++;
	return &st->other;
}

static void note_time(struct period *p, __u64 ts, __u64 end)
{
	if (ts && (!p->first_ns || ts < p->first_ns))
		p->first_ns = ts;
	if (end < ts)
		end = ts;
	if (end > p->last_ns)
		p->last_ns = end;
}

static __u64 duration(const struct xpu_cevent *e)
{
	return e->end_ns > e->ts_ns ? e->end_ns - e->ts_ns : 0;
}

static void gpu_record(struct stats *st, const struct xpu_cevent *e)
{
	struct period *p = &st->cur;
	__u32 t = e->corr_type < XPU_CORR_TYPE_MAX ? e->corr_type : XPU_CORR_NONE;

	st->gpu_records++;
	p->gpu_by_type[t]++;
	p->conf_by_type[t] += e->confidence;
	p->gpu_with_stack += e->n_user > 0;
}

/* Queue delay: from the start of the CUDA API call that launched the kernel (the LAUNCH
 * marker, inside that call, when the API record is not known) to the kernel's start. */
static void queue_delay(struct stats *st, __u32 producer, const struct xpu_cevent *e)
{
	struct launch_slot *s, *api = NULL, *marker = NULL;
	struct period *p = &st->cur;
	__u32 i;

	for (i = 0; i < e->n_links && i < XPU_WIRE_LINKS_MAX; i++) {
		if (e->links[i].type != XPU_LINK_LAUNCHED_BY)
			continue;
		s = launch_find(&st->launches, producer, e->links[i].target);
		if (s && s->kind == XPU_REC_CUDA_API)
			api = s;
		else if (s)
			marker = s;
	}
	if (!api)
		api = marker;
	if (!api) {
		p->queue_unresolved++;
		return;
	}
	if (e->ts_ns < api->ts) { /* clocks or a wrong time join: not a delay */
		p->queue_negative++;
		return;
	}
	if (sketch__add(&p->queue, e->ts_ns - api->ts))
		st->sketch_nomem++;
}

/* ---- counters ------------------------------------------------------------------------ */

/* "cycles:u" counts cycles: the part of a name before ':' says what it counts. */
static bool ctr_is(const char *name, __u32 len, const char *what)
{
	const char *colon = memchr(name, ':', len);
	size_t n = colon ? (size_t)(colon - name) : len;

	return n == strlen(what) && !memcmp(name, what, n);
}

/* The index + 1 of a counter name, made when new; 0 past CTR_NAMES_MAX or without memory. */
static __u32 ctr_name_of(struct counters *c, const char *name, __u32 len)
{
	__u64 h = hash_name(name, len);
	__u32 i;

	for (i = 0; i < c->n_names; i++)
		if (c->names[i].hash == h && c->names[i].len == len &&
		    (!len || !memcmp(c->names[i].name, name, len)))
			return i + 1;
	if (c->n_names == CTR_NAMES_MAX)
		return 0;
	if (len) {
		c->names[i].name = malloc(len);
		if (!c->names[i].name)
			return 0;
		memcpy(c->names[i].name, name, len);
	}
	c->names[i].len = len;
	c->names[i].hash = h;
	c->n_names++;
	return i + 1;
}

static __u32 ctr_home(__u32 name, __u32 owner)
{
	return (__u32)xpu_mix64((__u64)name << 32 | owner) & (2 * CTR_GROUPS_MAX - 1);
}

/* The group of (name, owner): found, made (create), or NULL. */
static struct ctr_group *ctr_group_of(struct counters *c, __u32 name, __u32 owner, bool create)
{
	__u32 i;

	if (!c->groups)
		return NULL;
	for (i = ctr_home(name, owner);; i = (i + 1) & (2 * CTR_GROUPS_MAX - 1)) {
		struct ctr_group *g = &c->groups[i];

		if (g->name == name && g->owner == owner)
			return g;
		if (!g->name) {
			if (!create || c->n_groups == CTR_GROUPS_MAX)
				return NULL;
			g->name = name;
			g->owner = owner;
			c->n_groups++;
			return g;
		}
	}
}

/* A PMU reading: its scaled delta to its counter, system-wide (CPU scope) or its process's
 * (process and thread scope). */
static void pmu_reading(struct stats *st, const struct xpu_cevent *e)
{
	struct counters *c = &st->ctr;
	struct ctr_group *g = NULL;
	struct ctr_acc *a;
	__u32 name;
	double ratio;

	if (!c->groups)
		c->groups = calloc(2 * CTR_GROUPS_MAX, sizeof(*c->groups));
	name = ctr_name_of(c, e->name, e->name_len);
	if (name)
		g = ctr_group_of(c, name, e->sub_kind == XPU_PMU_SCOPE_CPU ? CTR_SYSTEM : e->pid,
				 true);
	if (!g) {
		c->over++;
		return;
	}
	a = &g->cur;
	a->readings++;
	/* scale 0: the counter never ran, its value says nothing (docs/wire.md) */
	if (!(e->scale > 0) || !isfinite(e->scale) || !isfinite((double)e->delta * e->scale))
		return;
	ratio = e->scale >= 1 ? 1 / e->scale : 1;
	if (!a->counted || ratio < a->running_min)
		a->running_min = ratio;
	a->running_sum += ratio;
	a->total += (double)e->delta * e->scale;
	a->counted++;
}

/* The counters the correlator attached to a kernel run, to its name's means. */
static void kernel_counters(struct kstat *k, const struct xpu_cevent *e)
{
	__u32 i;

	if (!e->n_counters)
		return;
	k->ctr_cur.runs++;
	k->ctr_cur.estimated += !!(e->counter_flags & XPU_COUNTERS_F_ESTIMATED);
	if (e->ipc > 0 && isfinite(e->ipc)) {
		k->ctr_cur.ipc_runs++;
		k->ctr_cur.ipc_sum += e->ipc;
	}
	for (i = 0; i < e->n_counters && i < XPU_WIRE_COUNTERS_MAX; i++) {
		if (!ctr_is(e->counters[i].name, e->counters[i].name_len, "instructions"))
			continue;
		k->ctr_cur.insn_runs++;
		k->ctr_cur.insn_sum += e->counters[i].delta;
		break;
	}
}

static void kernel(struct stats *st, __u32 producer, const struct xpu_cevent *e)
{
	struct kstat *k = kernel_of(st, e->name, e->name_len);
	__u64 d = duration(e);

	st->cur.kernels++;
	st->cur.kernel_ns += d;
	if (sketch__add(&k->cur, d))
		st->sketch_nomem++;
	kernel_counters(k, e);
	queue_delay(st, producer, e);
	if (d) {
		/* errors are counted inside: the statistic goes on without that interval */
		sm_active__add(st->sm, SM_DEVICE(e->device), e->ts_ns, e->end_ns);
		sm_active__add(st->sm, SM_PROCESS(e->pid), e->ts_ns, e->end_ns);
	}
}

/* ---- CPU samples --------------------------------------------------------------------- */

/* Room for one more function: the pointer table grown so it stays at most half full. 0 or
 * -ENOMEM (the table as it was). */
static int cpu__grow_functions(struct cpu *c)
{
	__u32 cap = c->fns ? c->fn_mask + 1 : 0, grown_cap = cap ? 2 * cap : 1024, i, j;
	struct cpu_fn **grown;

	if (2 * (c->n_fns + 1) <= cap)
		return 0;
	grown = calloc(grown_cap, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	for (i = 0; i < cap; i++) {
		if (!c->fns[i])
			continue;
		for (j = (__u32)xpu_mix64(c->fns[i]->hash) & (grown_cap - 1); grown[j];
		     j = (j + 1) & (grown_cap - 1))
			;
		grown[j] = c->fns[i];
	}
	free(c->fns);
	c->fns = grown;
	c->fn_mask = grown_cap - 1;
	return 0;
}

/* The function named name (len bytes, not NUL-terminated), kernel side or not: found, made
 * (with a copy of the name), or the shared "(other)" past the limits. */
static struct cpu_fn *cpu__function(struct cpu *c, const char *name, __u32 len, bool kernel)
{
	__u64 h = hash_name(name, len) ^ (kernel ? 0x9e3779b97f4a7c15ull : 0);
	struct cpu_fn *f;
	__u32 i;

	for (i = (__u32)xpu_mix64(h) & c->fn_mask; c->fns && (f = c->fns[i]);
	     i = (i + 1) & c->fn_mask)
		if (f->hash == h && f->len == len && f->kernel == kernel &&
		    !memcmp(f->name, name, len))
			return f;
	if (c->n_fns >= c->max_fns || c->name_bytes + len + 1 > CPU_NAME_BYTES_MAX ||
	    cpu__grow_functions(c))
		goto other;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto other;
	f->name = malloc(len + 1);
	if (!f->name)
		goto free_fn;
	memcpy(f->name, name, len);
	f->name[len] = 0;
	f->len = len;
	f->kernel = kernel;
	f->hash = h;
	/* the table may have grown since the probe: probe again for the free slot */
	for (i = (__u32)xpu_mix64(h) & c->fn_mask; c->fns[i]; i = (i + 1) & c->fn_mask)
		;
	c->fns[i] = f;
	c->n_fns++;
	c->name_bytes += len + 1;
	return f;
free_fn:
	free(f);
other:
	c->frames_over++;
	return &c->other;
}

/* Frame k of e's stack as a function: its name when the event has one, else its address in
 * hex, the text the folded format writes for it (hex has room for HEX_FRAME_MAX + 1). */
static struct cpu_fn *cpu__frame(struct cpu *c, const struct xpu_cevent *e, __u32 k, char *hex)
{
	const char *name = e->frames ? e->frames[k] : NULL;
	bool kernel = k < e->n_kernel; /* kernel frames come first */
	int n;

	if (name && name[0])
		return cpu__function(c, name, (__u32)strnlen(name, XPU_WIRE_FRAME_NAME_MAX),
				     kernel);
	n = snprintf(hex, HEX_FRAME_MAX + 1, "0x%" PRIx64, (uint64_t)e->stack[k]);
	return cpu__function(c, hex, (__u32)n, kernel);
}

/* The process's entry (found or made), or the shared one past CPU_PROCESSES_MAX. */
static struct cpu_proc *cpu__process(struct cpu *c, __u32 pid)
{
	__u32 cap = c->procs ? c->proc_mask + 1 : 0, grown_cap, i, j;
	struct cpu_proc *grown;

	for (i = (__u32)xpu_mix64(pid) & c->proc_mask; c->procs && c->procs[i].used;
	     i = (i + 1) & c->proc_mask)
		if (c->procs[i].pid == pid)
			return &c->procs[i];
	if (c->n_procs >= CPU_PROCESSES_MAX)
		return &c->other_proc;
	if (2 * (c->n_procs + 1) > cap) {
		grown_cap = cap ? 2 * cap : 64;
		grown = calloc(grown_cap, sizeof(*grown));
		if (!grown)
			return &c->other_proc;
		for (i = 0; i < cap; i++) {
			if (!c->procs[i].used)
				continue;
			for (j = (__u32)xpu_mix64(c->procs[i].pid) & (grown_cap - 1); grown[j].used;
			     j = (j + 1) & (grown_cap - 1))
				;
			grown[j] = c->procs[i];
		}
		free(c->procs);
		c->procs = grown;
		c->proc_mask = grown_cap - 1;
	}
	for (i = (__u32)xpu_mix64(pid) & c->proc_mask; c->procs[i].used; i = (i + 1) & c->proc_mask)
		;
	c->procs[i].used = true;
	c->procs[i].pid = pid;
	c->n_procs++;
	return &c->procs[i];
}

/* Mark the thread seen in this interval; past CPU_THREADS_MAX (or without memory) the
 * sample is counted in threads_over instead. */
static void cpu__thread(struct cpu *c, __u32 pid, __u32 tid)
{
	__u64 key = (__u64)pid << 32 | tid;
	__u32 cap = c->threads ? c->thread_mask + 1 : 0, grown_cap, i, j;
	struct cpu_thread *grown;

	for (i = (__u32)xpu_mix64(key) & c->thread_mask; c->threads && c->threads[i].used;
	     i = (i + 1) & c->thread_mask)
		if (c->threads[i].key == key) {
			c->threads[i].cur = true;
			return;
		}
	if (c->n_threads >= CPU_THREADS_MAX)
		goto over;
	if (2 * (c->n_threads + 1) > cap) {
		grown_cap = cap ? 2 * cap : 256;
		grown = calloc(grown_cap, sizeof(*grown));
		if (!grown)
			goto over;
		for (i = 0; i < cap; i++) {
			if (!c->threads[i].used)
				continue;
			for (j = (__u32)xpu_mix64(c->threads[i].key) & (grown_cap - 1);
			     grown[j].used; j = (j + 1) & (grown_cap - 1))
				;
			grown[j] = c->threads[i];
		}
		free(c->threads);
		c->threads = grown;
		c->thread_mask = grown_cap - 1;
	}
	for (i = (__u32)xpu_mix64(key) & c->thread_mask; c->threads[i].used;
	     i = (i + 1) & c->thread_mask)
		;
	c->threads[i] = (struct cpu_thread){ .key = key, .used = true, .cur = true };
	c->n_threads++;
	return;
over:
	c->threads_over++;
}

static void cpu_time__add(struct cpu_time *t, __u64 ns)
{
	t->samples++;
	t->ns += ns;
}

/* A CPU sample: its weight (value, ns) to its process, and to the function of its innermost
 * frame as self time and to every distinct function on its stack as total time. */
static void cpu_sample(struct stats *st, const struct xpu_cevent *e)
{
	__u32 n = e->stack ? (__u32)e->n_kernel + e->n_user : 0, k;
	struct cpu *c = &st->cpu;
	struct cpu_proc *proc;
	char hex[HEX_FRAME_MAX + 1];
	struct cpu_fn *f;

	cpu_time__add(&st->cur.cpu, e->value);
	proc = cpu__process(c, e->pid);
	cpu_time__add(&proc->cur, e->value);
	if (e->name_len && (!proc->comm[0] || e->ts_ns >= proc->comm_ts)) {
		k = e->name_len < XPU_COMM_LEN ? e->name_len : XPU_COMM_LEN;
		memcpy(proc->comm, e->name, k);
		proc->comm[k] = 0;
		proc->comm_ts = e->ts_ns;
	}
	cpu__thread(c, e->pid, e->tid);
	if (!n) {
		st->cur.cpu_no_stack++;
		return;
	}
	c->serial++;
	for (k = 0; k < n; k++) {
		f = cpu__frame(c, e, k, hex);
		if (!k)
			cpu_time__add(&f->cur.self, e->value);
		if (f->last_sample != c->serial) {
			f->last_sample = c->serial;
			cpu_time__add(&f->cur.total, e->value);
		}
	}
}

static void stats_batch(void *state, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct stats *st = state;
	struct period *p = &st->cur;
	struct volume *v;
	__u32 i;

	xpu_wire_seq__batch(&st->seq, b);
	p->batches++;
	p->events += b->n_events;
	for (i = 0; i < b->n_events; i++) {
		const struct xpu_cevent *e = &ev[i];

		if (e->kind < XPU_REC_TYPE_MAX)
			p->by_kind[e->kind]++;
		note_time(p, e->ts_ns, e->end_ns);
		switch (e->kind) {
		case XPU_REC_CUDA_API:
		case XPU_REC_LAUNCH:
			launch_put(&st->launches, b->producer, e->id, e->ts_ns, e->kind);
			break;
		case XPU_REC_GPU_KERNEL:
			gpu_record(st, e);
			kernel(st, b->producer, e);
			break;
		case XPU_REC_GPU_MEMCPY:
		case XPU_REC_GPU_MEMSET:
			gpu_record(st, e);
			v = e->kind == XPU_REC_GPU_MEMSET ? &p->memset :
			    e->sub_kind < COPY_OTHER	  ? &p->copy[e->sub_kind] :
							    &p->copy[COPY_OTHER];
			v->count++;
			v->bytes += e->bytes;
			v->ns += duration(e);
			break;
		case XPU_REC_GPU_SYNC:
			gpu_record(st, e);
			break;
		case XPU_REC_CPU_SAMPLE:
			cpu_sample(st, e);
			break;
		case XPU_REC_PMU_COUNTER:
			pmu_reading(st, e);
			break;
		case XPU_REC_CLOCK_SYNC:
			sink_clocks__add(&st->clocks, e); /* a bad bracket is counted there */
			break;
		case XPU_REC_LOSS:
			p->loss_records++;
			p->lost_by_cause[e->sub_kind < XPU_LOSS_CAUSE_MAX ? e->sub_kind : 0] +=
				e->value;
			break;
		default:
			break;
		}
	}
	sm_active__close(st->sm, false);
}

static void cpu_time__merge(struct cpu_time *run, struct cpu_time *cur)
{
	run->samples += cur->samples;
	run->ns += cur->ns;
	*cur = (struct cpu_time){ 0 };
}

static void cpu_fn__merge(struct cpu_fn *f)
{
	cpu_time__merge(&f->run.self, &f->cur.self);
	cpu_time__merge(&f->run.total, &f->cur.total);
}

/* The interval's CPU tables into the run's. */
static void cpu__merge(struct cpu *c)
{
	__u32 i;

	for (i = 0; c->fns && i <= c->fn_mask; i++)
		if (c->fns[i])
			cpu_fn__merge(c->fns[i]);
	cpu_fn__merge(&c->other);
	for (i = 0; c->procs && i <= c->proc_mask; i++)
		cpu_time__merge(&c->procs[i].run, &c->procs[i].cur);
	cpu_time__merge(&c->other_proc.run, &c->other_proc.cur);
	for (i = 0; c->threads && i <= c->thread_mask; i++) {
		c->threads[i].run |= c->threads[i].cur;
		c->threads[i].cur = false;
	}
}

static void kctr_merge(struct kctr *run, struct kctr *cur)
{
	run->runs += cur->runs;
	run->estimated += cur->estimated;
	run->ipc_runs += cur->ipc_runs;
	run->insn_runs += cur->insn_runs;
	run->ipc_sum += cur->ipc_sum;
	run->insn_sum += cur->insn_sum;
	*cur = (struct kctr){ 0 };
}

static void ctr_merge(struct counters *c)
{
	__u32 i;

	for (i = 0; c->groups && i < 2 * CTR_GROUPS_MAX; i++) {
		struct ctr_acc *r = &c->groups[i].run, *a = &c->groups[i].cur;

		if (!c->groups[i].name)
			continue;
		if (a->counted && (!r->counted || a->running_min < r->running_min))
			r->running_min = a->running_min;
		r->readings += a->readings;
		r->counted += a->counted;
		r->total += a->total;
		r->running_sum += a->running_sum;
		*a = (struct ctr_acc){ 0 };
	}
}

/* The interval's accumulators into the run's; the interval starts over. */
static void period_merge(struct stats *st)
{
	struct period *r = &st->run, *c = &st->cur;
	struct sketch queue;
	__u32 i;

	c->missed = st->seq.missed - r->missed;
	c->rewinds = st->seq.rewinds - r->rewinds;
	if (c->first_ns && (!r->first_ns || c->first_ns < r->first_ns))
		r->first_ns = c->first_ns;
	if (c->last_ns > r->last_ns)
		r->last_ns = c->last_ns;
	r->batches += c->batches;
	r->events += c->events;
	for (i = 0; i < XPU_REC_TYPE_MAX; i++)
		r->by_kind[i] += c->by_kind[i];
	r->kernels += c->kernels;
	r->kernel_ns += c->kernel_ns;
	for (i = 0; i < COPY_SLOTS; i++) {
		r->copy[i].count += c->copy[i].count;
		r->copy[i].bytes += c->copy[i].bytes;
		r->copy[i].ns += c->copy[i].ns;
	}
	r->memset.count += c->memset.count;
	r->memset.bytes += c->memset.bytes;
	r->memset.ns += c->memset.ns;
	if (sketch__merge(&r->queue, &c->queue))
		st->sketch_nomem++;
	r->queue_unresolved += c->queue_unresolved;
	r->queue_negative += c->queue_negative;
	for (i = 0; i < XPU_CORR_TYPE_MAX; i++) {
		r->gpu_by_type[i] += c->gpu_by_type[i];
		r->conf_by_type[i] += c->conf_by_type[i];
	}
	r->gpu_with_stack += c->gpu_with_stack;
	r->loss_records += c->loss_records;
	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		r->lost_by_cause[i] += c->lost_by_cause[i];
	r->missed += c->missed;
	r->rewinds += c->rewinds;
	r->cpu.samples += c->cpu.samples;
	r->cpu.ns += c->cpu.ns;
	r->cpu_no_stack += c->cpu_no_stack;
	cpu__merge(&st->cpu);
	for (i = 0; i < st->n_kernels; i++) {
		if (sketch__merge(&st->kernels[i]->run, &st->kernels[i]->cur))
			st->sketch_nomem++;
		sketch__reset(&st->kernels[i]->cur);
		kctr_merge(&st->kernels[i]->ctr_run, &st->kernels[i]->ctr_cur);
	}
	kctr_merge(&st->other.ctr_run, &st->other.ctr_cur);
	ctr_merge(&st->ctr);
	if (sketch__merge(&st->other.run, &st->other.cur))
		st->sketch_nomem++;
	sketch__reset(&st->other.cur);
	/* the interval starts over; its queue sketch keeps its buckets' memory */
	sketch__reset(&c->queue);
	queue = c->queue;
	memset(c, 0, sizeof(*c));
	c->queue = queue;
}

/* ---- JSON ---------------------------------------------------------------------------- */

static __u64 round_ns(double v)
{
	return (__u64)(v + 0.5);
}

static __u64 mean(__u64 sum, __u64 count)
{
	return count ? (sum + count / 2) / count : 0;
}

static double pct(__u64 part, __u64 whole)
{
	double v = whole ? 100.0 * (double)part / (double)whole : 0;

	return v > 100 ? 100 : v; /* seed 002: clamping errors never show as more than 100 % */
}

/* The sketch's summary as JSON members, after an opening brace the caller wrote. */
static void put_sketch(struct text *t, const struct sketch *s)
{
	put(t,
	    "\"count\": %" PRIu64 ", \"total_ns\": %" PRIu64 ", \"mean_ns\": %" PRIu64
	    ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
	    ", \"p95_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64,
	    (uint64_t)s->count, (uint64_t)s->sum, (uint64_t)mean(s->sum, s->count),
	    (uint64_t)(s->count ? s->min : 0), (uint64_t)(s->count ? s->max : 0),
	    (uint64_t)round_ns(sketch__quantile(s, 0.50)),
	    (uint64_t)round_ns(sketch__quantile(s, 0.95)),
	    (uint64_t)round_ns(sketch__quantile(s, 0.99)));
}

struct krow {
	const struct kstat *k;
	const struct sketch *s;
};

/* Most time first; then most launches; then by name, so equal rows keep one order. */
static int krow_cmp(const void *x, const void *y)
{
	const struct krow *a = x, *b = y;
	__u32 n;
	int c;

	if (a->s->sum != b->s->sum)
		return a->s->sum > b->s->sum ? -1 : 1;
	if (a->s->count != b->s->count)
		return a->s->count > b->s->count ? -1 : 1;
	n = a->k->len < b->k->len ? a->k->len : b->k->len;
	c = n ? memcmp(a->k->name, b->k->name, n) : 0;
	return c ? c : (a->k->len > b->k->len) - (a->k->len < b->k->len);
}

/* The kernels of a period (run or interval), sorted; NULL and n = 0 without memory. */
static struct krow *kernel_rows(const struct stats *st, bool run, __u32 *n)
{
	struct krow *rows = malloc(((size_t)st->n_kernels + 1) * sizeof(*rows));
	__u32 i, m = 0;

	*n = 0;
	if (!rows)
		return NULL;
	for (i = 0; i < st->n_kernels; i++) {
		const struct sketch *s = run ? &st->kernels[i]->run : &st->kernels[i]->cur;

		if (s->count)
			rows[m++] = (struct krow){ st->kernels[i], s };
	}
	if ((run ? &st->other.run : &st->other.cur)->count)
		rows[m++] = (struct krow){ &st->other, run ? &st->other.run : &st->other.cur };
	qsort(rows, m, sizeof(*rows), krow_cmp);
	*n = m;
	return rows;
}

static void put_kernel_name(struct text *t, const struct stats *st, const struct kstat *k)
{
	if (k == &st->other)
		put(t, "\"[other kernels]\"");
	else if (!k->len)
		put(t, "\"[unnamed kernel]\"");
	else
		put_json_str(t, k->name, k->len);
}

static void put_volume(struct text *t, const struct volume *v)
{
	put(t,
	    "\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"total_ns\": %" PRIu64
	    ", \"mean_ns\": %" PRIu64 ", \"bandwidth_gbps\": %.3f",
	    (uint64_t)v->count, (uint64_t)v->bytes, (uint64_t)v->ns,
	    (uint64_t)mean(v->ns, v->count), v->ns ? (double)v->bytes / (double)v->ns : 0.0);
}

/* ---- CPU section --------------------------------------------------------------------- */

struct frow {
	const struct cpu_fn *f;
	const struct cpu_fn_time *t;
};

struct prow {
	const struct cpu_proc *p;
	const struct cpu_time *t;
};

static int time_cmp(const struct cpu_time *a, const struct cpu_time *b)
{
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return 0;
}

/* Equal times: by name, user side first, so equal rows keep one order ("(other)", without
 * a name, sorts first among them). */
static int frow_name_cmp(const struct frow *a, const struct frow *b)
{
	__u32 n = a->f->len < b->f->len ? a->f->len : b->f->len;
	int c = n ? memcmp(a->f->name, b->f->name, n) : 0;

	if (c)
		return c;
	if (a->f->len != b->f->len)
		return a->f->len < b->f->len ? -1 : 1;
	return (int)a->f->kernel - (int)b->f->kernel;
}

/* Most self time first; then most total time */
static int frow_self_cmp(const void *x, const void *y)
{
	const struct frow *a = x, *b = y;
	int c = time_cmp(&a->t->self, &b->t->self);

	if (!c)
		c = time_cmp(&a->t->total, &b->t->total);
	return c ? c : frow_name_cmp(a, b);
}

/* Most total time first; then most self time */
static int frow_total_cmp(const void *x, const void *y)
{
	const struct frow *a = x, *b = y;
	int c = time_cmp(&a->t->total, &b->t->total);

	if (!c)
		c = time_cmp(&a->t->self, &b->t->self);
	return c ? c : frow_name_cmp(a, b);
}

/* Most time first; then by pid, "(other)" last. */
static int prow_cmp(const void *x, const void *y)
{
	const struct prow *a = x, *b = y;
	int c = time_cmp(a->t, b->t);

	if (c)
		return c;
	if (a->p->used != b->p->used)
		return a->p->used ? -1 : 1;
	return a->p->pid < b->p->pid ? -1 : a->p->pid > b->p->pid;
}

/* The functions seen in a period (run or interval), unsorted; NULL and n = 0 without
 * memory. */
static struct frow *function_rows(const struct cpu *c, bool run, __u32 *n)
{
	struct frow *rows = malloc(((size_t)c->n_fns + 1) * sizeof(*rows));
	const struct cpu_fn_time *t;
	__u32 i, m = 0;

	*n = 0;
	if (!rows)
		return NULL;
	for (i = 0; c->fns && i <= c->fn_mask; i++) {
		if (!c->fns[i])
			continue;
		t = run ? &c->fns[i]->run : &c->fns[i]->cur;
		if (t->total.samples)
			rows[m++] = (struct frow){ c->fns[i], t };
	}
	t = run ? &c->other.run : &c->other.cur;
	if (t->total.samples)
		rows[m++] = (struct frow){ &c->other, t };
	*n = m;
	return rows;
}

/* The processes seen in a period, sorted; NULL and n = 0 without memory. */
static struct prow *process_rows(const struct cpu *c, bool run, __u32 *n)
{
	struct prow *rows = malloc(((size_t)c->n_procs + 1) * sizeof(*rows));
	const struct cpu_time *t;
	__u32 i, m = 0;

	*n = 0;
	if (!rows)
		return NULL;
	for (i = 0; c->procs && i <= c->proc_mask; i++) {
		if (!c->procs[i].used)
			continue;
		t = run ? &c->procs[i].run : &c->procs[i].cur;
		if (t->samples)
			rows[m++] = (struct prow){ &c->procs[i], t };
	}
	t = run ? &c->other_proc.run : &c->other_proc.cur;
	if (t->samples)
		rows[m++] = (struct prow){ &c->other_proc, t };
	qsort(rows, m, sizeof(*rows), prow_cmp);
	*n = m;
	return rows;
}

static __u32 threads_seen(const struct cpu *c, bool run)
{
	__u32 i, n = 0;

	for (i = 0; c->threads && i <= c->thread_mask; i++)
		n += c->threads[i].used && (run ? c->threads[i].run : c->threads[i].cur);
	return n;
}

/* The function's name as the folded format writes its frame: kernel frames with "_[k]". */
static void put_function_name(struct text *t, const struct cpu *c, const struct cpu_fn *f)
{
	if (f == &c->other) {
		put(t, "\"(other)\"");
		return;
	}
	put_bytes(t, "\"", 1);
	put_json_chars(t, f->name, f->len);
	put(t, "%s\"", f->kernel ? "_[k]" : "");
}

/* Sort rows by self time (self) or total time, and say how many of them to list: those
 * with self time only, in the first, as a function never innermost has no place there. */
static __u32 sort_functions(struct frow *rows, __u32 n, bool self)
{
	qsort(rows, n, sizeof(*rows), self ? frow_self_cmp : frow_total_cmp);
	while (self && n && !rows[n - 1].t->self.samples)
		n--;
	return n;
}

/* The first CPU_TOP_FUNCTIONS rows by self or total time, as a JSON list named key. */
static void put_function_list(struct text *t, const struct cpu *c, const char *key,
			      struct frow *rows, __u32 n, bool self, __u64 whole)
{
	__u32 i;

	n = sort_functions(rows, n, self);
	put(t, ",\n  \"%s\": [", key);
	for (i = 0; i < n && i < CPU_TOP_FUNCTIONS; i++) {
		const struct cpu_fn_time *ft = rows[i].t;

		put(t, "%s\n    {\"name\": ", i ? "," : "");
		put_function_name(t, c, rows[i].f);
		put(t,
		    ", \"self_ns\": %" PRIu64 ", \"self_pct\": %.3f, \"self_samples\": %" PRIu64
		    ", \"total_ns\": %" PRIu64 ", \"total_pct\": %.3f, \"total_samples\": %" PRIu64
		    "}",
		    (uint64_t)ft->self.ns, pct(ft->self.ns, whole), (uint64_t)ft->self.samples,
		    (uint64_t)ft->total.ns, pct(ft->total.ns, whole), (uint64_t)ft->total.samples);
	}
	put(t, "%s]", i ? "\n  " : "");
}

/* The CPU samples of a period as the member "cpu"; its limits are the run's so far. */
static void put_cpu(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	const struct cpu *c = &st->cpu;
	const struct cpu_fn_time *other = run ? &c->other.run : &c->other.cur;
	const struct cpu_time *other_proc = run ? &c->other_proc.run : &c->other_proc.cur;
	struct frow *fns;
	struct prow *procs;
	__u32 i, n_fns, n_procs;

	procs = process_rows(c, run, &n_procs);
	fns = function_rows(c, run, &n_fns);
	if (!procs || !fns)
		t->failed = true;
	/* "(other)" is not one function, nor one process: not in the counts */
	put(t,
	    "  \"cpu\": {\"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
	    ", \"without_stack\": %" PRIu64 ", \"processes\": %u, \"threads\": %u"
	    ", \"functions\": %u",
	    (uint64_t)p->cpu.samples, (uint64_t)p->cpu.ns, (uint64_t)p->cpu_no_stack,
	    n_procs - !!other_proc->samples, threads_seen(c, run), n_fns - !!other->total.samples);
	put(t, ",\n  \"top_processes\": [");
	for (i = 0; i < n_procs && i < CPU_TOP_PROCESSES; i++) {
		const struct cpu_proc *pr = procs[i].p;

		put(t, "%s\n    {\"pid\": ", i ? "," : "");
		if (pr == &c->other_proc) {
			put(t, "null, \"comm\": \"(other)\"");
		} else {
			put(t, "%u, \"comm\": ", pr->pid);
			put_json_str(t, pr->comm, strlen(pr->comm));
		}
		put(t,
		    ", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64 ", \"share_pct\": %.3f}",
		    (uint64_t)procs[i].t->samples, (uint64_t)procs[i].t->ns,
		    pct(procs[i].t->ns, p->cpu.ns));
	}
	put(t, "%s]", i ? "\n  " : "");
	put_function_list(t, c, "top_self", fns, n_fns, true, p->cpu.ns);
	put_function_list(t, c, "top_total", fns, n_fns, false, p->cpu.ns);
	put(t,
	    ",\n  \"limits\": {\"max_functions\": %u, \"frames_over_max\": %" PRIu64
	    ", \"max_processes\": %u, \"process_samples_over_max\": %" PRIu64
	    ", \"max_threads\": %u, \"thread_samples_over_max\": %" PRIu64 "}},\n",
	    c->max_fns, (uint64_t)c->frames_over, CPU_PROCESSES_MAX,
	    (uint64_t)(c->other_proc.run.samples + c->other_proc.cur.samples), CPU_THREADS_MAX,
	    (uint64_t)c->threads_over);
	free(fns);
	free(procs);
}

/* ---- counters section ---------------------------------------------------------------- */

/* Ratios derived from pairs of counters (the first of each list of perf's aliases that was
 * counted), and rates per second of the span. */
static const char *const ctr_insn[] = { "instructions", NULL };
static const char *const ctr_cycles[] = { "cycles", "cpu-cycles", NULL };
static const char *const ctr_cache_misses[] = { "cache-misses", NULL };
static const char *const ctr_cache_refs[] = { "cache-references", NULL };
static const char *const ctr_branch_misses[] = { "branch-misses", NULL };
static const char *const ctr_branches[] = { "branch-instructions", "branches", NULL };
static const char *const ctr_faults[] = { "page-faults", "faults", NULL };
static const char *const ctr_switches[] = { "context-switches", "cs", NULL };

static const struct {
	const char *key, *text;
	const char *const *num, *const *den; /* den NULL: num per second */
	double mult;
} ctr_derived[] = {
	{ "ipc", "IPC", ctr_insn, ctr_cycles, 1 },
	{ "cache_miss_pct", "cache misses %", ctr_cache_misses, ctr_cache_refs, 100 },
	{ "branch_miss_pct", "branch misses %", ctr_branch_misses, ctr_branches, 100 },
	{ "page_faults_per_s", "page faults/s", ctr_faults, NULL, 1 },
	{ "context_switches_per_s", "context switches/s", ctr_switches, NULL, 1 },
};

/* Counters are ranked processes by the first of these they have, else by the first name. */
static const char *const ctr_rank_names[] = { "cycles",	   "cpu-cycles",   "task-clock",
					      "cpu-clock", "instructions", NULL };

static const struct ctr_acc *ctr_acc(const struct ctr_group *g, bool run)
{
	return run ? &g->run : &g->cur;
}

/* owner's counts of name index + 1 `name` in the period; NULL when it has no reading. */
static const struct ctr_acc *ctr_get(const struct stats *st, __u32 name, __u32 owner, bool run)
{
	const struct ctr_group *g = ctr_group_of((struct counters *)&st->ctr, name, owner, false);

	return g && ctr_acc(g, run)->readings ? ctr_acc(g, run) : NULL;
}

/* The index + 1 of a name exactly so, or 0. */
static __u32 ctr_name_index(const struct counters *c, const char *name)
{
	size_t len = strlen(name);
	__u32 i;

	for (i = 0; i < c->n_names; i++)
		if (c->names[i].len == len && !memcmp(c->names[i].name, name, len))
			return i + 1;
	return 0;
}

/* The total of the first of aliases that owner counted in the period; false if none. */
static bool ctr_total(const struct stats *st, const char *const *aliases, __u32 owner, bool run,
		      double *total)
{
	const struct ctr_acc *a;

	for (; *aliases; aliases++) {
		a = ctr_get(st, ctr_name_index(&st->ctr, *aliases), owner, run);
		if (a && a->counted) {
			*total = a->total;
			return true;
		}
	}
	return false;
}

/* Derived ratio i of owner's counters: false when a counter of it is missing. */
static bool ctr_ratio(const struct stats *st, size_t i, __u32 owner, bool run, __u64 span,
		      double *v)
{
	double num, den;

	if (!ctr_total(st, ctr_derived[i].num, owner, run, &num))
		return false;
	if (!ctr_derived[i].den) {
		*v = span ? num * 1e9 / (double)span : 0;
		return true;
	}
	if (!ctr_total(st, ctr_derived[i].den, owner, run, &den) || !(den > 0))
		return false;
	*v = num / den * ctr_derived[i].mult;
	return true;
}

static double ctr_rate(const struct ctr_acc *a, __u64 span)
{
	return span ? a->total * 1e9 / (double)span : 0;
}

static double ctr_running_mean(const struct ctr_acc *a)
{
	return a->counted ? a->running_sum / (double)a->counted : 0;
}

static void put_ctr_name(struct text *t, const struct counters *c, __u32 name)
{
	const struct ctr_name *n = &c->names[name - 1];

	if (!n->len)
		put(t, "\"[unnamed counter]\"");
	else
		put_json_str(t, n->name, n->len);
}

/* Names in byte order, "[unnamed counter]" (len 0) first: the file's order. */
static int ctr_name_cmp(const struct counters *c, __u32 a, __u32 b)
{
	const struct ctr_name *x = &c->names[a - 1], *y = &c->names[b - 1];
	__u32 n = x->len < y->len ? x->len : y->len;
	int d = n ? memcmp(x->name, y->name, n) : 0;

	return d ? d : (x->len > y->len) - (x->len < y->len);
}

/* The name indices + 1 owner has readings of in the period, sorted; their count. */
static __u32 ctr_names_of(const struct stats *st, __u32 owner, bool run, __u32 *out)
{
	const struct counters *c = &st->ctr;
	__u32 i, j, n = 0;

	for (i = 1; i <= c->n_names; i++) {
		if (!ctr_get(st, i, owner, run))
			continue;
		for (j = n++; j && ctr_name_cmp(c, out[j - 1], i) > 0; j--) /* insertion sort */
			out[j] = out[j - 1];
		out[j] = i;
	}
	return n;
}

/* owner's counters as the elements of a JSON list, each on its own line at indent, and the
 * list's closing bracket on a line of its own at close (on the same line when empty). */
static void put_ctr_rows(struct text *t, const struct stats *st, __u32 owner, bool run, __u64 span,
			 const char *indent, const char *close)
{
	__u32 names[CTR_NAMES_MAX], n = ctr_names_of(st, owner, run, names), i;

	for (i = 0; i < n; i++) {
		const struct ctr_acc *a = ctr_get(st, names[i], owner, run);

		put(t, "%s\n%s{\"name\": ", i ? "," : "", indent);
		put_ctr_name(t, &st->ctr, names[i]);
		put(t,
		    ", \"readings\": %" PRIu64 ", \"not_counted\": %" PRIu64 ", \"total\": %.3f"
		    ", \"rate_per_s\": %.3f, \"running_min_pct\": %.3f, \"running_mean_pct\": %.3f}",
		    (uint64_t)a->readings, (uint64_t)(a->readings - a->counted), a->total,
		    ctr_rate(a, span), a->counted ? 100 * a->running_min : 0.0,
		    100 * ctr_running_mean(a));
	}
	put(t, "%s%s]", n ? "\n" : "", n ? close : "");
}

static void put_ctr_derived(struct text *t, const struct stats *st, __u32 owner, bool run,
			    __u64 span)
{
	size_t i;
	double v;
	int n = 0;

	put(t, "{");
	for (i = 0; i < sizeof(ctr_derived) / sizeof(ctr_derived[0]); i++)
		if (ctr_ratio(st, i, owner, run, span, &v))
			put(t, "%s\"%s\": %.6f", n++ ? ", " : "", ctr_derived[i].key, v);
	put(t, "}");
}

struct ctr_prow {
	__u32 pid;
	double rank; /* the total of the rank_by counter, -1 without it */
};

static int ctr_prow_cmp(const void *x, const void *y)
{
	const struct ctr_prow *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* The processes with readings in the period, ranked by rank_by's total (most first), then
 * pid; NULL and n = 0 without memory. *rank_by: the name index + 1 used, 0 none. */
static int ctr_prow_pid_cmp(const void *x, const void *y)
{
	const struct ctr_prow *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

static struct ctr_prow *ctr_processes(const struct stats *st, bool run, __u32 *n, __u32 *rank_by)
{
	const size_t n_rank = sizeof(ctr_rank_names) / sizeof(ctr_rank_names[0]) - 1;
	const struct counters *c = &st->ctr;
	struct ctr_prow *rows = malloc(((size_t)c->n_groups + 1) * sizeof(*rows));
	__u32 i, k, m = 0, prio[CTR_NAMES_MAX + 1];
	const struct ctr_acc *a;

	*n = 0;
	*rank_by = 0;
	if (!rows)
		return NULL;
	/* a name's place in ctr_rank_names; n_rank for the others, which rank by name */
	for (i = 1; i <= c->n_names; i++)
		prio[i] = (__u32)n_rank;
	for (k = 0; k < n_rank; k++)
		if ((i = ctr_name_index(c, ctr_rank_names[k])) && prio[i] > k)
			prio[i] = k;
	for (i = 0; c->groups && i < 2 * CTR_GROUPS_MAX; i++) {
		const struct ctr_group *g = &c->groups[i];

		if (!g->name || g->owner == CTR_SYSTEM || !ctr_acc(g, run)->readings)
			continue;
		rows[m++] = (struct ctr_prow){ .pid = g->owner, .rank = -1 };
		if (ctr_acc(g, run)->counted &&
		    (!*rank_by || prio[g->name] < prio[*rank_by] ||
		     (prio[g->name] == prio[*rank_by] && ctr_name_cmp(c, g->name, *rank_by) < 0)))
			*rank_by = g->name;
	}
	/* a row per process: its groups were one each */
	qsort(rows, m, sizeof(*rows), ctr_prow_pid_cmp);
	for (i = 0, k = 0; i < m; i++)
		if (!k || rows[k - 1].pid != rows[i].pid)
			rows[k++] = rows[i];
	m = k;
	for (i = 0; i < m && *rank_by; i++) {
		a = ctr_get(st, *rank_by, rows[i].pid, run);
		if (a && a->counted)
			rows[i].rank = a->total;
	}
	qsort(rows, m, sizeof(*rows), ctr_prow_cmp);
	*n = m;
	return rows;
}

static const struct kctr *kctr_of(const struct kstat *k, bool run)
{
	return run ? &k->ctr_run : &k->ctr_cur;
}

/* The counters of a period as the member "counters". span: the period's, for the rates. */
static void put_counters(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	const struct counters *c = &st->ctr;
	__u64 span = p->first_ns ? p->last_ns - p->first_ns : 0, readings = 0, counted = 0;
	__u32 i, n, n_procs, rank_by, names = 0, names_seen[CTR_NAMES_MAX] = { 0 };
	struct ctr_prow *procs;
	struct krow *rows;

	for (i = 0; c->groups && i < 2 * CTR_GROUPS_MAX; i++) {
		const struct ctr_acc *a = ctr_acc(&c->groups[i], run);

		if (!c->groups[i].name || !a->readings)
			continue;
		readings += a->readings;
		counted += a->counted;
		names += !names_seen[c->groups[i].name - 1]++;
	}
	procs = ctr_processes(st, run, &n_procs, &rank_by);
	if (!procs)
		t->failed = true;
	put(t,
	    "  \"counters\": {\"readings\": %" PRIu64 ", \"not_counted\": %" PRIu64
	    ", \"names\": %u, \"processes\": %u,\n  \"system\": [",
	    (uint64_t)readings, (uint64_t)(readings - counted), names, n_procs);
	put_ctr_rows(t, st, CTR_SYSTEM, run, span, "    ", "  ");
	put(t, ",\n  \"system_derived\": ");
	put_ctr_derived(t, st, CTR_SYSTEM, run, span);
	put(t, ",\n  \"rank_by\": ");
	if (rank_by)
		put_ctr_name(t, c, rank_by);
	else
		put(t, "null");
	put(t, ",\n  \"top_processes\": [");
	for (i = 0; i < n_procs && i < CTR_TOP_PROCESSES; i++) {
		put(t, "%s\n    {\"pid\": %u, \"counters\": [", i ? "," : "", procs[i].pid);
		put_ctr_rows(t, st, procs[i].pid, run, span, "      ", "    ");
		put(t, ", \"derived\": ");
		put_ctr_derived(t, st, procs[i].pid, run, span);
		put(t, "}");
	}
	put(t, "%s],\n  \"kernels\": [", i ? "\n  " : "");
	free(procs);
	rows = kernel_rows(st, run, &n);
	if (!rows)
		t->failed = true;
	for (i = 0, names = 0; i < n; i++) {
		const struct kctr *k = kctr_of(rows[i].k, run);

		if (!k->runs)
			continue;
		put(t, "%s\n    {\"name\": ", names++ ? "," : "");
		put_kernel_name(t, st, rows[i].k);
		put(t,
		    ", \"runs\": %" PRIu64 ", \"with_counters\": %" PRIu64
		    ", \"estimated\": %" PRIu64 ", \"ipc_runs\": %" PRIu64
		    ", \"ipc_mean\": %.6f, \"instructions_runs\": %" PRIu64
		    ", \"instructions_mean\": %.3f}",
		    (uint64_t)rows[i].s->count, (uint64_t)k->runs, (uint64_t)k->estimated,
		    (uint64_t)k->ipc_runs, k->ipc_runs ? k->ipc_sum / (double)k->ipc_runs : 0.0,
		    (uint64_t)k->insn_runs,
		    k->insn_runs ? k->insn_sum / (double)k->insn_runs : 0.0);
	}
	free(rows);
	put(t,
	    "%s],\n  \"limits\": {\"max_names\": %u, \"max_groups\": %u, \"names\": %u"
	    ", \"groups\": %u, \"readings_over_max\": %" PRIu64 "}},\n",
	    names ? "\n  " : "", CTR_NAMES_MAX, CTR_GROUPS_MAX, c->n_names, c->n_groups,
	    (uint64_t)c->over);
}

/* Stage of each loss cause: where in the pipeline the records were dropped. */
static const char *loss_stage(__u32 cause)
{
	switch (cause) {
	case XPU_LOSS_RING_FULL:
	case XPU_LOSS_TOO_BIG:
	case XPU_LOSS_BPF_RESERVE:
	case XPU_LOSS_CUPTI:
		return "source";
	case XPU_LOSS_EVICTED:
	case XPU_LOSS_CORRUPT:
		return "correlator";
	default:
		return "unknown";
	}
}

/* Everything but SM-active, for the run or one interval, as members of an open object. */
static void put_period(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	static const char *const stages[] = { "source", "correlator", "unknown" };
	__u64 gpu = 0, lost = 0, stage;
	double conf = 0;
	struct krow *rows;
	struct volume all = { 0 };
	__u32 i, n, s;

	put(t,
	    "  \"time\": {\"first_ns\": %" PRIu64 ", \"last_ns\": %" PRIu64
	    ", \"span_ns\": %" PRIu64 "},\n",
	    (uint64_t)p->first_ns, (uint64_t)p->last_ns,
	    (uint64_t)(p->first_ns ? p->last_ns - p->first_ns : 0));
	put(t, "  \"events\": {\"batches\": %" PRIu64 ", \"total\": %" PRIu64 ", \"by_kind\": {",
	    (uint64_t)p->batches, (uint64_t)p->events);
	for (i = 0, n = 0; i < XPU_REC_TYPE_MAX; i++)
		if (p->by_kind[i])
			put(t, "%s\"%s\": %" PRIu64, n++ ? ", " : "", xpu_rec_type__name(i),
			    (uint64_t)p->by_kind[i]);
	put(t, "}},\n");
	put_cpu(t, st, p, run);

	rows = kernel_rows(st, run, &n);
	put(t,
	    "  \"kernels\": {\"count\": %" PRIu64 ", \"total_ns\": %" PRIu64
	    ", \"names\": %u, \"by_name\": [",
	    (uint64_t)p->kernels, (uint64_t)p->kernel_ns, n);
	for (i = 0; i < n; i++) {
		put(t, "%s\n    {\"name\": ", i ? "," : "");
		put_kernel_name(t, st, rows[i].k);
		put(t, ", \"time_pct\": %.3f, ", pct(rows[i].s->sum, p->kernel_ns));
		put_sketch(t, rows[i].s);
		put(t, "}");
	}
	if (!rows)
		t->failed = true;
	free(rows);
	put(t, "%s]},\n", n ? "\n  " : "");

	for (i = 0; i < COPY_SLOTS; i++) {
		all.count += p->copy[i].count;
		all.bytes += p->copy[i].bytes;
		all.ns += p->copy[i].ns;
	}
	put(t, "  \"memcpy\": {");
	put_volume(t, &all);
	put(t, ", \"by_kind\": [");
	for (i = 0, n = 0; i < COPY_SLOTS; i++) {
		if (!p->copy[i].count)
			continue;
		put(t, "%s\n    {\"kind\": \"%s\", ", n++ ? "," : "", copy_names[i]);
		put_volume(t, &p->copy[i]);
		put(t, "}");
	}
	put(t, "%s]},\n", n ? "\n  " : "");
	put(t, "  \"memset\": {");
	put_volume(t, &p->memset);
	put(t, "},\n");

	put(t, "  \"queue_delay\": {");
	put_sketch(t, &p->queue);
	put(t, ", \"unresolved\": %" PRIu64 ", \"negative\": %" PRIu64 "},\n",
	    (uint64_t)p->queue_unresolved, (uint64_t)p->queue_negative);

	for (i = 0; i < XPU_CORR_TYPE_MAX; i++) {
		gpu += p->gpu_by_type[i];
		conf += p->conf_by_type[i];
	}
	put(t,
	    "  \"correlation\": {\"gpu_records\": %" PRIu64 ", \"with_stack\": %" PRIu64
	    ", \"mean_confidence\": %.4f, \"by_type\": {",
	    (uint64_t)gpu, (uint64_t)p->gpu_with_stack, gpu ? conf / (double)gpu : 0.0);
	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		put(t,
		    "%s\"%s\": {\"count\": %" PRIu64
		    ", \"fraction\": %.6f, \"mean_confidence\": %.4f}",
		    i ? ", " : "", xpu_corr_type__name(i), (uint64_t)p->gpu_by_type[i],
		    gpu ? (double)p->gpu_by_type[i] / (double)gpu : 0.0,
		    p->gpu_by_type[i] ? p->conf_by_type[i] / (double)p->gpu_by_type[i] : 0.0);
	put(t, "}},\n");

	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		lost += p->lost_by_cause[i];
	put(t,
	    "  \"losses\": {\"loss_records\": %" PRIu64 ", \"records_lost\": %" PRIu64
	    ", \"by_cause\": {",
	    (uint64_t)p->loss_records, (uint64_t)lost);
	for (i = 1; i <= XPU_LOSS_CAUSE_MAX; i++) /* the unknown cause, slot 0, last */
		put(t, "%s\"%s\": %" PRIu64, i > 1 ? ", " : "",
		    xpu_loss_cause__name(i % XPU_LOSS_CAUSE_MAX),
		    (uint64_t)p->lost_by_cause[i % XPU_LOSS_CAUSE_MAX]);
	put(t, "}, \"by_stage\": {");
	for (s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
		for (i = 0, stage = 0; i < XPU_LOSS_CAUSE_MAX; i++)
			if (!strcmp(loss_stage(i), stages[s]))
				stage += p->lost_by_cause[i];
		put(t, "\"%s\": %" PRIu64 ", ", stages[s], (uint64_t)stage);
	}
	put(t,
	    "\"transport\": %" PRIu64 "}, \"sequence\": {\"events_missed\": %" PRIu64
	    ", \"rewinds\": %" PRIu64 "}},\n",
	    (uint64_t)p->missed, (uint64_t)p->missed, (uint64_t)p->rewinds);
	put_counters(t, st, p, run);
}

/* The part of window [start, start + len) inside the run's span: the denominator of its
 * SM-active, so a run that starts or ends inside a window is not diluted by idle time it
 * never had. */
static __u64 window_len(__u64 start, __u64 len, __u64 first, __u64 last)
{
	__u64 s = start > first ? start : first, e = start + len < last ? start + len : last;

	return e > s ? e - s : len;
}

static void put_window(struct text *t, const struct sm_window *w, __u64 window_ns, __u64 first,
		       __u64 last)
{
	__u64 len = window_len(w->start_ns, window_ns, first, last);
	__u32 k, n;
	int proc;

	put(t, "\n    {\"start_ns\": %" PRIu64 ", \"len_ns\": %" PRIu64, (uint64_t)w->start_ns,
	    (uint64_t)len);
	for (proc = 0; proc < 2; proc++) {
		put(t, ", \"%s\": [", proc ? "processes" : "devices");
		for (k = 0, n = 0; k < w->n; k++) {
			if (SM_IS_PROCESS(w->e[k].key) != proc)
				continue;
			put(t, "%s{\"%s\": %u, \"busy_ns\": %" PRIu64 ", \"active_pct\": %.3f}",
			    n++ ? ", " : "", proc ? "pid" : "device", SM_ID(w->e[k].key),
			    (uint64_t)w->e[k].busy_ns, pct(w->e[k].busy_ns, len));
		}
		put(t, "]");
	}
	put(t, "}");
}

/* SM-active as the last member. from_ordinal UINT64_MAX: the run (totals per device and
 * process, and the kept windows); otherwise an interval line (the windows closed since
 * from_ordinal). Not final (a snapshot while running): the run's percentages are over the
 * part of the span whose windows are closed, since open windows are not counted yet. */
static void put_sm_active(struct text *t, const struct stats *st, __u64 first, __u64 last,
			  bool final, __u64 from_ordinal)
{
	struct sm_counts c;
	__u64 span, end = last;
	__u32 i, n, kept = sm_active__windows_kept(st->sm);
	int proc;

	sm_active__counts(st->sm, &c);
	if (!final && c.closed_until < end)
		end = c.closed_until;
	span = first && end > first ? end - first : 0;
	put(t,
	    "  \"sm_active\": {\"window_ns\": %" PRIu64 ", \"lateness_ns\": %" PRIu64
	    ", \"span_ns\": %" PRIu64,
	    (uint64_t)st->window_ns, (uint64_t)st->lateness_ns, (uint64_t)span);
	if (from_ordinal == UINT64_MAX) { /* the run: totals per entity */
		for (proc = 0; proc < 2; proc++) {
			put(t, ",\n  \"%s\": [", proc ? "processes" : "devices");
			for (i = 0, n = 0; i < sm_active__n_totals(st->sm); i++) {
				const struct sm_total *e = sm_active__total(st->sm, i);

				if (SM_IS_PROCESS(e->key) != proc)
					continue;
				put(t,
				    "%s\n    {\"%s\": %u, \"busy_ns\": %" PRIu64
				    ", \"active_pct\": %.3f, \"windows\": %" PRIu64
				    ", \"peak_window_start_ns\": %" PRIu64
				    ", \"peak_window_pct\": %.3f, \"late\": %" PRIu64
				    ", \"late_ns\": %" PRIu64 ", \"filled_ns\": %" PRIu64 "}",
				    n++ ? "," : "", proc ? "pid" : "device", SM_ID(e->key),
				    (uint64_t)e->busy_ns, pct(e->busy_ns, span),
				    (uint64_t)e->windows, (uint64_t)e->peak_start_ns,
				    pct(e->peak_busy_ns,
					window_len(e->peak_start_ns, st->window_ns, first, last)),
				    (uint64_t)e->late, (uint64_t)e->late_ns,
				    (uint64_t)e->filled_ns);
			}
			put(t, "%s]", n ? "\n  " : "");
		}
		from_ordinal = 0;
	}
	put(t, ",\n  \"windows\": [");
	for (i = 0, n = 0; i < kept; i++) {
		const struct sm_window *w = sm_active__window(st->sm, i);

		if (w->ordinal < from_ordinal)
			continue;
		put(t, "%s", n++ ? "," : "");
		put_window(t, w, st->window_ns, first, last);
	}
	put(t, "%s],\n", n ? "\n  " : "");
	put(t,
	    "  \"windows_closed\": %" PRIu64 ", \"windows_listed\": %u, \"windows_open\": %" PRIu64
	    ", \"windows_forced\": %" PRIu64 ", \"late\": %" PRIu64 ", \"late_ns\": %" PRIu64
	    ", \"filled_ns\": %" PRIu64 ", \"untracked\": %" PRIu64 ", \"skipped\": %" PRIu64 "}",
	    (uint64_t)c.windows_closed, n, (uint64_t)c.open, (uint64_t)c.forced, (uint64_t)c.late,
	    (uint64_t)c.late_ns, (uint64_t)c.filled_ns, (uint64_t)c.untracked, (uint64_t)c.skipped);
}

static void put_limits(struct text *t, const struct stats *st)
{
	__u64 unbucketed = st->run.queue.unbucketed, collapsed = st->run.queue.collapsed;
	__u32 i;

	for (i = 0; i < st->n_kernels; i++) {
		unbucketed += st->kernels[i]->run.unbucketed;
		collapsed += st->kernels[i]->run.collapsed;
	}
	put(t,
	    "  \"limits\": {\"max_kernels\": %u, \"kernels_over_max\": %" PRIu64
	    ", \"launch_map\": %u, \"launches_evicted\": %" PRIu64
	    ", \"sketch_unbucketed\": %" PRIu64 ", \"sketch_collapsed\": %" PRIu64
	    ", \"out_of_memory\": %" PRIu64 "},\n",
	    st->max_kernels, (uint64_t)st->other_names, LAUNCH_MAP_MAX,
	    (uint64_t)st->launches.evicted, (uint64_t)unbucketed, (uint64_t)collapsed,
	    (uint64_t)st->sketch_nomem);
}

/* The sync metadata (seed 004, docs/clock.md): a model per other clock, or the statement
 * that every source stamps CLOCK_MONOTONIC. */
static void put_clock_sync(struct text *t, struct stats *st)
{
	char *json = malloc(SINK_CLOCKS_JSON_MAX);

	if (!json || sink_clocks__json(&st->clocks, json, SINK_CLOCKS_JSON_MAX) < 0) {
		t->failed = true;
		free(json);
		return;
	}
	put(t, ",\n  \"clock_sync\": %s", json);
	free(json);
}

/*
 * What the correlators' unwinders counted (actors/correlator/unwind.h), summed over the
 * shards from their counters in the session's status block: how many copied stacks were
 * unwound and how their walks ended, frames by CFI and by frame pointer, time per stack, CFI
 * held, mappings processes reported of themselves (MODULE records) and frames found in them. All zero outside a session or when no source copies stacks (unwind = fp).
 */
static void put_unwind(struct text *t, const struct stats *st)
{
	static const char *const keys[][2] = {
		{ "stacks", "unwind_stacks" },
		{ "ok", "unwind_ok" },
		{ "truncated", "unwind_truncated" },
		{ "failed", "unwind_failed" },
		{ "failed_no_rule", "unwind_failed_no_rule" },
		{ "failed_bad_cfi", "unwind_failed_bad_cfi" },
		{ "failed_loop", "unwind_failed_loop" },
		{ "frames_cfi", "unwind_frames_cfi" },
		{ "frames_fp", "unwind_frames_fp" },
		{ "ns_per_stack", "unwind_ns_per_stack" },
		{ "cfi_files", "cfi_files" },
		{ "cfi_kib", "cfi_kib" },
		{ "cfi_evicted", "cfi_evicted" },
		{ "modules", "modules" },
		{ "module_frames", "module_frames" },
	};
	enum { STACKS = 0, NS_PER_STACK = 9, N_KEYS = sizeof(keys) / sizeof(keys[0]) };
	__u64 v[N_KEYS] = { 0 }, one[N_KEYS], ns = 0;
	unsigned int i, k, c, n;

	for (i = 0; st->status && i < XPU_STATUS_MAX_ACTORS; i++) {
		const struct xpu_actor_slot *a = &st->status->slots[i];

		if (!a->name[0] || a->role != CONF_ROLE_CORRELATOR)
			continue;
		memset(one, 0, sizeof(one));
		/* pairs with the release store of n_counters in actor__counter: the names it
		 * covers are written */
		n = __atomic_load_n(&a->n_counters, __ATOMIC_ACQUIRE);
		for (c = 0; c < n && c < XPU_STATUS_MAX_COUNTERS; c++)
			for (k = 0; k < N_KEYS; k++)
				if (!strncmp(a->counters[c].name, keys[k][1],
					     sizeof(a->counters[c].name)))
					one[k] = __atomic_load_n(&a->counters[c].value,
								 __ATOMIC_RELAXED);
		for (k = 0; k < N_KEYS; k++)
			v[k] += one[k];
		ns += one[NS_PER_STACK] * one[STACKS]; /* a shard's mean back to its total */
	}
	v[NS_PER_STACK] = v[STACKS] ? ns / v[STACKS] : 0;
	put(t, ",\n  \"unwind\": {");
	for (k = 0; k < N_KEYS; k++)
		put(t, "%s\"%s\": %" PRIu64, k ? ", " : "", keys[k][0], (uint64_t)v[k]);
	put(t, "}");
}

static void put_json(struct text *t, struct stats *st, bool final)
{
	put(t,
	    "{\n  \"xpusup_stats\": %d,\n  \"final\": %s,\n"
	    "  \"sketch\": {\"relative_error\": %g, \"rank\": \"floor(q * (count - 1))\"},\n",
	    STATS_VERSION, final ? "true" : "false", SKETCH_ALPHA);
	put_period(t, st, &st->run, true);
	put_limits(t, st);
	put_sm_active(t, st, st->run.first_ns, st->run.last_ns, final, UINT64_MAX);
	put_clock_sync(t, st);
	put_unwind(t, st);
	put(t, "\n}\n");
}

/* ---- stats.txt ----------------------------------------------------------------------- */

static const char *human_ns(char *buf, size_t size, double ns)
{
	if (ns < 1e3)
		snprintf(buf, size, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.2f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
	return buf;
}

static const char *human_bytes(char *buf, size_t size, __u64 bytes)
{
	double b = (double)bytes;

	if (b < 1024)
		snprintf(buf, size, "%.0f B", b);
	else if (b < 1024.0 * 1024)
		snprintf(buf, size, "%.2f KiB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, size, "%.2f MiB", b / 1024 / 1024);
	else
		snprintf(buf, size, "%.2f GiB", b / 1024 / 1024 / 1024);
	return buf;
}

/* A name on one line of the report: control bytes shown as '?', long names cut. */
static void put_text_name(struct text *t, const char *name, __u32 len)
{
	char buf[160];
	__u32 i, n = len < 150 ? len : 150;

	if (!n) /* nothing to copy: buf would go to put_bytes unwritten */
		return;
	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	put_bytes(t, buf, n);
	if (n < len)
		put(t, "...");
}

static void put_text_sm(struct text *t, const struct stats *st, __u64 span)
{
	char a[32], b[32];
	__u32 i, shown;
	int proc;

	put(t, "\nSM active: merged kernel time over the span (windows of %s, %s late allowed)\n",
	    human_ns(a, sizeof(a), (double)st->window_ns),
	    human_ns(b, sizeof(b), (double)st->lateness_ns));
	for (proc = 0; proc < 2; proc++) {
		for (i = 0, shown = 0; i < sm_active__n_totals(st->sm); i++) {
			const struct sm_total *e = sm_active__total(st->sm, i);

			if (SM_IS_PROCESS(e->key) != proc)
				continue;
			if (shown++ == TEXT_ROWS_MAX) {
				put(t, "  ... more in stats.json\n");
				break;
			}
			put(t, "  %-7s %-10u %8.3f %%  busy %s  peak window %.3f %%\n",
			    proc ? "pid" : "device", SM_ID(e->key), pct(e->busy_ns, span),
			    human_ns(a, sizeof(a), (double)e->busy_ns),
			    pct(e->peak_busy_ns, window_len(e->peak_start_ns, st->window_ns,
							    st->run.first_ns, st->run.last_ns)));
		}
	}
}

/* A function list of the CPU section: the first CPU_TOP_FUNCTIONS by self or total time. */
static void put_text_functions(struct text *t, const struct cpu *c, struct frow *rows, __u32 n,
			       bool self, __u64 whole)
{
	char a[32], b[32];
	__u32 i;

	n = sort_functions(rows, n, self);
	put(t, "%12s %8s %12s %8s  %s\n", "self", "self %", "total", "total %", "function");
	for (i = 0; i < n && i < CPU_TOP_FUNCTIONS; i++) {
		const struct cpu_fn_time *ft = rows[i].t;

		put(t, "%12s %8.3f %12s %8.3f  ", human_ns(a, sizeof(a), (double)ft->self.ns),
		    pct(ft->self.ns, whole), human_ns(b, sizeof(b), (double)ft->total.ns),
		    pct(ft->total.ns, whole));
		if (rows[i].f == &c->other) {
			put(t, "(other)\n");
			continue;
		}
		put_text_name(t, rows[i].f->name, rows[i].f->len);
		put(t, "%s\n", rows[i].f->kernel ? "_[k]" : "");
	}
	if (n > CPU_TOP_FUNCTIONS)
		put(t, "  ... %u more functions\n", n - CPU_TOP_FUNCTIONS); /* nor in the JSON */
}

/* The CPU samples of the run: what is on the CPU, where, and in which functions. */
static void put_text_cpu(struct text *t, const struct stats *st)
{
	const struct period *p = &st->run;
	const struct cpu *c = &st->cpu;
	struct frow *fns;
	struct prow *procs;
	__u32 i, n_fns, n_procs;
	char a[32];

	procs = process_rows(c, true, &n_procs);
	fns = function_rows(c, true, &n_fns);
	if (!procs || !fns)
		t->failed = true;
	put(t, "\nCPU samples: %" PRIu64 " samples, %s sampled, %u processes, %u threads\n",
	    (uint64_t)p->cpu.samples, human_ns(a, sizeof(a), (double)p->cpu.ns),
	    n_procs - !!c->other_proc.run.samples, threads_seen(c, true));
	if (p->cpu_no_stack)
		put(t, "  %" PRIu64 " samples without a stack (in the time, in no function)\n",
		    (uint64_t)p->cpu_no_stack);

	put(t, "\nTop processes\n%10s %10s %12s %8s  %s\n", "pid", "samples", "time", "share %",
	    "comm");
	for (i = 0; i < n_procs && i < CPU_TOP_PROCESSES; i++) {
		const struct cpu_proc *pr = procs[i].p;

		if (pr == &c->other_proc)
			put(t, "%10s", "(other)");
		else
			put(t, "%10u", pr->pid);
		put(t, " %10" PRIu64 " %12s %8.3f  ", (uint64_t)procs[i].t->samples,
		    human_ns(a, sizeof(a), (double)procs[i].t->ns), pct(procs[i].t->ns, p->cpu.ns));
		if (pr != &c->other_proc && pr->comm[0])
			put_text_name(t, pr->comm, (__u32)strlen(pr->comm));
		put(t, "\n");
	}
	if (n_procs > CPU_TOP_PROCESSES) /* nor in the JSON: its counts say how many */
		put(t, "  ... %u more processes\n", n_procs - CPU_TOP_PROCESSES);

	put(t, "\nHottest functions by self time (the innermost frame)\n");
	put_text_functions(t, c, fns, n_fns, true, p->cpu.ns);
	put(t, "\nHottest functions by total time (anywhere on the stack, once per sample)\n");
	put_text_functions(t, c, fns, n_fns, false, p->cpu.ns);
	if (c->frames_over)
		put(t, "  %" PRIu64 " frames past the first %u functions counted as (other)\n",
		    (uint64_t)c->frames_over, c->max_fns);
	free(fns);
	free(procs);
}

/* Whether the run saw any GPU work or CUDA call: without, the GPU part is one line. */
static bool gpu_seen(const struct period *p)
{
	static const __u16 kinds[] = { XPU_REC_LAUNCH,	   XPU_REC_CUDA_API,   XPU_REC_GPU_KERNEL,
				       XPU_REC_GPU_MEMCPY, XPU_REC_GPU_MEMSET, XPU_REC_GPU_SYNC,
				       XPU_REC_GPU_MEMORY };
	__u32 i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (p->by_kind[kinds[i]])
			return true;
	return false;
}

/* Kernels, copies, queue delay, SM-active and correlation of the run. */
static void put_text_gpu(struct text *t, const struct stats *st, bool final)
{
	const struct period *p = &st->run;
	char a[32], b[32], c[32], d[32], e[32];
	struct sm_counts sc;
	struct krow *rows;
	__u64 gpu = 0, span = p->first_ns ? p->last_ns - p->first_ns : 0;
	__u32 i, n;

	sm_active__counts(st->sm, &sc);
	rows = kernel_rows(st, true, &n);
	put(t, "\nGPU kernels: %" PRIu64 " runs, %s in total, %u names\n", (uint64_t)p->kernels,
	    human_ns(a, sizeof(a), (double)p->kernel_ns), n);
	if (n)
		put(t, "%10s %12s %8s %11s %11s %11s %11s  %s\n", "count", "total", "time %",
		    "mean", "p50", "p95", "p99", "name");
	for (i = 0; i < n && i < TEXT_ROWS_MAX; i++) {
		const struct sketch *s = rows[i].s;

		put(t, "%10" PRIu64 " %12s %8.3f %11s %11s %11s %11s  ", (uint64_t)s->count,
		    human_ns(a, sizeof(a), (double)s->sum), pct(s->sum, p->kernel_ns),
		    human_ns(b, sizeof(b), (double)mean(s->sum, s->count)),
		    human_ns(c, sizeof(c), sketch__quantile(s, 0.50)),
		    human_ns(d, sizeof(d), sketch__quantile(s, 0.95)),
		    human_ns(e, sizeof(e), sketch__quantile(s, 0.99)));
		if (rows[i].k == &st->other)
			put(t, "[other kernels]");
		else if (!rows[i].k->len)
			put(t, "[unnamed kernel]");
		else
			put_text_name(t, rows[i].k->name, rows[i].k->len);
		put(t, "\n");
	}
	if (n > TEXT_ROWS_MAX)
		put(t, "  ... %u more in stats.json\n", n - TEXT_ROWS_MAX);
	free(rows);

	put(t, "\nMemory copies\n");
	for (i = 0, n = 0; i < COPY_SLOTS; i++) {
		const struct volume *v = &p->copy[i];

		if (!v->count)
			continue;
		if (!n++)
			put(t, "  %-8s %10s %12s %12s %14s\n", "kind", "count", "bytes", "time",
			    "bandwidth");
		put(t, "  %-8s %10" PRIu64 " %12s %12s %9.3f GB/s\n", copy_names[i],
		    (uint64_t)v->count, human_bytes(a, sizeof(a), v->bytes),
		    human_ns(b, sizeof(b), (double)v->ns),
		    v->ns ? (double)v->bytes / (double)v->ns : 0.0);
	}
	if (!n)
		put(t, "  none\n");
	put(t, "Memsets: %" PRIu64 ", %s, %s\n", (uint64_t)p->memset.count,
	    human_bytes(a, sizeof(a), p->memset.bytes),
	    human_ns(b, sizeof(b), (double)p->memset.ns));

	put(t, "\nLaunch-to-start queue delay (kernel start - start of its launching CUDA call)\n");
	put(t, "  %" PRIu64 " kernels: mean %s, p50 %s, p95 %s, p99 %s, max %s\n",
	    (uint64_t)p->queue.count,
	    human_ns(a, sizeof(a), (double)mean(p->queue.sum, p->queue.count)),
	    human_ns(b, sizeof(b), sketch__quantile(&p->queue, 0.50)),
	    human_ns(c, sizeof(c), sketch__quantile(&p->queue, 0.95)),
	    human_ns(d, sizeof(d), sketch__quantile(&p->queue, 0.99)),
	    human_ns(e, sizeof(e), (double)(p->queue.count ? p->queue.max : 0)));
	put(t, "  without a known launch: %" PRIu64 "; starting before it: %" PRIu64 "\n",
	    (uint64_t)p->queue_unresolved, (uint64_t)p->queue_negative);

	if (!final && sc.closed_until < p->last_ns)
		span = sc.closed_until > p->first_ns ? sc.closed_until - p->first_ns : 0;
	put_text_sm(t, st, span);
	if (sc.late)
		put(t, "  %" PRIu64 " kernels came after their window closed (%s not counted)\n",
		    (uint64_t)sc.late, human_ns(a, sizeof(a), (double)sc.late_ns));

	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		gpu += p->gpu_by_type[i];
	put(t, "\nCorrelation of %" PRIu64 " GPU records (%" PRIu64 " with a launch stack)\n",
	    (uint64_t)gpu, (uint64_t)p->gpu_with_stack);
	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		put(t, "  %-12s %10" PRIu64 " %8.3f %%  mean confidence %.3f\n",
		    xpu_corr_type__name(i), (uint64_t)p->gpu_by_type[i],
		    pct(p->gpu_by_type[i], gpu),
		    p->gpu_by_type[i] ? p->conf_by_type[i] / (double)p->gpu_by_type[i] : 0.0);
}

/* A counter's name on a line of the report. */
static void put_text_ctr_name(struct text *t, const struct counters *c, __u32 name)
{
	const struct ctr_name *n = &c->names[name - 1];

	if (n->len)
		put_text_name(t, n->name, n->len);
	else
		put(t, "[unnamed counter]");
}

/* owner's counters as table rows, and the ratios derived from them on one line. */
static void put_text_ctr_owner(struct text *t, const struct stats *st, __u32 owner, __u64 span)
{
	__u32 names[CTR_NAMES_MAX], n = ctr_names_of(st, owner, true, names), i;
	size_t d;
	double v;
	int any = 0;

	for (i = 0; i < n; i++) {
		const struct ctr_acc *a = ctr_get(st, names[i], owner, true);

		put(t, "  %16.6g %14.6g %9.1f / %-6.1f ", a->total, ctr_rate(a, span),
		    a->counted ? 100 * a->running_min : 0.0, 100 * ctr_running_mean(a));
		put_text_ctr_name(t, &st->ctr, names[i]);
		put(t, "%s\n", a->counted < a->readings ? " (some readings not counted)" : "");
	}
	for (d = 0; d < sizeof(ctr_derived) / sizeof(ctr_derived[0]); d++)
		if (ctr_ratio(st, d, owner, true, span, &v))
			put(t, "%s%s %.3f", any++ ? ", " : "  ", ctr_derived[d].text, v);
	if (any)
		put(t, "\n");
}

/* PMU counters of the run: system-wide, the top processes, and what kernels carried. */
static void put_text_counters(struct text *t, const struct stats *st)
{
	const struct period *p = &st->run;
	__u64 span = p->first_ns ? p->last_ns - p->first_ns : 0;
	__u32 i, n, n_procs, rank_by, shown, names[CTR_NAMES_MAX];
	struct ctr_prow *procs;
	struct krow *rows;
	char a[32];

	procs = ctr_processes(st, true, &n_procs, &rank_by);
	if (!procs)
		t->failed = true;
	put(t, "\nCounters: %" PRIu64 " readings; rates per second of the %s span\n",
	    (uint64_t)p->by_kind[XPU_REC_PMU_COUNTER], human_ns(a, sizeof(a), (double)span));
	put(t, "  %16s %14s %18s  %s\n", "total", "per s", "running min/mean %", "counter");
	if (ctr_names_of(st, CTR_SYSTEM, true, names)) {
		put(t, "System-wide (all CPUs)\n");
		put_text_ctr_owner(t, st, CTR_SYSTEM, span);
	}
	for (i = 0; i < n_procs && i < CTR_TOP_PROCESSES; i++) {
		if (!i) {
			put(t, "Top processes by ");
			if (rank_by)
				put_text_ctr_name(t, &st->ctr, rank_by);
			else
				put(t, "pid");
			put(t, "\n");
		}
		put(t, "pid %u\n", procs[i].pid);
		put_text_ctr_owner(t, st, procs[i].pid, span);
	}
	if (n_procs > CTR_TOP_PROCESSES)
		put(t, "  ... %u more processes\n", n_procs - CTR_TOP_PROCESSES);
	free(procs);
	if (st->ctr.over)
		put(t, "  %" PRIu64 " readings past the first %u names or %u groups, in no row\n",
		    (uint64_t)st->ctr.over, CTR_NAMES_MAX, CTR_GROUPS_MAX);

	rows = kernel_rows(st, true, &n);
	if (!rows)
		t->failed = true;
	for (i = 0, shown = 0; i < n && shown < TEXT_ROWS_MAX; i++) {
		const struct kctr *k = &rows[i].k->ctr_run;

		if (!k->runs)
			continue;
		if (!shown++)
			put(t, "\nKernels with counters (means per run)\n%10s %10s %10s %14s  %s\n",
			    "runs", "estimated", "IPC", "instructions", "name");
		put(t, "%10" PRIu64 " %10" PRIu64 " %10.3f %14.6g  ", (uint64_t)k->runs,
		    (uint64_t)k->estimated, k->ipc_runs ? k->ipc_sum / (double)k->ipc_runs : 0.0,
		    k->insn_runs ? k->insn_sum / (double)k->insn_runs : 0.0);
		if (rows[i].k == &st->other)
			put(t, "[other kernels]");
		else if (!rows[i].k->len)
			put(t, "[unnamed kernel]");
		else
			put_text_name(t, rows[i].k->name, rows[i].k->len);
		put(t, "\n");
	}
	free(rows);
}

static void put_text(struct text *t, const struct stats *st, bool final)
{
	const struct period *p = &st->run;
	__u64 lost = 0, span = p->first_ns ? p->last_ns - p->first_ns : 0;
	char a[32];
	__u32 i;

	put(t, "xpusup statistics (%s)\n\n", final ? "final" : "so far: the run goes on");
	put(t, "Span %s: %" PRIu64 " events in %" PRIu64 " batches\n",
	    human_ns(a, sizeof(a), (double)span), (uint64_t)p->events, (uint64_t)p->batches);
	if (p->cpu.samples)
		put_text_cpu(t, st);
	if (gpu_seen(p))
		put_text_gpu(t, st, final);
	else
		put(t, "\nGPU: no activity recorded\n");
	if (p->by_kind[XPU_REC_PMU_COUNTER])
		put_text_counters(t, st);

	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		lost += p->lost_by_cause[i];
	put(t, "\nLosses: %" PRIu64 " records lost in %" PRIu64 " LOSS records", (uint64_t)lost,
	    (uint64_t)p->loss_records);
	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		if (p->lost_by_cause[i])
			put(t, "; %s %" PRIu64 " (%s)", xpu_loss_cause__name(i),
			    (uint64_t)p->lost_by_cause[i], loss_stage(i));
	put(t,
	    "\n  %" PRIu64 " events missed between the correlators and this sink, %" PRIu64
	    " sequence rewinds\n",
	    (uint64_t)st->seq.missed, (uint64_t)st->seq.rewinds);
}

/* ---- files --------------------------------------------------------------------------- */

static int write_file(const char *path, const struct text *t, char *why, size_t why_len)
{
	struct out *o;
	int err;

	if (t->failed) {
		snprintf(why, why_len, "out of memory writing %s", path);
		return -ENOMEM;
	}
	err = out__open(&o, path, why, why_len);
	if (err)
		return err;
	out__write(o, t->p, t->len);
	return out__commit(o, why, why_len);
}

static int write_totals(struct stats *st, bool final, char *why, size_t why_len)
{
	struct text t = { 0 };
	int err;

	put_json(&t, st, final);
	err = write_file(st->path, &t, why, why_len);
	if (!err && st->text[0]) {
		t.len = 0;
		put_text(&t, st, final);
		err = write_file(st->text, &t, why, why_len);
	}
	text_free(&t);
	if (!err)
		st->writes++;
	return err;
}

/* mkdir -p of path's folder, as out.h does for the other files. */
static void make_parents(const char *path)
{
	char dir[STATS_PATH_MAX], *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return;
	*p = 0;
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(dir, 0755); /* if it fails, open says why */
		*p = '/';
	}
	mkdir(dir, 0755);
}

/* Append the pending interval lines. The file is a plain O_APPEND file, not an out.h
 * one: it grows by a line an interval, and a line must not wait for a rename. A new
 * session's sink truncates it; a restarted one appends (its lines number from 0 again). */
static int write_pending(struct stats *st, char *why, size_t why_len)
{
	int fd, err = 0;
	ssize_t n;

	if (!st->intervals_opened)
		make_parents(st->intervals);
	fd = open(st->intervals,
		  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (st->intervals_opened ? 0 : O_TRUNC),
		  0644);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_len, "unable to open %s: %s", st->intervals, strerror(errno));
		return err;
	}
	st->intervals_opened = true;
	while (st->pending.len) {
		n = write(fd, st->pending.p, st->pending.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			snprintf(why, why_len, "unable to write %s: %s", st->intervals,
				 strerror(-err));
			break;
		}
		memmove(st->pending.p, st->pending.p + n, st->pending.len - (size_t)n);
		st->pending.len -= (size_t)n;
	}
	close(fd);
	return err;
}

/* One interval's line: its statistics and the SM-active windows closed during it. */
static void put_interval(struct stats *st, __u64 now_ns)
{
	struct text *t = &st->pending;
	size_t start = t->len;
	struct sm_counts c;

	if (t->len > PENDING_MAX) { /* the file has been failing for long: keep the newest */
		for (start = 0; start < t->len; start++) /* the lines held, not every interval */
			st->lines_dropped += t->p[start] == '\n';
		t->len = 0;
		start = 0;
	}
	sm_active__counts(st->sm, &c);
	put(t,
	    "{\"interval\": %" PRIu64 ", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
	    ", \"windows_missing\": %" PRIu64 ",\n",
	    (uint64_t)st->n_intervals, (uint64_t)st->interval_start, (uint64_t)now_ns,
	    (uint64_t)(c.windows_closed - st->next_window > SM_WINDOWS_KEPT ?
			       c.windows_closed - st->next_window - SM_WINDOWS_KEPT :
			       0));
	/* the interval's own numbers: missed and rewinds are those since the last line */
	st->cur.missed = st->seq.missed - st->run.missed;
	st->cur.rewinds = st->seq.rewinds - st->run.rewinds;
	put_period(t, st, &st->cur, false);
	put_sm_active(t, st,
		      st->cur.first_ns < st->run.first_ns || !st->run.first_ns ? st->cur.first_ns :
										 st->run.first_ns,
		      st->cur.last_ns > st->run.last_ns ? st->cur.last_ns : st->run.last_ns, true,
		      st->next_window);
	put(t, "}\n");
	st->next_window = c.windows_closed;
	if (t->failed) { /* no memory for the line: drop it, keep the older ones */
		t->failed = false;
		t->len = start;
		st->lines_dropped++;
		return;
	}
	/* one JSON document a line: the line breaks inside it go */
	for (; start < t->len - 1; start++)
		if (t->p[start] == '\n')
			t->p[start] = ' ';
}

/* End an interval (and, final, the run): the interval's line, the merge, the totals. */
static int flush(struct stats *st, __u64 now_ns, bool final, char *why, size_t why_len)
{
	char why2[512];
	int err = 0, err2;

	sm_active__close(st->sm, final);
	if (st->interval_ns) {
		put_interval(st, now_ns);
		st->n_intervals++;
		st->interval_start = now_ns;
		err = write_pending(st, why, why_len);
	}
	period_merge(st);
	/* the first problem is the one shown */
	err2 = write_totals(st, final, err ? why2 : why, err ? sizeof(why2) : why_len);
	return err ? err : err2;
}

static int stats_tick(void *state, __u64 now_ns, char *why, size_t why_len)
{
	struct stats *st = state;
	int err;

	if (!st->interval_ns)
		return FMT_IDLE;
	if (!st->last_interval) {
		st->last_interval = st->interval_start = now_ns;
		return FMT_IDLE;
	}
	if (now_ns - st->last_interval < st->interval_ns)
		return FMT_IDLE;
	st->last_interval = now_ns;
	err = flush(st, now_ns, false, why, why_len);
	/* never FMT_COMPLETE: a restarted stats sink cannot rebuild its sketches from the
	 * JSON, so it starts over, and the sink counts the earlier events as state_lost */
	return err ? err : FMT_WROTE;
}

static int stats_finish(void *state, char *why, size_t why_len)
{
	return flush(state, xpu_now_ns(), true, why, why_len);
}

static void stats_free(void *state)
{
	struct stats *st = state;
	__u32 i;

	if (!st)
		return;
	if (st->kernels)
		for (i = 0; i < st->n_kernels; i++) {
			sketch__free(&st->kernels[i]->run);
			sketch__free(&st->kernels[i]->cur);
			free(st->kernels[i]->name);
			free(st->kernels[i]);
		}
	for (i = 0; st->cpu.fns && i <= st->cpu.fn_mask; i++) {
		if (!st->cpu.fns[i])
			continue;
		free(st->cpu.fns[i]->name);
		free(st->cpu.fns[i]);
	}
	free(st->cpu.fns);
	free(st->cpu.procs);
	free(st->cpu.threads);
	for (i = 0; i < st->ctr.n_names; i++)
		free(st->ctr.names[i].name);
	free(st->ctr.groups);
	sketch__free(&st->other.run);
	sketch__free(&st->other.cur);
	sketch__free(&st->run.queue);
	sketch__free(&st->cur.queue);
	free(st->kernels);
	free(st->slots);
	free(st->launches.slots);
	free(st->launches.fifo);
	sm_active__free(st->sm);
	sink_clocks__free(&st->clocks);
	text_free(&st->pending);
	free(st);
}

static unsigned int stats_counters(void *state, const char **names, __u64 *values, unsigned int max)
{
	struct stats *st = state;
	struct sm_counts c;
	__u64 v[8];
	unsigned int i;

	sm_active__counts(st->sm, &c);
	v[0] = st->n_kernels;
	v[1] = st->gpu_records;
	v[2] = st->run.queue_unresolved + st->cur.queue_unresolved;
	v[3] = c.windows_closed;
	v[4] = c.late;
	v[5] = st->writes;
	v[6] = st->run.cpu.samples + st->cur.cpu.samples;
	v[7] = st->cpu.n_fns;
	for (i = 0; i < sizeof(v) / sizeof(v[0]) && i < max; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	return i;
}

/* ---- options ------------------------------------------------------------------------- */

/* path with its extension (if any) replaced by ext: out/stats.json -> out/stats.txt */
static int beside(char *buf, size_t size, const char *path, const char *ext)
{
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
	size_t stem = dot && dot > (slash ? slash + 1 : path) ? (size_t)(dot - path) : strlen(path);

	if (stem + strlen(ext) >= size)
		return -ENAMETOOLONG;
	snprintf(buf, size, "%.*s%s", (int)stem, path, ext);
	return 0;
}

/* key's file (v its value, NULL when not given): "none", the name given, or beside path. */
static int file_option(const struct fmt_env *env, const char *key, const char *v, char *buf,
		       size_t size, const char *path, const char *ext, char *why, size_t why_len)
{
	int err;

	if (v && !strcmp(v, "none")) {
		buf[0] = 0;
		return 0;
	}
	err = v ? env->path(env->ctx, key, buf, size) : beside(buf, size, path, ext);
	if (!err && !strcmp(buf, path))
		err = -EINVAL;
	if (err)
		snprintf(why, why_len, "bad '%s': %s", key,
			 err == -EINVAL ? "the same file as 'path'" : strerror(-err));
	return err ? -EINVAL : 0;
}

static int stats_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct stats *st = calloc(1, sizeof(*st));
	struct stats_options o;
	int err;

	if (!st)
		return -ENOMEM;
	st->intervals_opened = env->resume; /* a restarted sink appends to its lines */
	st->status = env->status;
	st->cpu.max_fns = CPU_FUNCTIONS_MAX;
	sketch__init(&st->run.queue);
	sketch__init(&st->cur.queue);
	err = env->path(env->ctx, "path", st->path, sizeof(st->path));
	if (err) {
		snprintf(why, why_len, "no output file: set 'path'");
		err = -EINVAL;
		goto fail;
	}
	err = conf_kind__options(&stats_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (!err)
		err = file_option(env, "text", o.text, st->text, sizeof(st->text), st->path, ".txt",
				  why, why_len);
	if (!err)
		err = file_option(env, "intervals", o.intervals, st->intervals,
				  sizeof(st->intervals), st->path, ".intervals.jsonl", why,
				  why_len);
	if (err)
		goto fail;
	st->interval_ns = o.interval_s * 1000000000ull;
	if (st->interval_ns && !st->intervals[0]) {
		snprintf(why, why_len, "interval_s needs an 'intervals' file (it is none)");
		err = -EINVAL;
		goto fail;
	}
	st->window_ns = o.window_ms * 1000000ull;
	st->lateness_ns = o.lateness_ms * 1000000ull;
	st->max_kernels = (__u32)o.max_kernels;
	for (st->mask = 16; st->mask < 2 * st->max_kernels; st->mask <<= 1)
		;
	st->mask--;
	st->slots = calloc((size_t)st->mask + 1, sizeof(*st->slots));
	st->kernels = calloc(st->max_kernels, sizeof(*st->kernels));
	st->launches.slots = calloc(LAUNCH_SLOTS, sizeof(*st->launches.slots));
	st->launches.fifo = calloc(LAUNCH_MAP_MAX, sizeof(*st->launches.fifo));
	st->sm = sm_active__new(st->window_ns, st->lateness_ns);
	if (!st->slots || !st->kernels || !st->launches.slots || !st->launches.fifo || !st->sm) {
		snprintf(why, why_len, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	*out = st;
	return 0;
fail:
	stats_free(st);
	return err;
}

const struct fmt_ops fmt_stats = {
	.kind = "stats",
	.open = stats_open,
	.batch = stats_batch,
	.tick = stats_tick,
	.finish = stats_finish,
	.free = stats_free,
	.counters = stats_counters,
};
