// SPDX-License-Identifier: MIT
/*
 * Exact (pid, correlation id) join. Data structures, all allocated in join__new:
 *
 *   entries[]   pending state per key, a free list through `next`
 *   keys[]      open-addressing hash (linear probing, backward-shift deletion) -> entry index
 *   pids[]      open-addressing hash of processes -> a doubly linked list of their entries,
 *               so PROC_EXIT touches only that process's state
 *   waiting[]   copies of GPU records that arrived before their launch side, listed per entry
 *   ttl_q       FIFO of (deadline, entry, generation): entries are created in time order, so
 *               deadlines come out sorted and expiry pops only what is due
 *   exit_q      the same for exit-grace deadlines (PROC_EXIT arrives in time order too)
 *   linger_q    the same for keys whose GPU work matched: kept linger_ns more, not ttl_ns
 *   streams[]   per-(pid, device, stream) state, hashed by stream_slots[]; stream_q holds
 *               one item per stream, due stream_idle_ns after it was (re)queued: a stream
 *               touched meanwhile is requeued, so one goes between one and two idle periods
 *               after its last activity, at a cost of what is due
 *   gone[]      processes waiting out their exit grace, in exit order; when due, their
 *               streams and counter readings go (a table scan, only for a process that had
 *               streams) and the gone callback drops what the shard keeps (names)
 *   ctr[]       per process with process-scope counter readings, the last CTR_READINGS
 *               readings of each of its counters, hashed by ctr_slots[]; stack_ts[] beside
 *               stacks[] holds when each open range began, for the counters over a range
 *               and for placing a CPU sample by its timestamp
 *   hist[]      per thread that has closed ranges, the last HIST_N of them (allocated at its
 *               first pop, at most HIST_THREADS at once); horizon[] the newest end that no
 *               history holds any more. A process's threads go when its exit grace has passed
 *   gnodes[]    CUDA graph node creation stacks, a ring in creation order (the newest
 *               max_graph_nodes), hashed by gnode_slots[] on (pid, node id)
 *
 * A queue item whose generation no longer matches its entry (the entry was matched away,
 * evicted, or reused) is skipped when it reaches the head.
 */
#include "actors/correlator/join.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

#define NIL 0xffffffffu
#define WAIT_REC_MAX 120 /* the largest GPU activity record: GPU_KERNEL */
#define PIDS_MAX (1u << 17) /* process slots at most: 98304 processes at 3/4 load */

enum {
	F_USED = 1 << 0,
	F_LAUNCH = 1 << 1, /* a LAUNCH record (with its stack) arrived */
	F_API = 1 << 2, /* a CUDA_API record arrived */
	F_GPU_OUT = 1 << 3, /* a GPU record of this key already went out */
	F_EXITING = 1 << 4, /* queued on exit_q */
	F_LINGER = 1 << 5, /* matched: queued on linger_q */
	F_AWAIT = 1 << 6, /* its CUDA_API came, its kernels wait for the LAUNCH: on launch_q */
	F_GAVE_UP = 1 << 7, /* the LAUNCH did not come within launch_wait_ns */
};

struct entry {
	__u64 corr;
	__u64 launch_id; /* event id of the LAUNCH record, 0: none yet */
	__u64 api_id; /* event id of the CUDA_API record, 0: none yet */
	__u64 range_id; /* innermost user range open on the launching thread, 0: none */
	__u64 root_id; /* outermost one */
	__u64 *stack; /* the LAUNCH user stack, n_stack frames, owned */
	__u32 pid;
	__u32 gen;
	__u16 flags;
	__u16 n_stack;
	__u32 next; /* free list */
	__u32 pid_prev, pid_next;
	__u32 wait_head, wait_tail;
};

struct waiting {
	_Alignas(8) unsigned char rec[WAIT_REC_MAX];
	__u64 id; /* event id given at arrival */
	__u32 next;
	__u16 size;
	__u16 enrich; /* its source's enrich stages */
};

struct pidstate {
	__u32 pid; /* 0: empty slot */
	__u32 head; /* first entry of this process */
	__u32 n; /* entries */
	__u32 reserved;
};

/* Per-thread stack of open RANGE events (seed 001's call stacks): what parent_id, root_id
 * and inside_range links come from. A thread's PROC_EXIT closes its open ranges; its entry
 * goes when its process's exit grace has passed; when the table is full new threads get no
 * nesting. */
#define THREADS_MAX 16384
#define NEST_MAX 32

/*
 * The last ranges that closed on a thread, for CPU samples that arrive after the ranges
 * around them closed: CPU samples come from the eBPF CPU source tens of ms after they were
 * taken, while a program's range records come within its 10 ms batches. Kept in pop order
 * (a ring), so a search from the newest stops at the first range that ended before the
 * event. HIST_N = 128 covers about 64 ms of back-to-back 0.5 ms ranges. 4 KiB a thread, at
 * most HIST_THREADS threads at once (16 MiB); a thread that finds them all taken keeps no
 * history, and its samples older than its last pop are counted as too old.
 */
#define HIST_N 128
#define HIST_THREADS 4096

struct closed {
	__u64 id; /* the push's event id */
	__u64 root; /* the outermost range around it (itself for an outermost one) */
	__u64 push_ts, pop_ts;
};

struct hist {
	__u32 n; /* held, up to HIST_N */
	__u32 next; /* where the next one goes */
	struct closed c[HIST_N];
};

/* A CUDA graph node's creation stack (a LAUNCH with XPU_LAUNCH_GRAPH_NODE). */
struct gnode {
	__u64 node; /* the node id, without XPU_LAUNCH_GRAPH_NODE */
	__u64 *stack; /* n_stack user frames, owned */
	__u32 pid; /* 0: free */
	__u16 n_stack;
	__u16 reserved;
};

/* Probed on every CPU-side record: kept small (16 bytes) so the table stays in cache; the
 * stacks live in a parallel array touched only inside ranges. */
struct nest {
	__u32 pid, tid; /* pid 0: empty slot */
	__u32 depth;
	__u32 reserved;
};

/* Per process (at most RECENT_PIDS; more are not remembered): the last RECENT_N CUDA_API
 * calls, which CPU samples inside them link to (sampled_in) and which the timestamp strategy
 * joins GPU records to; and, with that strategy, the last RECENT_SAMPLES CPU samples with
 * their user stacks, its fallback when no call is near. */
#define RECENT_PIDS 2048
#define RECENT_N 64
#define RECENT_SAMPLES 4
#define SAMPLE_FRAMES 48

struct recent_sample {
	__u64 ts, id;
	__u32 tid, n_user;
	__u64 ips[SAMPLE_FRAMES];
};

struct recent {
	__u32 pid; /* 0: empty slot */
	__u32 n; /* calls stored, up to RECENT_N */
	__u32 next; /* where the next one goes */
	__u32 n_samples, next_sample;
	__u64 ts[RECENT_N], end[RECENT_N], id[RECENT_N];
	__u32 tid[RECENT_N];
	struct recent_sample samples[RECENT_SAMPLES];
};

/* Per-(pid, device, stream) state (seed 002's stream handlers): the last STREAM_K
 * activities of the stream by start time, for same_stream_prev links and overlap checks. */
#define STREAM_K 4
#define GONE_MAX 4096

struct stream {
	__u32 pid, device, stream, gen;
	__u64 touched_ns; /* shard time of its last activity */
	__u32 n; /* activities held, sorted by start */
	__u32 next; /* free list */
	__u64 start[STREAM_K], end[STREAM_K], id[STREAM_K];
};

struct gone {
	__u64 deadline;
	__u32 pid;
	__u32 reserved;
};

/*
 * Counter readings for the `counters` stage: per process (at most CTR_PIDS at once; when
 * full, the one read least recently goes), per counter (at most CTR_PER_PID, in the order of
 * their first reading), the last CTR_READINGS readings as (time, scaled total), sorted by
 * time. 32 readings at the default 100 ms interval reach 3.2 s back, about as late as CUPTI
 * delivers activity in its buffers. A process also remembers its last CTR_STARTS start/end
 * ranges' starts (start ranges may end on another thread: the nesting stacks cannot).
 */
#define CTR_PIDS 1024
#define CTR_PER_PID 16
#define CTR_READINGS 32
#define CTR_STARTS 16
#define CTR_REACH 2 /* extrapolate at most this many intervals past the readings */

enum ctr_role {
	CTR_OTHER,
	CTR_INSTRUCTIONS,
	CTR_CYCLES,
};

struct ctr_series {
	__u64 counter_id;
	__u32 n; /* readings held */
	__u32 reserved;
	__u64 ts[CTR_READINGS];
	double total[CTR_READINGS]; /* value * time_enabled / time_running */
};

struct ctr_proc {
	__u32 pid; /* 0: free */
	__u32 n; /* counters */
	__u32 next; /* free list */
	__u32 n_starts, next_start;
	__u64 touched_ns; /* shard time of its last reading: the least recent goes first */
	__u64 start_id[CTR_STARTS], start_ts[CTR_STARTS];
	struct ctr_series s[CTR_PER_PID];
};

struct qitem {
	__u64 deadline;
	__u32 entry;
	__u32 gen;
};

struct fifo {
	struct qitem *items;
	__u32 cap, head, len;
};

struct join {
	struct join_opts opts;
	join_emit_fn emit;
	join_name_fn name;
	void *ctx;
	struct entry *entries;
	__u32 free_entry, hw_entry; /* hw_*: slots below it have been used */
	__u32 *keys;
	__u32 key_mask;
	struct pidstate *pids;
	__u32 pid_mask;
	__u32 n_pids;
	struct waiting *waiting;
	__u32 free_wait, hw_wait;
	struct fifo ttl_q, exit_q, linger_q;
	struct fifo launch_q; /* keys whose kernels wait for their LAUNCH (launch_wait_ns) */
	struct nest *threads; /* 2 * THREADS_MAX slots */
	__u64 (*stacks)[NEST_MAX]; /* the open ranges of threads[i] */
	struct recent *recent; /* 2 * RECENT_PIDS slots */
	__u32 n_recent;
	__u32 n_threads;
	struct stream *streams;
	__u32 *stream_slots;
	__u32 stream_mask, free_stream, hw_stream;
	struct fifo stream_q;
	__u64 *stream_pids; /* bitmap by pid & 0xffff: may have streams (a set bit may be stale) */
	struct gone *gone;
	__u32 gone_head, gone_len;
	join_gone_fn gone_fn;
	__u64 (*stack_ts)[NEST_MAX]; /* when each of stacks[] began */
	struct hist **hist; /* by thread slot: its closed ranges, NULL: none yet */
	__u64 *horizon; /* by thread slot: the newest pop ts no history holds any more */
	__u32 n_hist;
	__u64 *range_pids; /* bitmap by pid & 0xffff: may have threads (a set bit may be stale) */
	struct gnode *gnodes; /* max_graph_nodes, a ring: gnode_head is the next to fill */
	__u32 *gnode_slots; /* index + 1, 0 empty */
	__u32 gnode_mask, gnode_head;
	__u64 *graph_pids; /* bitmap by pid & 0xffff: may have node stacks */
	struct ctr_proc *ctr; /* CTR_PIDS */
	__u32 *ctr_slots; /* 2 * CTR_PIDS: index + 1, 0 empty */
	__u32 ctr_free, ctr_hw;
	__u64 next_id;
	__u64 now_ns; /* of the record being processed */
	unsigned int enrich; /* enrich stages of the record being emitted */
	struct join_stats st;
};

size_t join__entry_size(void)
{
	/* the entry, its hash slots (load <= 1/2), its share of the three queues (twice
	 * max_pending each); the process table is fixed (at most 2 MiB) */
	return sizeof(struct entry) + 2 * sizeof(__u32) + 6 * sizeof(struct qitem);
}

static __u64 hash64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static __u64 key_hash(__u32 pid, __u64 corr)
{
	return hash64(corr * 0x9e3779b97f4a7c15ull ^ pid);
}

static __u32 pow2_at_least(__u64 n)
{
	__u64 p = 16;

	while (p < n)
		p <<= 1;
	return (__u32)p;
}

/* ---- slot allocation: the free list, else the next never-used slot ---- */

static __u32 entry_take(struct join *j)
{
	__u32 idx = j->free_entry;

	if (idx != NIL)
		j->free_entry = j->entries[idx].next;
	else if (j->hw_entry < j->opts.max_pending)
		idx = j->hw_entry++;
	return idx;
}

static __u32 wait_take(struct join *j)
{
	__u32 idx = j->free_wait;

	if (idx != NIL)
		j->free_wait = j->waiting[idx].next;
	else if (j->hw_wait < j->opts.max_waiting)
		idx = j->hw_wait++;
	return idx;
}

static __u32 stream_take(struct join *j)
{
	__u32 idx = j->free_stream;

	if (idx != NIL)
		j->free_stream = j->streams[idx].next;
	else if (j->hw_stream < j->opts.max_streams)
		idx = j->hw_stream++;
	return idx;
}

/* ---- the key hash ---- */

static __u32 key_find(const struct join *j, __u32 pid, __u64 corr, __u32 *slot)
{
	__u32 i = (__u32)key_hash(pid, corr) & j->key_mask, e;

	for (;; i = (i + 1) & j->key_mask) {
		e = j->keys[i] - 1; /* 0 (empty) reads as NIL */
		if (e == NIL || (j->entries[e].corr == corr && j->entries[e].pid == pid)) {
			*slot = i;
			return e;
		}
	}
}

/* Backward-shift deletion keeps probe sequences unbroken without tombstones. */
static void key_delete(struct join *j, __u32 slot)
{
	__u32 i = slot, k, e, home;

	for (;;) {
		j->keys[i] = 0;
		for (k = (i + 1) & j->key_mask;; k = (k + 1) & j->key_mask) {
			e = j->keys[k] - 1;
			if (e == NIL)
				return;
			home = (__u32)key_hash(j->entries[e].pid, j->entries[e].corr) & j->key_mask;
			/* Can e move to i? Only if i lies cyclically in [home, k). */
			if (((k - home) & j->key_mask) >= ((k - i) & j->key_mask))
				break;
		}
		j->keys[i] = e + 1;
		i = k;
	}
}

/* ---- processes ---- */

static __u32 pid_slot(struct join *j, __u32 pid, bool create)
{
	__u32 i = (__u32)hash64(pid) & j->pid_mask;

	for (;; i = (i + 1) & j->pid_mask) {
		if (j->pids[i].pid == pid)
			return i;
		if (!j->pids[i].pid) {
			if (!create)
				return NIL;
			j->pids[i] = (struct pidstate){ .pid = pid, .head = NIL };
			j->n_pids++;
			return i;
		}
	}
}

static void pid_delete(struct join *j, __u32 slot)
{
	__u32 i = slot, k, home;
	struct pidstate p;

	j->n_pids--;
	for (;;) {
		j->pids[i].pid = 0;
		for (k = (i + 1) & j->pid_mask;; k = (k + 1) & j->pid_mask) {
			p = j->pids[k];
			if (!p.pid)
				return;
			home = (__u32)hash64(p.pid) & j->pid_mask;
			if (((k - home) & j->pid_mask) >= ((k - i) & j->pid_mask))
				break;
		}
		j->pids[i] = p;
		i = k;
	}
}

/* ---- queues ---- */

static bool item_live(const struct join *j, const struct qitem *it)
{
	return (j->entries[it->entry].flags & F_USED) && j->entries[it->entry].gen == it->gen;
}

/* A stream slot is in use when its pid is set; gen tells a reused slot from the old one. */
static bool stream_live(const struct join *j, const struct qitem *it)
{
	return j->streams[it->entry].pid && j->streams[it->entry].gen == it->gen;
}

/*
 * Each live entry has at most one live item per queue, and capacity is twice max_pending,
 * so a full queue holds at least max_pending stale items (entries removed through the other
 * queue or evicted): dropping them, in order, frees at least half. Amortised O(1) a push.
 */
static void fifo_compact(const struct join *j, struct fifo *q)
{
	bool (*live)(const struct join *, const struct qitem *) = q == &j->stream_q ? stream_live :
										      item_live;
	__u32 i, n = 0;

	for (i = 0; i < q->len; i++) {
		struct qitem it = q->items[(q->head + i) % q->cap];

		if (live(j, &it))
			q->items[(q->head + n++) % q->cap] = it;
	}
	q->len = n;
}

static void fifo_push(const struct join *j, struct fifo *q, __u64 deadline, __u32 entry, __u32 gen)
{
	if (q->len == q->cap)
		fifo_compact(j, q);
	q->items[(q->head + q->len) % q->cap] = (struct qitem){ deadline, entry, gen };
	q->len++;
}

static struct qitem *fifo_peek(struct fifo *q)
{
	return q->len ? &q->items[q->head] : NULL;
}

static void fifo_pop(struct fifo *q)
{
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

/* ---- events ---- */

static void fill_common(struct xpu_cevent *ev, const struct xpu_rec *h, __u64 id)
{
	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	ev->kind = h->type;
	ev->flags = h->flags;
	ev->pid = h->pid;
	ev->tid = h->tid;
	ev->ts_ns = h->ts_ns;
}

static void fill_gpu(struct xpu_cevent *ev, __u64 start, __u64 end, __u64 corr, __u32 device,
		     __u32 context, __u32 stream)
{
	ev->ts_ns = start;
	ev->end_ns = end;
	ev->correlation_id = corr;
	ev->device = device;
	ev->context = context;
	ev->stream = stream;
}

/* The correlated event for a raw record, before any join. Names travel as STRING records
 * and are resolved by the shard's string table (not here): name stays NULL. */
static void to_cevent(const struct join *j, struct xpu_cevent *ev, const void *rec, __u64 id)
{
	const struct xpu_rec *h = rec;

	fill_common(ev, h, id);
	switch (h->type) {
	case XPU_REC_CPU_SAMPLE: {
		const struct xpu_cpu_sample *s = rec;

		ev->cpu = s->cpu;
		ev->value = s->weight;
		ev->n_kernel = s->n_kernel;
		ev->n_user = s->n_user;
		ev->stack = s->ips;
		ev->name = s->comm; /* the process name travels with every sample */
		ev->name_len = (__u32)strnlen(s->comm, sizeof(s->comm));
		break;
	}
	case XPU_REC_LAUNCH: {
		const struct xpu_launch *l = rec;

		ev->correlation_id = l->correlation_id;
		ev->api_id = l->api_id;
		ev->n_user = l->n_user;
		ev->stack = l->ips;
		break;
	}
	case XPU_REC_CUDA_API: {
		const struct xpu_cuda_api *a = rec;

		ev->end_ns = a->end_ns;
		ev->correlation_id = a->correlation_id;
		ev->api_id = a->api_id;
		ev->sub_kind = a->domain;
		break;
	}
	case XPU_REC_GPU_KERNEL: {
		const struct xpu_gpu_kernel *k = rec;

		fill_gpu(ev, k->start_ns, k->end_ns, k->correlation_id, k->device_id, k->context_id,
			 k->stream_id);
		ev->graph_id = k->graph_id;
		ev->graph_node_id = k->graph_node_id;
		memcpy(ev->grid, k->grid, sizeof(ev->grid));
		memcpy(ev->block, k->block, sizeof(ev->block));
		ev->registers = k->registers;
		ev->shared_mem = k->static_smem + k->dynamic_smem;
		if (j->name && k->name_id && (j->enrich & CONF_ENRICH_NAMES))
			ev->name = j->name(k->hdr.pid, k->name_id, XPU_STR_KERNEL, &ev->name_len,
					   j->ctx);
		break;
	}
	case XPU_REC_GPU_MEMCPY: {
		const struct xpu_gpu_memcpy *m = rec;

		fill_gpu(ev, m->start_ns, m->end_ns, m->correlation_id, m->device_id, m->context_id,
			 m->stream_id);
		ev->bytes = m->bytes;
		ev->sub_kind = m->copy_kind;
		break;
	}
	case XPU_REC_GPU_MEMSET: {
		const struct xpu_gpu_memset *m = rec;

		fill_gpu(ev, m->start_ns, m->end_ns, m->correlation_id, m->device_id, m->context_id,
			 m->stream_id);
		ev->bytes = m->bytes;
		ev->value = m->value;
		break;
	}
	case XPU_REC_GPU_SYNC: {
		const struct xpu_gpu_sync *y = rec;

		fill_gpu(ev, y->start_ns, y->end_ns, y->correlation_id, y->device_id, y->context_id,
			 y->stream_id);
		ev->sub_kind = y->sync_kind;
		break;
	}
	case XPU_REC_RANGE: {
		const struct xpu_range *r = rec;

		ev->correlation_id = r->range_id;
		ev->sub_kind = r->phase;
		if (r->name_len) {
			ev->name = r->name;
			ev->name_len = r->name_len;
		} else if (j->name && r->name_id && (j->enrich & CONF_ENRICH_NAMES)) {
			ev->name =
				j->name(h->pid, r->name_id, XPU_STR_RANGE, &ev->name_len, j->ctx);
		}
		break;
	}
	case XPU_REC_STRING: {
		const struct xpu_string *str = rec;

		ev->value = str->id;
		ev->sub_kind = str->kind;
		ev->name = str->text;
		ev->name_len = str->len;
		break;
	}
	case XPU_REC_PROC_EXEC: {
		const struct xpu_proc_exec *x = rec;

		ev->name = x->comm;
		ev->name_len = (__u32)strnlen(x->comm, sizeof(x->comm));
		break;
	}
	case XPU_REC_PROC_EXIT: {
		const struct xpu_proc_exit *x = rec;

		ev->value = (__u64)(__s64)x->exit_code;
		ev->name = x->comm;
		ev->name_len = (__u32)strnlen(x->comm, sizeof(x->comm));
		break;
	}
	case XPU_REC_LOSS:
		ev->sub_kind = ((const struct xpu_loss *)rec)->cause;
		ev->value = ((const struct xpu_loss *)rec)->count;
		break;
	case XPU_REC_PMU_COUNTER: {
		const struct xpu_pmu_counter *c = rec;

		ev->cpu = c->cpu;
		ev->value = c->value;
		ev->delta = c->delta;
		ev->sub_kind = c->scope;
		/* enabled / running: 1 unless multiplexed; 0 for a counter that never ran (its
		 * value says nothing); running past enabled cannot come from the kernel */
		if (!c->time_running)
			ev->scale = 0.0;
		else if (c->time_running >= c->time_enabled)
			ev->scale = 1.0;
		else
			ev->scale = (double)c->time_enabled / (double)c->time_running;
		if (j->name && c->counter_id && (j->enrich & CONF_ENRICH_NAMES))
			ev->name = j->name(h->pid, c->counter_id, XPU_STR_COUNTER, &ev->name_len,
					   j->ctx);
		break;
	}
	default:
		break;
	}
}

/* Every GPU activity kind starts start_ns, end_ns, correlation_id after the header. */
_Static_assert(offsetof(struct xpu_gpu_kernel, correlation_id) == 40 &&
		       offsetof(struct xpu_gpu_memcpy, correlation_id) == 40 &&
		       offsetof(struct xpu_gpu_memset, correlation_id) == 40 &&
		       offsetof(struct xpu_gpu_sync, correlation_id) == 40,
	       "GPU activity records share their correlation_id offset");

static __u64 gpu_corr(const void *rec)
{
	return ((const struct xpu_gpu_sync *)rec)->correlation_id;
}

#define THREAD_MASK (2 * THREADS_MAX - 1)

static __u32 thread_home(__u32 pid, __u32 tid)
{
	return (__u32)hash64((__u64)pid << 32 | tid) & THREAD_MASK;
}

static struct nest *thread_get(struct join *j, __u32 pid, __u32 tid, bool create)
{
	__u32 i = thread_home(pid, tid);

	for (;; i = (i + 1) & THREAD_MASK) {
		struct nest *t = &j->threads[i];

		if (t->pid == pid && t->tid == tid)
			return t;
		if (!t->pid) {
			if (!create || j->n_threads >= THREADS_MAX)
				return NULL;
			j->n_threads++;
			*t = (struct nest){ .pid = pid, .tid = tid };
			j->range_pids[(pid & 0xffff) / 64] |= 1ull << (pid % 64);
			return t;
		}
	}
}

/* Free the thread in table slot `slot` and its history; backward-shift deletion as for
 * keys, moving the parallel arrays with the entry. */
static void thread_remove_slot(struct join *j, __u32 slot)
{
	__u32 i = slot, k, home;

	if (j->hist[slot]) {
		free(j->hist[slot]);
		j->n_hist--;
	}
	j->n_threads--;
	for (;;) {
		j->threads[i].pid = 0;
		j->hist[i] = NULL;
		j->horizon[i] = 0;
		for (k = (i + 1) & THREAD_MASK;; k = (k + 1) & THREAD_MASK) {
			if (!j->threads[k].pid)
				return;
			home = thread_home(j->threads[k].pid, j->threads[k].tid);
			if (((k - home) & THREAD_MASK) >= ((k - i) & THREAD_MASK))
				break;
		}
		j->threads[i] = j->threads[k];
		memcpy(j->stacks[i], j->stacks[k], j->threads[k].depth * sizeof(j->stacks[0][0]));
		memcpy(j->stack_ts[i], j->stack_ts[k],
		       j->threads[k].depth * sizeof(j->stack_ts[0][0]));
		j->hist[i] = j->hist[k];
		j->horizon[i] = j->horizon[k];
		i = k;
	}
}

/* Drop every thread of pid once its exit grace has passed: its late samples have come. A
 * scan of the table, only for a process that may have had ranges. */
static void nest_drop_pid(struct join *j, __u32 pid)
{
	__u32 start, k, i;

	if (!(j->range_pids[(pid & 0xffff) / 64] & 1ull << (pid % 64)) || !j->n_threads)
		return;
	/* Begin at an empty slot, so no cluster wraps past the start (as stream_drop_pid). */
	for (start = 0; j->threads[start].pid; start++)
		;
	for (k = 0; k <= THREAD_MASK; k++) {
		i = (start + k) & THREAD_MASK;
		while (j->threads[i].pid == pid)
			thread_remove_slot(j, i);
	}
}

static __u64 *stack_of(struct join *j, const struct nest *t)
{
	return j->stacks[t - j->threads];
}

static void add_link(struct xpu_cevent *ev, __u32 type, __u64 target)
{
	if (target && ev->n_links < XPU_WIRE_LINKS_MAX)
		ev->links[ev->n_links++] = (struct xpu_link){ .type = type, .target = target };
}

/* ---- counters ---- */

static __u32 ctr_home(__u32 pid)
{
	return (__u32)hash64((__u64)pid * 0x9e3779b97f4a7c15ull) & (2 * CTR_PIDS - 1);
}

/* The slot of pid's state in ctr_slots: its own, or the empty one where it belongs. */
static __u32 ctr_slot(const struct join *j, __u32 pid)
{
	__u32 i = ctr_home(pid), e;

	for (;; i = (i + 1) & (2 * CTR_PIDS - 1)) {
		e = j->ctr_slots[i];
		if (!e || j->ctr[e - 1].pid == pid)
			return i;
	}
}

static struct ctr_proc *ctr_find(const struct join *j, __u32 pid)
{
	__u32 e = j->ctr_slots[ctr_slot(j, pid)];

	return e ? &j->ctr[e - 1] : NULL;
}

/* Free the state in table slot `slot`; backward-shift deletion as for keys. */
static void ctr_remove_slot(struct join *j, __u32 slot)
{
	__u32 mask = 2 * CTR_PIDS - 1, i = slot, k, e = j->ctr_slots[slot] - 1, home;

	j->ctr[e].pid = 0;
	j->ctr[e].next = j->ctr_free;
	j->ctr_free = e;
	j->st.counter_pids--;
	for (;;) {
		j->ctr_slots[i] = 0;
		for (k = (i + 1) & mask;; k = (k + 1) & mask) {
			e = j->ctr_slots[k];
			if (!e)
				return;
			home = ctr_home(j->ctr[e - 1].pid);
			if (((k - home) & mask) >= ((k - i) & mask))
				break;
		}
		j->ctr_slots[i] = e;
		i = k;
	}
}

/* pid's state, made when it has none; when every one is taken, the process read least
 * recently goes (its exit was never seen, or it stopped being counted). */
static struct ctr_proc *ctr_get(struct join *j, __u32 pid)
{
	__u32 slot = ctr_slot(j, pid), e = j->ctr_slots[slot], i, oldest = 0;
	struct ctr_proc *p;

	if (e)
		return &j->ctr[e - 1];
	if (j->ctr_free == NIL && j->ctr_hw == CTR_PIDS) {
		for (i = 1; i < CTR_PIDS; i++) /* a scan, only when a new process finds it full */
			if (j->ctr[i].touched_ns < j->ctr[oldest].touched_ns)
				oldest = i;
		ctr_remove_slot(j, ctr_slot(j, j->ctr[oldest].pid));
		j->st.counter_pids_evicted++;
		slot = ctr_slot(j, pid); /* the table changed */
	}
	if (j->ctr_free != NIL) {
		e = j->ctr_free;
		j->ctr_free = j->ctr[e].next;
	} else {
		e = j->ctr_hw++;
	}
	p = &j->ctr[e];
	p->pid = pid;
	p->n = p->n_starts = p->next_start = 0;
	p->touched_ns = j->now_ns;
	j->ctr_slots[slot] = e + 1;
	j->st.counter_pids++;
	return p;
}

static void ctr_drop_pid(struct join *j, __u32 pid)
{
	__u32 slot = ctr_slot(j, pid);

	if (j->ctr_slots[slot])
		ctr_remove_slot(j, slot);
}

/* Keep one process-scope reading. Its total is perf's estimate for the whole time the
 * counter was enabled (value * enabled / running); a counter that never ran has none. */
static void ctr_reading(struct join *j, const struct xpu_pmu_counter *c)
{
	__u64 t = c->hdr.ts_ns;
	double total = (double)c->value;
	struct ctr_series *s;
	struct ctr_proc *p;
	__u32 i, k;

	if (c->scope != XPU_PMU_SCOPE_PROCESS || !c->hdr.pid)
		return;
	if (!c->time_running) {
		j->st.readings_dropped++;
		return;
	}
	if (c->time_running < c->time_enabled)
		total *= (double)c->time_enabled / (double)c->time_running;
	p = ctr_get(j, c->hdr.pid);
	p->touched_ns = j->now_ns;
	for (i = 0; i < p->n && p->s[i].counter_id != c->counter_id; i++)
		;
	if (i == p->n) {
		if (p->n == CTR_PER_PID) {
			j->st.readings_dropped++;
			return;
		}
		p->s[i].counter_id = c->counter_id;
		p->s[i].n = 0;
		p->n++;
	}
	s = &p->s[i];
	for (k = 0; k < s->n && s->ts[k] < t; k++)
		;
	if (k < s->n && s->ts[k] == t) { /* the same reading again */
		s->total[k] = total;
	} else if (s->n == CTR_READINGS) {
		if (!k) { /* older than every reading held */
			j->st.readings_dropped++;
			return;
		}
		k--; /* the oldest goes */
		memmove(s->ts, s->ts + 1, k * sizeof(s->ts[0]));
		memmove(s->total, s->total + 1, k * sizeof(s->total[0]));
	} else {
		memmove(s->ts + k + 1, s->ts + k, (s->n - k) * sizeof(s->ts[0]));
		memmove(s->total + k + 1, s->total + k, (s->n - k) * sizeof(s->total[0]));
		s->n++;
	}
	s->ts[k] = t;
	s->total[k] = total;
	j->st.readings++;
}

/*
 * A counter's total at t: interpolated between the readings around t; past the newest (or
 * before the oldest) reading, extrapolated at the rate of the interval next to it, at most
 * CTR_REACH such intervals out, and *estimated set. false: fewer than two readings, or t
 * farther out.
 */
static bool series_at(const struct ctr_series *s, __u64 t, double *total, bool *estimated)
{
	__u32 n = s->n, i;
	__u64 span, out;
	double rate;

	if (n < 2)
		return false;
	if (t > s->ts[n - 1] || t < s->ts[0]) {
		i = t > s->ts[n - 1] ? n - 1 : 1; /* the interval [i - 1, i] next to t */
		span = s->ts[i] - s->ts[i - 1];
		out = t > s->ts[n - 1] ? t - s->ts[n - 1] : s->ts[0] - t;
		if (out / CTR_REACH > span)
			return false;
		rate = (s->total[i] - s->total[i - 1]) / (double)span;
		if (!(rate > 0)) /* multiplexing estimates may go back a little */
			rate = 0;
		*total = t > s->ts[n - 1] ? s->total[n - 1] + rate * (double)out :
					    s->total[0] - rate * (double)out;
		*estimated = true;
		return true;
	}
	for (i = 1; s->ts[i] < t; i++) /* ts[0] <= t <= ts[n - 1]: ends at n - 1 at most */
		;
	*total = s->total[i - 1] + (s->total[i] - s->total[i - 1]) * (double)(t - s->ts[i - 1]) /
					   (double)(s->ts[i] - s->ts[i - 1]);
	return true;
}

/* "cycles:u" is cycles with a modifier: the part before ':' says what it counts. */
static enum ctr_role ctr_role(const char *name, __u32 len)
{
	const char *colon = memchr(name, ':', len);
	__u32 n = colon ? (__u32)(colon - name) : len;

	if (n == 12 && !memcmp(name, "instructions", 12))
		return CTR_INSTRUCTIONS;
	if ((n == 6 && !memcmp(name, "cycles", 6)) || (n == 10 && !memcmp(name, "cpu-cycles", 10)))
		return CTR_CYCLES;
	return CTR_OTHER;
}

/*
 * The counters stage: ev gets the deltas of its process's counters over [start, end], at most
 * XPU_WIRE_COUNTERS_MAX of them: instructions first, cycles next (IPC comes from that pair),
 * then the others in the order of their first reading. Counters travel by name, so one whose
 * STRING record never came is left out; so is one without readings near the window.
 */
static void counters_attach(struct join *j, struct xpu_cevent *ev, __u64 start, __u64 end)
{
	static const int pass_role[3] = { CTR_INSTRUCTIONS, CTR_CYCLES, -1 };
	const char *names[CTR_PER_PID];
	__u32 lens[CTR_PER_PID], i, pass, k = 0;
	enum ctr_role roles[CTR_PER_PID];
	bool taken[CTR_PER_PID] = { false }, estimated = false;
	double by_role[3] = { -1, -1, -1 }, t0, t1, d;
	struct ctr_proc *p;

	if (!(j->enrich & CONF_ENRICH_COUNTERS) || !j->name || end <= start ||
	    !(p = ctr_find(j, ev->pid)))
		return;
	for (i = 0; i < p->n; i++) {
		names[i] = j->name(ev->pid, p->s[i].counter_id, XPU_STR_COUNTER, &lens[i], j->ctx);
		if (!names[i] || !lens[i] || lens[i] > XPU_WIRE_COUNTER_NAME_MAX)
			taken[i] = true; /* cannot travel */
		else
			roles[i] = ctr_role(names[i], lens[i]);
	}
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < p->n && k < XPU_WIRE_COUNTERS_MAX; i++) {
			bool e = false;

			if (taken[i] || (pass < 2 && (int)roles[i] != pass_role[pass]))
				continue;
			taken[i] = true;
			if (!series_at(&p->s[i], start, &t0, &e) ||
			    !series_at(&p->s[i], end, &t1, &e))
				continue;
			d = t1 > t0 ? t1 - t0 : 0;
			if (!isfinite(d))
				continue;
			ev->counters[k++] = (struct xpu_wire_counter){ .name = names[i],
								       .name_len = lens[i],
								       .delta = d };
			estimated |= e;
			if (pass < 2) { /* one instructions, one cycles; more count as others */
				by_role[pass] = d;
				break;
			}
		}
	}
	if (!k)
		return;
	ev->n_counters = k;
	if (by_role[0] >= 0 && by_role[1] > 0)
		ev->ipc = by_role[0] / by_role[1];
	ev->counter_flags = estimated ? XPU_COUNTERS_F_ESTIMATED : 0;
	j->st.counted++;
	j->st.counted_estimated += estimated;
}

/* A start/end range of a process with counters: its start, for the counters over it. */
static void ctr_range_start(struct join *j, const struct xpu_cevent *ev)
{
	struct ctr_proc *p = ctr_find(j, ev->pid);

	if (!p || !(j->enrich & CONF_ENRICH_COUNTERS))
		return;
	p->start_id[p->next_start] = ev->correlation_id;
	p->start_ts[p->next_start] = ev->ts_ns;
	p->next_start = (p->next_start + 1) % CTR_STARTS;
	if (p->n_starts < CTR_STARTS)
		p->n_starts++;
}

static void ctr_range_end(struct join *j, struct xpu_cevent *ev)
{
	struct ctr_proc *p = ctr_find(j, ev->pid);
	__u32 i;

	for (i = 0; p && i < p->n_starts; i++) {
		if (!p->start_ts[i] || p->start_id[i] != ev->correlation_id)
			continue;
		counters_attach(j, ev, p->start_ts[i], ev->ts_ns);
		p->start_ts[i] = 0; /* taken: a second end finds no start */
		return;
	}
}

static void nest_set(struct xpu_cevent *ev, __u64 parent, __u64 root)
{
	ev->parent_id = parent;
	ev->root_id = root;
	ev->corr_type = XPU_CORR_NESTING;
	ev->confidence = 1.0f;
	add_link(ev, XPU_LINK_INSIDE_RANGE, parent);
}

/* A range record, API call or launch inside the thread's open ranges when it arrives: range
 * records of a thread come in order, so for them what is open now is what was open then. */
static void nest_annotate(struct join *j, struct xpu_cevent *ev)
{
	struct nest *t = thread_get(j, ev->pid, ev->tid, false);

	if (t && t->depth)
		nest_set(ev, stack_of(j, t)[t->depth - 1], stack_of(j, t)[0]);
}

/*
 * A CPU sample placed by its own timestamp: the innermost of the ranges around ev->ts_ns,
 * open or closed. Ranges nest per thread, so of all the ranges that contain ts the innermost
 * is the one pushed last: the deepest open range pushed by ts, or a closed range [push, pop]
 * around ts pushed later than that one. (Equal push times: the later event id, that is the
 * later push, is inner.) A sample newer than everything the thread's ranges have said so far
 * gets the open ranges, as on arrival; one at or before the horizon (a range that ended then
 * is no longer held: the sample may have been inside it) is not nested rather than nested too
 * shallow, and counted.
 */
static void nest_place(struct join *j, struct xpu_cevent *ev)
{
	struct nest *t = thread_get(j, ev->pid, ev->tid, false);
	__u64 ts = ev->ts_ns, id = 0, push = 0, root = 0;
	const struct closed *c, *inner = NULL;
	const struct hist *h;
	__u32 i, d, k;

	if (!t)
		return;
	i = (__u32)(t - j->threads);
	if (j->horizon[i] && ts <= j->horizon[i]) {
		j->st.nest_too_old++;
		return;
	}
	for (d = t->depth; d && j->stack_ts[i][d - 1] > ts; d--)
		;
	if (d) {
		id = j->stacks[i][d - 1];
		push = j->stack_ts[i][d - 1];
		root = j->stacks[i][0];
	}
	/* Newest first: pops come in time order, so once one ended before ts, so did all the
	 * older ones. */
	for (h = j->hist[i], k = 0; h && k < h->n; k++) {
		c = &h->c[(h->next + HIST_N - 1 - k) % HIST_N];
		if (c->pop_ts < ts)
			break;
		if (c->push_ts <= ts && (c->push_ts > push || (c->push_ts == push && c->id > id))) {
			inner = c;
			push = c->push_ts;
			id = c->id;
		}
	}
	if (inner) {
		root = inner->root;
		j->st.nest_closed++;
	}
	if (id)
		nest_set(ev, id, root);
}

/* Remember a range that closed on thread slot i, [push_ts, pop_ts]; the oldest one held goes
 * when the history is full, and moves the horizon. */
static void hist_add(struct join *j, __u32 i, __u64 id, __u64 root, __u64 push_ts, __u64 pop_ts)
{
	struct hist *h = j->hist[i];

	if (!h && j->n_hist < HIST_THREADS && (h = malloc(sizeof(*h)))) {
		h->n = h->next = 0;
		j->hist[i] = h;
		j->n_hist++;
	}
	if (!h) { /* no room for a history: what closed is lost to the samples before it */
		if (pop_ts > j->horizon[i])
			j->horizon[i] = pop_ts;
		return;
	}
	if (h->n == HIST_N) {
		if (h->c[h->next].pop_ts > j->horizon[i])
			j->horizon[i] = h->c[h->next].pop_ts;
	} else {
		h->n++;
	}
	h->c[h->next] = (struct closed){ id, root, push_ts, pop_ts };
	h->next = (h->next + 1) % HIST_N;
}

/* The thread ended at ts: its open ranges end there too (innermost first, as pops would),
 * for its samples still on their way. */
static void nest_thread_exit(struct join *j, struct nest *t, __u64 ts)
{
	__u32 i = (__u32)(t - j->threads);

	while (t->depth) {
		t->depth--;
		hist_add(j, i, j->stacks[i][t->depth], j->stacks[i][0], j->stack_ts[i][t->depth],
			 ts);
	}
}

/* RANGE push/pop move the thread's stack; start/end ranges and marks do not nest. */
static void nest_range(struct join *j, struct xpu_cevent *ev)
{
	struct nest *t;

	if (ev->sub_kind == XPU_RANGE_PUSH) {
		t = thread_get(j, ev->pid, ev->tid, true);
		if (!t) {
			j->st.nest_lost++;
			return;
		}
		nest_annotate(j, ev);
		if (!ev->root_id)
			ev->root_id = ev->id; /* an outermost range is its own root */
		if (t->depth < NEST_MAX) {
			j->stack_ts[t - j->threads][t->depth] = ev->ts_ns;
			stack_of(j, t)[t->depth++] = ev->id;
		} else {
			j->st.nest_lost++;
		}
	} else if (ev->sub_kind == XPU_RANGE_POP) {
		t = thread_get(j, ev->pid, ev->tid, false);
		if (!t || !t->depth) {
			j->st.nest_lost++; /* a pop without its push (dropped, or before we started) */
			return;
		}
		ev->root_id = stack_of(j, t)[0];
		add_link(ev, XPU_LINK_COMPLETES, stack_of(j, t)[--t->depth]);
		ev->parent_id = t->depth ? stack_of(j, t)[t->depth - 1] : 0;
		ev->corr_type = XPU_CORR_NESTING;
		ev->confidence = 1.0f;
		counters_attach(j, ev, j->stack_ts[t - j->threads][t->depth], ev->ts_ns);
		hist_add(j, (__u32)(t - j->threads), stack_of(j, t)[t->depth], ev->root_id,
			 j->stack_ts[t - j->threads][t->depth], ev->ts_ns);
	} else {
		nest_annotate(j, ev);
		if (ev->sub_kind == XPU_RANGE_START)
			ctr_range_start(j, ev);
		else if (ev->sub_kind == XPU_RANGE_END)
			ctr_range_end(j, ev);
	}
}

static struct recent *recent_get(struct join *j, __u32 pid, bool create)
{
	__u32 mask = 2 * RECENT_PIDS - 1, i = (__u32)hash64(pid) & mask;

	for (;; i = (i + 1) & mask) {
		struct recent *r = &j->recent[i];

		if (r->pid == pid)
			return r;
		if (!r->pid) {
			if (!create || j->n_recent >= RECENT_PIDS)
				return NULL;
			j->n_recent++;
			r->pid = pid;
			return r;
		}
	}
}

static void recent_add(struct join *j, const struct xpu_cevent *api)
{
	struct recent *r = recent_get(j, api->pid, true);

	if (!r)
		return;
	r->ts[r->next] = api->ts_ns;
	r->end[r->next] = api->end_ns;
	r->id[r->next] = api->id;
	r->tid[r->next] = api->tid;
	r->next = (r->next + 1) % RECENT_N;
	if (r->n < RECENT_N)
		r->n++;
}

/* The latest call that began no later than ts and at most the window before it. */
static __u64 recent_find(struct join *j, __u32 pid, __u64 ts)
{
	struct recent *r = recent_get(j, pid, false);
	__u64 best = 0, best_ts = 0;
	__u32 i;

	for (i = 0; r && i < r->n; i++)
		if (r->ts[i] <= ts && ts - r->ts[i] <= j->opts.time_window_ns &&
		    r->ts[i] >= best_ts) {
			best_ts = r->ts[i];
			best = r->id[i];
		}
	return best;
}

/*
 * A CPU sample taken inside a CUDA API call of its thread (the API call's enter/exit
 * interval, seed 001's entry/exit) is that call's child: sampled_in link, parent the call.
 * Only calls whose record has already arrived can be found; CUPTI sends a call at its exit,
 * so a sample read before it stays without the link.
 */
static void sample_annotate(struct join *j, struct xpu_cevent *ev)
{
	struct recent *r = recent_get(j, ev->pid, false);
	__u32 i;

	for (i = 0; r && i < r->n; i++)
		if (r->tid[i] == ev->tid && r->ts[i] <= ev->ts_ns && ev->ts_ns <= r->end[i]) {
			add_link(ev, XPU_LINK_SAMPLED_IN, r->id[i]);
			ev->parent_id = r->id[i];
			if (!ev->root_id)
				ev->root_id = r->id[i];
			if (ev->corr_type == XPU_CORR_NONE) {
				ev->corr_type = XPU_CORR_NESTING;
				ev->confidence = 1.0f;
			}
			j->st.sampled_in++;
			return;
		}
}

/* Remember a CPU sample and its user stack for the timestamp strategy. */
static void sample_remember(struct join *j, const struct xpu_cevent *ev)
{
	struct recent *r = recent_get(j, ev->pid, true);
	struct recent_sample *rs;

	if (!r)
		return;
	rs = &r->samples[r->next_sample];
	r->next_sample = (r->next_sample + 1) % RECENT_SAMPLES;
	if (r->n_samples < RECENT_SAMPLES)
		r->n_samples++;
	rs->ts = ev->ts_ns;
	rs->id = ev->id;
	rs->tid = ev->tid;
	rs->n_user = ev->n_user < SAMPLE_FRAMES ? ev->n_user : SAMPLE_FRAMES;
	memcpy(rs->ips, ev->stack + ev->n_kernel, 8u * rs->n_user);
}

/* The latest remembered sample of the process (of the thread, when the GPU record names
 * one) taken no later than ts and at most the window before it. */
static const struct recent_sample *sample_find(struct join *j, __u32 pid, __u32 tid, __u64 ts)
{
	struct recent *r = recent_get(j, pid, false);
	const struct recent_sample *best = NULL;
	__u32 i;

	for (i = 0; r && i < r->n_samples; i++) {
		const struct recent_sample *rs = &r->samples[i];

		if ((!tid || rs->tid == tid) && rs->ts <= ts &&
		    ts - rs->ts <= j->opts.time_window_ns && (!best || rs->ts >= best->ts))
			best = rs;
	}
	return best;
}

/* ---- streams ---- */

static __u32 stream_hash(__u32 pid, __u32 device, __u32 stream)
{
	return (__u32)hash64(((__u64)pid << 32 | stream) ^ (__u64)device * 0x9e3779b97f4a7c15ull);
}

static __u32 stream_find(const struct join *j, __u32 pid, __u32 device, __u32 stream, __u32 *slot)
{
	__u32 i = stream_hash(pid, device, stream) & j->stream_mask, e;

	for (;; i = (i + 1) & j->stream_mask) {
		e = j->stream_slots[i] - 1;
		if (e == NIL || (j->streams[e].pid == pid && j->streams[e].stream == stream &&
				 j->streams[e].device == device)) {
			*slot = i;
			return e;
		}
	}
}

/* Free the stream in table slot `slot`; backward-shift deletion as for keys. */
static void stream_remove_slot(struct join *j, __u32 slot)
{
	__u32 i = slot, k, e = j->stream_slots[slot] - 1, home;
	struct stream *st = &j->streams[e];

	st->pid = 0;
	st->gen++;
	st->next = j->free_stream;
	j->free_stream = e;
	j->st.streams--;
	j->st.streams_dropped++;
	for (;;) {
		j->stream_slots[i] = 0;
		for (k = (i + 1) & j->stream_mask;; k = (k + 1) & j->stream_mask) {
			e = j->stream_slots[k] - 1;
			if (e == NIL)
				return;
			st = &j->streams[e];
			home = stream_hash(st->pid, st->device, st->stream) & j->stream_mask;
			if (((k - home) & j->stream_mask) >= ((k - i) & j->stream_mask))
				break;
		}
		j->stream_slots[i] = e + 1;
		i = k;
	}
}

static struct stream *stream_get(struct join *j, __u32 pid, __u32 device, __u32 stream)
{
	__u32 slot, e = stream_find(j, pid, device, stream, &slot);
	struct stream *st;

	if (e != NIL)
		return &j->streams[e];
	e = stream_take(j);
	if (e == NIL)
		return NULL;
	st = &j->streams[e];
	*st = (struct stream){ .pid = pid, .device = device, .stream = stream, .gen = st->gen };
	j->stream_slots[slot] = e + 1;
	j->stream_pids[(pid & 0xffff) / 64] |= 1ull << (pid % 64);
	j->st.streams++;
	fifo_push(j, &j->stream_q, j->now_ns + j->opts.stream_idle_ns, e, st->gen);
	return st;
}

/*
 * Link a kernel, copy or memset to the activity before it on its stream. Activities run in
 * order on a stream but CUPTI delivers them in buffers, not in order: the window of the
 * last STREAM_K by start time absorbs that. One that arrives after a later one on its
 * stream (whose link has gone out already skipping it), or older than the whole window, is
 * counted in stream_unordered; one that starts before the previous one ended (or ends after
 * the next one started) in stream_overlaps, which a stream never does.
 */
static void stream_link(struct join *j, struct xpu_cevent *ev)
{
	struct stream *st;
	__u32 i;

	if (ev->kind == XPU_REC_GPU_SYNC)
		return;
	st = stream_get(j, ev->pid, ev->device, ev->stream);
	if (!st) {
		j->st.streams_full++;
		return;
	}
	st->touched_ns = j->now_ns;
	for (i = 0; i < st->n && st->start[i] <= ev->ts_ns; i++)
		;
	if (i < st->n)
		j->st.stream_unordered++;
	if (!i && st->n == STREAM_K)
		return; /* older than everything we hold */
	if (i) {
		add_link(ev, XPU_LINK_SAME_STREAM_PREV, st->id[i - 1]);
		if (ev->ts_ns < st->end[i - 1])
			j->st.stream_overlaps++;
	}
	if (i < st->n && ev->end_ns > st->start[i])
		j->st.stream_overlaps++;
	if (st->n == STREAM_K) { /* full: the oldest goes */
		memmove(st->start, st->start + 1, --i * sizeof(st->start[0]));
		memmove(st->end, st->end + 1, i * sizeof(st->end[0]));
		memmove(st->id, st->id + 1, i * sizeof(st->id[0]));
	} else {
		memmove(st->start + i + 1, st->start + i, (st->n - i) * sizeof(st->start[0]));
		memmove(st->end + i + 1, st->end + i, (st->n - i) * sizeof(st->end[0]));
		memmove(st->id + i + 1, st->id + i, (st->n - i) * sizeof(st->id[0]));
		st->n++;
	}
	st->start[i] = ev->ts_ns;
	st->end[i] = ev->end_ns;
	st->id[i] = ev->id;
}

/* Drop every stream of pid: a scan of the table, only for a process that may have any. */
static void stream_drop_pid(struct join *j, __u32 pid)
{
	__u32 start, k, i, e;

	if (!(j->stream_pids[(pid & 0xffff) / 64] & 1ull << (pid % 64)) || !j->st.streams)
		return;
	/* Begin at an empty slot, so no cluster wraps past the start: a deletion shifts only
	 * later entries back into the slot being looked at, which is looked at again. */
	for (start = 0; j->stream_slots[start]; start++)
		;
	for (k = 0; k <= j->stream_mask; k++) {
		i = (start + k) & j->stream_mask;
		while ((e = j->stream_slots[i] - 1) != NIL && j->streams[e].pid == pid)
			stream_remove_slot(j, i);
	}
}

static void expire_streams(struct join *j, __u64 now_ns)
{
	struct qitem *it;

	while ((it = fifo_peek(&j->stream_q)) && it->deadline <= now_ns) {
		struct qitem item = *it;
		struct stream *st = &j->streams[item.entry];
		__u32 slot;

		fifo_pop(&j->stream_q);
		if (!stream_live(j, &item))
			continue;
		if (now_ns != ~0ull && st->touched_ns + j->opts.stream_idle_ns > now_ns) {
			/* active since it was queued: due again one idle period from now */
			fifo_push(j, &j->stream_q, now_ns + j->opts.stream_idle_ns, item.entry,
				  item.gen);
			continue;
		}
		stream_find(j, st->pid, st->device, st->stream, &slot);
		stream_remove_slot(j, slot);
	}
}

/* ---- CUDA graph nodes ---- */

static __u32 gnode_find(const struct join *j, __u32 pid, __u64 node, __u32 *slot)
{
	__u32 i = (__u32)key_hash(pid, node) & j->gnode_mask, e;

	for (;; i = (i + 1) & j->gnode_mask) {
		e = j->gnode_slots[i] - 1;
		if (e == NIL || (j->gnodes[e].node == node && j->gnodes[e].pid == pid)) {
			*slot = i;
			return e;
		}
	}
}

/* Free the node in table slot `slot`; backward-shift deletion as for keys. */
static void gnode_remove_slot(struct join *j, __u32 slot)
{
	__u32 i = slot, k, e = j->gnode_slots[slot] - 1, home;

	free(j->gnodes[e].stack);
	j->gnodes[e].stack = NULL;
	j->gnodes[e].pid = 0;
	j->st.graph_nodes--;
	for (;;) {
		j->gnode_slots[i] = 0;
		for (k = (i + 1) & j->gnode_mask;; k = (k + 1) & j->gnode_mask) {
			e = j->gnode_slots[k] - 1;
			if (e == NIL)
				return;
			home = (__u32)key_hash(j->gnodes[e].pid, j->gnodes[e].node) & j->gnode_mask;
			if (((k - home) & j->gnode_mask) >= ((k - i) & j->gnode_mask))
				break;
		}
		j->gnode_slots[i] = e + 1;
		i = k;
	}
}

/*
 * Keep the creation stack of graph node `node` of pid (a node created again replaces its
 * stack). The entries are a ring in creation order: the next one to fill is the oldest node
 * held (or a hole left by an exited process), so when the table is full the oldest goes. A
 * node without a stack is not kept: its kernels are better off with the graph launch's.
 */
static void gnode_put(struct join *j, __u32 pid, __u64 node, const __u64 *ips, __u32 n)
{
	__u32 slot, e;
	struct gnode *g;
	__u64 *stack;

	if (!n || !(stack = malloc(8u * n)))
		return;
	memcpy(stack, ips, 8u * n);
	e = gnode_find(j, pid, node, &slot);
	if (e != NIL) {
		g = &j->gnodes[e];
		free(g->stack);
		g->stack = stack;
		g->n_stack = (__u16)n;
		return;
	}
	e = j->gnode_head;
	g = &j->gnodes[e];
	if (g->pid) {
		__u32 old;

		gnode_find(j, g->pid, g->node, &old);
		gnode_remove_slot(j, old);
		j->st.graph_nodes_evicted++;
		gnode_find(j, pid, node, &slot); /* the table changed */
	}
	*g = (struct gnode){ .node = node, .stack = stack, .pid = pid, .n_stack = (__u16)n };
	j->gnode_slots[slot] = e + 1;
	j->gnode_head = (e + 1) % j->opts.max_graph_nodes;
	j->graph_pids[(pid & 0xffff) / 64] |= 1ull << (pid % 64);
	j->st.graph_nodes++;
}

/* Drop every node of pid: a scan of the table, only for a process that may have any. */
static void gnode_drop_pid(struct join *j, __u32 pid)
{
	__u32 start, k, i, e;

	if (!(j->graph_pids[(pid & 0xffff) / 64] & 1ull << (pid % 64)) || !j->st.graph_nodes)
		return;
	for (start = 0; j->gnode_slots[start]; start++)
		;
	for (k = 0; k <= j->gnode_mask; k++) {
		i = (start + k) & j->gnode_mask;
		while ((e = j->gnode_slots[i] - 1) != NIL && j->gnodes[e].pid == pid)
			gnode_remove_slot(j, i);
	}
}

/*
 * A graph kernel joined to its graph launch: the stack that matters is the one that created
 * its node. Known: that stack, an exact join (the launched_by links stay the graph
 * launch's). Not known (created before we started, its LAUNCH lost, or not here yet: node
 * LAUNCHes come through another ring, and a kernel goes out with what is known when it goes
 * out): the graph launch's stack, marked approximate.
 */
static void graph_attribute(struct join *j, struct xpu_cevent *ev)
{
	__u64 node = ev->graph_node_id & ~XPU_LAUNCH_GRAPH_NODE;
	__u32 slot, e = node ? gnode_find(j, ev->pid, node, &slot) : NIL;

	if (e == NIL) {
		ev->corr_type = XPU_CORR_APPROXIMATE;
		ev->confidence = 0.5f;
		j->st.graph_approximate++;
		return;
	}
	if (j->enrich & CONF_ENRICH_STACKS) {
		ev->n_user = j->gnodes[e].n_stack;
		ev->stack = j->gnodes[e].stack;
	}
	j->st.graph_node_stacks++;
}

static void gone_pop(struct join *j)
{
	__u32 pid = j->gone[j->gone_head].pid;

	j->gone_head = (j->gone_head + 1) % GONE_MAX;
	j->gone_len--;
	stream_drop_pid(j, pid);
	ctr_drop_pid(j, pid);
	nest_drop_pid(j, pid);
	gnode_drop_pid(j, pid);
	if (j->gone_fn)
		j->gone_fn(pid, j->ctx);
}

/* A process exited: its streams, counter readings, threads, graph nodes and names go once
 * its exit grace has passed. */
static void gone_push(struct join *j, __u32 pid, __u64 deadline)
{
	if (j->gone_len == GONE_MAX)
		gone_pop(j); /* too many exits in one grace period: the oldest goes early */
	j->gone[(j->gone_head + j->gone_len) % GONE_MAX] = (struct gone){ deadline, pid, 0 };
	j->gone_len++;
}

/* A GPU record goes out: joined to e's launch side when e has one. */
static void emit_gpu(struct join *j, struct entry *e, const void *rec, __u64 id)
{
	const struct recent_sample *rs;
	struct xpu_cevent ev;

	to_cevent(j, &ev, rec, id);
	if (ev.kind == XPU_REC_GPU_KERNEL)
		counters_attach(j, &ev, ev.ts_ns, ev.end_ns);
	if (e && (e->flags & (F_LAUNCH | F_API))) {
		ev.corr_type = XPU_CORR_EXACT_ID;
		ev.confidence = 1.0f;
		if (e->api_id) {
			ev.links[ev.n_links++] = (struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY,
								    .target = e->api_id };
			ev.parent_id = ev.root_id = e->api_id;
		}
		if (e->launch_id) {
			ev.links[ev.n_links++] = (struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY,
								    .target = e->launch_id };
			ev.parent_id = ev.root_id = e->launch_id;
			if (j->enrich & CONF_ENRICH_STACKS) {
				ev.n_user = e->n_stack;
				ev.stack = e->stack;
			}
		}
		if (ev.kind == XPU_REC_GPU_KERNEL && (ev.flags & XPU_KERNEL_F_GRAPH))
			graph_attribute(j, &ev);
		/* kernel -> launch -> enclosing range: the user scope is the kernel's root */
		if (e->range_id) {
			add_link(&ev, XPU_LINK_INSIDE_RANGE, e->range_id);
			ev.root_id = e->root_id;
		}
		e->flags |= F_GPU_OUT;
		j->st.matched++;
		/* Matched: keep the launch side only a little longer, for the other kernels of
		 * a graph launch (they share the correlation id and arrive together). */
		if (!(e->flags & F_LINGER)) {
			e->flags |= F_LINGER;
			fifo_push(j, &j->linger_q, j->now_ns + j->opts.linger_ns,
				  (__u32)(e - j->entries), e->gen);
		}
	} else if (j->opts.time_window_ns &&
		   (ev.links[0].target = recent_find(j, ev.pid, ev.ts_ns))) {
		/* No launch by id: the timestamp strategy's nearest earlier API call. */
		ev.links[0].type = XPU_LINK_LAUNCHED_BY;
		ev.n_links = 1;
		ev.parent_id = ev.root_id = ev.links[0].target;
		ev.corr_type = XPU_CORR_TIMESTAMP;
		ev.confidence = 0.5f;
		j->st.time_matched++;
	} else if (j->opts.time_window_ns &&
		   (rs = sample_find(j, ev.pid, ((const struct xpu_rec *)rec)->tid, ev.ts_ns))) {
		/* Not even an API call near: the CPU sample of the process taken just before
		 * the work began, and its stack, as the best guess at what launched it. */
		ev.links[0] = (struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = rs->id };
		ev.n_links = 1;
		ev.parent_id = ev.root_id = rs->id;
		ev.corr_type = XPU_CORR_TIMESTAMP;
		ev.confidence = 0.25f;
		if (j->enrich & CONF_ENRICH_STACKS) {
			ev.n_user = rs->n_user;
			ev.stack = rs->ips;
		}
		j->st.time_matched_samples++;
	} else {
		ev.links[0].target = 0;
		ev.corr_type = XPU_CORR_NONE;
		j->st.unmatched++;
	}
	if (j->enrich & CONF_ENRICH_STREAMS)
		stream_link(j, &ev);
	j->emit(&ev, j->ctx);
}

/* Emit e's waiting GPU records in arrival order and return their slots. */
static void release_waiting(struct join *j, struct entry *e)
{
	__u32 w = e->wait_head, next;
	unsigned int enrich = j->enrich;

	while (w != NIL) {
		next = j->waiting[w].next;
		/* No longer held once emitted: the count drops first, because the emit callback
		 * may checkpoint (the correlator's count of held records must not include an
		 * event that is already in the batch it checkpoints). */
		j->st.waiting--;
		j->enrich = j->waiting[w].enrich;
		emit_gpu(j, e, j->waiting[w].rec, j->waiting[w].id);
		j->waiting[w].next = j->free_wait;
		j->free_wait = w;
		w = next;
	}
	j->enrich = enrich;
	e->wait_head = e->wait_tail = NIL;
}

static void entry_remove(struct join *j, __u32 idx)
{
	struct entry *e = &j->entries[idx];
	__u32 slot, ps = pid_slot(j, e->pid, false);
	struct pidstate *p = &j->pids[ps];

	release_waiting(j, e); /* unmatched unless a launch side arrived */
	key_find(j, e->pid, e->corr, &slot);
	key_delete(j, slot);
	if (e->pid_prev != NIL)
		j->entries[e->pid_prev].pid_next = e->pid_next;
	else
		p->head = e->pid_next;
	if (e->pid_next != NIL)
		j->entries[e->pid_next].pid_prev = e->pid_prev;
	if (!--p->n)
		pid_delete(j, ps);
	free(e->stack);
	e->stack = NULL;
	e->flags = 0;
	e->gen++;
	e->next = j->free_entry;
	j->free_entry = idx;
	j->st.pending--;
}

/* Pop the oldest live entry (for eviction) from the TTL queue. */
static void evict_oldest(struct join *j)
{
	struct qitem *it;

	while ((it = fifo_peek(&j->ttl_q))) {
		__u32 idx = it->entry, gen = it->gen;

		fifo_pop(&j->ttl_q);
		if (item_live(j, &(struct qitem){ 0, idx, gen })) {
			j->st.evicted++;
			entry_remove(j, idx);
			return;
		}
	}
}

static struct entry *entry_get(struct join *j, __u32 pid, __u64 corr, __u64 now_ns)
{
	__u32 slot, idx, ps;
	struct entry *e;

	idx = key_find(j, pid, corr, &slot);
	if (idx != NIL)
		return &j->entries[idx];
	if ((j->free_entry == NIL && j->hw_entry == j->opts.max_pending) ||
	    (j->n_pids + 1) * 4 > (j->pid_mask + 1) * 3) {
		evict_oldest(j);
		while ((j->n_pids + 1) * 4 > (j->pid_mask + 1) * 3 && j->st.pending)
			evict_oldest(j);
		key_find(j, pid, corr, &slot); /* the table changed */
	}
	idx = entry_take(j);
	e = &j->entries[idx];
	ps = pid_slot(j, pid, true);
	*e = (struct entry){ .corr = corr,
			     .pid = pid,
			     .gen = e->gen,
			     .flags = F_USED,
			     .pid_prev = NIL,
			     .pid_next = j->pids[ps].head,
			     .wait_head = NIL,
			     .wait_tail = NIL,
			     .next = NIL };
	if (j->pids[ps].head != NIL)
		j->entries[j->pids[ps].head].pid_prev = idx;
	j->pids[ps].head = idx;
	j->pids[ps].n++;
	j->keys[slot] = idx + 1;
	fifo_push(j, &j->ttl_q, now_ns + j->opts.ttl_ns, idx, e->gen);
	j->st.pending++;
	return e;
}

/*
 * With launch_wait_ns, a kernel whose CUDA_API has come waits for its LAUNCH (the launch
 * stack) that long: the CUPTI library's records come within its flush interval, the launch
 * marker's through the CPU source's BPF ring, which may hold them longer, so going out with
 * the API call alone would often lose the stack. Other GPU records of a key whose kernels
 * wait (a graph launch's copies) wait with them, in order; copies and memsets of a plain API
 * call never have a LAUNCH and go at once.
 */
static bool launch_awaited(const struct join *j, const struct entry *e, __u32 type)
{
	return j->opts.launch_wait_ns && !(e->flags & (F_LAUNCH | F_GAVE_UP)) &&
	       (type == XPU_REC_GPU_KERNEL || (e->flags & F_AWAIT));
}

static bool waits_kernel(const struct join *j, const struct entry *e)
{
	__u32 w;

	for (w = e->wait_head; w != NIL; w = j->waiting[w].next)
		if (((const struct xpu_rec *)j->waiting[w].rec)->type == XPU_REC_GPU_KERNEL)
			return true;
	return false;
}

static __u64 waiting_count(const struct join *j, const struct entry *e)
{
	__u64 n = 0;
	__u32 w;

	for (w = e->wait_head; w != NIL; w = j->waiting[w].next)
		n++;
	return n;
}

/* Queue e to give up on its LAUNCH launch_wait_ns from now (once: later records join the
 * same wait). */
static void await_launch(struct join *j, struct entry *e)
{
	if (e->flags & F_AWAIT)
		return;
	e->flags |= F_AWAIT;
	fifo_push(j, &j->launch_q, j->now_ns + j->opts.launch_wait_ns, (__u32)(e - j->entries),
		  e->gen);
}

/* Keys whose LAUNCH did not come in time: their waiting records go out with the API call. */
static void expire_launch_wait(struct join *j, __u64 now_ns)
{
	struct qitem *it;

	while ((it = fifo_peek(&j->launch_q)) && it->deadline <= now_ns) {
		__u32 idx = it->entry, gen = it->gen;
		struct entry *e = &j->entries[idx];

		fifo_pop(&j->launch_q);
		if (!item_live(j, &(struct qitem){ 0, idx, gen }))
			continue;
		e->flags &= ~F_AWAIT;
		if (e->flags & F_LAUNCH)
			continue;
		e->flags |= F_GAVE_UP;
		j->st.launch_wait_expired++;
		release_waiting(j, e);
	}
}

static void on_launch_side(struct join *j, const void *rec, __u64 id, __u64 now_ns)
{
	const struct xpu_rec *h = rec;
	struct xpu_cevent ev;
	struct entry *e;
	__u64 corr;

	to_cevent(j, &ev, rec, id);
	nest_annotate(j, &ev);
	corr = ev.correlation_id;
	j->emit(&ev, j->ctx);
	if (h->type == XPU_REC_CUDA_API)
		recent_add(j, &ev);
	if (j->opts.no_exact)
		return;
	if (!corr)
		return;
	/* A graph node's creation: no key (nothing carries its id as a correlation id), its
	 * stack is kept for the node's kernels. */
	if (h->type == XPU_REC_LAUNCH && (corr & XPU_LAUNCH_GRAPH_NODE)) {
		const struct xpu_launch *l = rec;

		gnode_put(j, h->pid, corr & ~XPU_LAUNCH_GRAPH_NODE, l->ips, l->n_user);
		return;
	}
	e = entry_get(j, h->pid, corr, now_ns);
	if (ev.parent_id && !e->range_id) {
		e->range_id = ev.parent_id;
		e->root_id = ev.root_id;
	}
	if (h->type == XPU_REC_LAUNCH) {
		const struct xpu_launch *l = rec;

		if (e->flags & F_GPU_OUT)
			j->st.late_launch++;
		if (!e->launch_id) {
			e->launch_id = id;
			e->flags |= F_LAUNCH;
			if (l->n_user) {
				e->stack = malloc(8u * l->n_user);
				if (e->stack) {
					memcpy(e->stack, l->ips, 8u * l->n_user);
					e->n_stack = l->n_user;
				}
			}
		}
	} else if (!e->api_id) {
		e->api_id = id;
		e->flags |= F_API;
		/* The CUPTI library says which calls it marked: no LAUNCH will come for the
		 * others (launch_stacks = no), so their kernels need not wait for one. */
		if (!(h->flags & XPU_API_F_LAUNCH_MARKED))
			e->flags |= F_GAVE_UP;
	}
	if (h->type == XPU_REC_CUDA_API && waits_kernel(j, e) &&
	    launch_awaited(j, e, XPU_REC_GPU_KERNEL)) {
		j->st.launch_waited += waiting_count(j, e);
		await_launch(j, e);
		return;
	}
	release_waiting(j, e);
}

static void on_gpu(struct join *j, const void *rec, __u32 size, __u64 id, __u64 now_ns)
{
	const struct xpu_rec *h = rec;
	__u64 corr = gpu_corr(rec);
	struct waiting *w;
	struct entry *e;
	__u32 slot, idx;

	if (!corr || j->opts.no_exact) {
		emit_gpu(j, NULL, rec, id);
		return;
	}
	idx = key_find(j, h->pid, corr, &slot);
	e = idx == NIL ? NULL : &j->entries[idx];
	if (e && (e->flags & (F_LAUNCH | F_API)) && !launch_awaited(j, e, h->type)) {
		emit_gpu(j, e, rec, id);
		return;
	}
	/* Launch side not here yet (CUPTI may deliver activity before the callback's record
	 * reaches us through another ring), or a kernel's LAUNCH awaited: wait for it, within
	 * bounds; without room, a record whose API call is known goes out joined to it. */
	if (size > WAIT_REC_MAX || (slot = wait_take(j)) == NIL) {
		if (!e || !(e->flags & F_API))
			j->st.evicted++;
		emit_gpu(j, e && (e->flags & F_API) ? e : NULL, rec, id);
		return;
	}
	/* Held from here on, before entry_get, which may evict (and emit) to make room: the
	 * record must count in `waiting` whenever the emit callback runs. */
	w = &j->waiting[slot];
	memcpy(w->rec, rec, size);
	w->size = (__u16)size;
	w->enrich = (__u16)j->enrich;
	w->id = id;
	w->next = NIL;
	j->st.waiting++;
	j->st.waited++;
	e = entry_get(j, h->pid, corr, now_ns);
	if (e->wait_tail != NIL)
		j->waiting[e->wait_tail].next = slot;
	else
		e->wait_head = slot;
	e->wait_tail = slot;
	if (e->flags & F_API) {
		j->st.launch_waited++;
		await_launch(j, e);
	}
}

static void on_process_exit(struct join *j, __u32 pid, __u64 now_ns)
{
	__u32 ps = pid_slot(j, pid, false), e;

	gone_push(j, pid, now_ns + j->opts.exit_grace_ns);
	if (ps == NIL)
		return;
	for (e = j->pids[ps].head; e != NIL; e = j->entries[e].pid_next) {
		if (j->entries[e].flags & F_EXITING)
			continue;
		j->entries[e].flags |= F_EXITING;
		fifo_push(j, &j->exit_q, now_ns + j->opts.exit_grace_ns, e, j->entries[e].gen);
	}
}

int join__record(struct join *j, const void *rec, __u32 size, __u64 now_ns)
{
	return join__record_enrich(j, rec, size, now_ns, CONF_ENRICH_ALL);
}

int join__record_enrich(struct join *j, const void *rec, __u32 size, __u64 now_ns,
			unsigned int enrich)
{
	const struct xpu_rec *h = rec;
	struct xpu_cevent ev;
	__u64 id;

	j->st.in++;
	j->enrich = enrich;
	j->now_ns = now_ns;
	/* The PMU source writes a CPU's reading into every shard's ring: one shard sends it. */
	if (h->type == XPU_REC_PMU_COUNTER && j->opts.shard &&
	    ((const struct xpu_pmu_counter *)rec)->scope == XPU_PMU_SCOPE_CPU) {
		j->st.counters_routed++;
		return JOIN_ROUTED;
	}
	id = j->next_id++;
	switch (h->type) {
	case XPU_REC_LAUNCH:
	case XPU_REC_CUDA_API:
		on_launch_side(j, rec, id, now_ns);
		break;
	case XPU_REC_GPU_KERNEL:
	case XPU_REC_GPU_MEMCPY:
	case XPU_REC_GPU_MEMSET:
	case XPU_REC_GPU_SYNC:
		on_gpu(j, rec, size, id, now_ns);
		break;
	default:
		to_cevent(j, &ev, rec, id);
		if (h->type == XPU_REC_PMU_COUNTER)
			ctr_reading(j, rec);
		if (h->type == XPU_REC_RANGE)
			nest_range(j, &ev);
		else if (h->type == XPU_REC_CPU_SAMPLE) {
			nest_place(j, &ev);
			sample_annotate(j, &ev);
			if (j->opts.time_window_ns)
				sample_remember(j, &ev);
		}
		j->emit(&ev, j->ctx);
		if (h->type == XPU_REC_PROC_EXIT) {
			struct nest *t = thread_get(j, h->pid, h->tid, false);

			if (t) /* the thread is gone: its open ranges end with it */
				nest_thread_exit(j, t, h->ts_ns);
			if (h->pid == h->tid)
				on_process_exit(j, h->pid, now_ns);
		}
		break;
	}
	return 0;
}

static void expire_queue(struct join *j, struct fifo *q, __u64 now_ns)
{
	struct qitem *it;

	while ((it = fifo_peek(q)) && it->deadline <= now_ns) {
		__u32 idx = it->entry, gen = it->gen;

		fifo_pop(q);
		if (item_live(j, &(struct qitem){ 0, idx, gen })) {
			j->st.expired++;
			entry_remove(j, idx);
		}
	}
}

void join__expire(struct join *j, __u64 now_ns)
{
	expire_queue(j, &j->ttl_q, now_ns);
	expire_queue(j, &j->exit_q, now_ns);
	expire_queue(j, &j->linger_q, now_ns);
	expire_launch_wait(j, now_ns);
	/* after the keys: a process's last GPU records have gone out, with their stream links */
	while (j->gone_len && j->gone[j->gone_head].deadline <= now_ns)
		gone_pop(j);
	expire_streams(j, now_ns);
}

void join__flush(struct join *j)
{
	join__expire(j, ~0ull);
}

void join__set_gone(struct join *j, join_gone_fn fn)
{
	j->gone_fn = fn;
}

void join__set_names(struct join *j, join_name_fn fn)
{
	j->name = fn;
}

__u64 join__next_id(const struct join *j)
{
	return j->next_id;
}

void join__stats(const struct join *j, struct join_stats *st)
{
	*st = j->st;
}

struct join *join__new(const struct join_opts *opts, join_emit_fn emit, void *ctx)
{
	struct join *j;

	if (!opts->max_pending || !opts->max_waiting || !emit || opts->max_pending > (1u << 30) ||
	    opts->max_streams > (1u << 24) || opts->max_graph_nodes > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->opts = *opts;
	j->emit = emit;
	j->ctx = ctx;
	j->next_id = opts->first_id ? opts->first_id : 1;
	j->enrich = CONF_ENRICH_ALL;
	j->key_mask = pow2_at_least(2ull * opts->max_pending) - 1;
	/* Processes with pending state: far fewer than keys in practice; entry_get evicts
	 * when this table is three quarters full. */
	j->pid_mask = pow2_at_least(2ull * opts->max_pending < PIDS_MAX ? 2ull * opts->max_pending :
									  PIDS_MAX) -
		      1;
	j->entries = calloc(opts->max_pending, sizeof(*j->entries));
	j->keys = calloc((size_t)j->key_mask + 1, sizeof(*j->keys));
	j->pids = calloc((size_t)j->pid_mask + 1, sizeof(*j->pids));
	j->waiting = calloc(opts->max_waiting, sizeof(*j->waiting));
	j->ttl_q.items = calloc(2ull * opts->max_pending, sizeof(struct qitem));
	j->exit_q.items = calloc(2ull * opts->max_pending, sizeof(struct qitem));
	j->linger_q.items = calloc(2ull * opts->max_pending, sizeof(struct qitem));
	if (opts->launch_wait_ns)
		j->launch_q.items = calloc(2ull * opts->max_pending, sizeof(struct qitem));
	j->threads = calloc(2 * THREADS_MAX, sizeof(*j->threads));
	j->stacks = calloc(2 * THREADS_MAX, sizeof(*j->stacks));
	j->recent = calloc(2 * RECENT_PIDS, sizeof(*j->recent));
	if (!j->opts.max_streams)
		j->opts.max_streams = 16384;
	if (!j->opts.stream_idle_ns)
		j->opts.stream_idle_ns = 60000000000ull;
	j->stream_mask = pow2_at_least(2ull * j->opts.max_streams) - 1;
	j->streams = calloc(j->opts.max_streams, sizeof(*j->streams));
	j->stream_slots = calloc((size_t)j->stream_mask + 1, sizeof(*j->stream_slots));
	j->stream_q.items = calloc(2ull * j->opts.max_streams, sizeof(struct qitem));
	j->stream_pids = calloc(65536 / 64, sizeof(*j->stream_pids));
	j->gone = calloc(GONE_MAX, sizeof(*j->gone));
	j->stack_ts = calloc(2 * THREADS_MAX, sizeof(*j->stack_ts));
	j->ctr = calloc(CTR_PIDS, sizeof(*j->ctr));
	j->ctr_slots = calloc(2 * CTR_PIDS, sizeof(*j->ctr_slots));
	j->hist = calloc(2 * THREADS_MAX, sizeof(*j->hist));
	j->horizon = calloc(2 * THREADS_MAX, sizeof(*j->horizon));
	j->range_pids = calloc(65536 / 64, sizeof(*j->range_pids));
	if (!j->opts.max_graph_nodes)
		j->opts.max_graph_nodes = 65536;
	j->gnode_mask = pow2_at_least(2ull * j->opts.max_graph_nodes) - 1;
	j->gnodes = calloc(j->opts.max_graph_nodes, sizeof(*j->gnodes));
	j->gnode_slots = calloc((size_t)j->gnode_mask + 1, sizeof(*j->gnode_slots));
	j->graph_pids = calloc(65536 / 64, sizeof(*j->graph_pids));
	if (!j->entries || !j->keys || !j->pids || !j->waiting || !j->ttl_q.items ||
	    !j->exit_q.items || !j->linger_q.items ||
	    (opts->launch_wait_ns && !j->launch_q.items) || !j->threads || !j->stacks ||
	    !j->streams || !j->stream_slots || !j->stream_q.items || !j->stream_pids || !j->gone ||
	    !j->recent || !j->stack_ts || !j->ctr || !j->ctr_slots || !j->hist || !j->horizon ||
	    !j->range_pids || !j->gnodes || !j->gnode_slots || !j->graph_pids) {
		join__free(j);
		errno = ENOMEM;
		return NULL;
	}
	j->ttl_q.cap = j->exit_q.cap = j->linger_q.cap = j->launch_q.cap = 2 * opts->max_pending;
	/* Free lists start empty and slots are first taken in order (hw_*): nothing is
	 * touched up front, so a restarted shard is ready in milliseconds whatever the bounds. */
	j->free_entry = j->free_wait = j->free_stream = j->ctr_free = NIL;
	j->stream_q.cap = 2 * j->opts.max_streams;

	return j;
}

void join__free(struct join *j)
{
	__u32 i;

	if (!j)
		return;
	if (j->entries)
		for (i = 0; i < j->hw_entry; i++)
			free(j->entries[i].stack);
	free(j->entries);
	free(j->keys);
	free(j->pids);
	free(j->waiting);
	free(j->ttl_q.items);
	free(j->exit_q.items);
	free(j->linger_q.items);
	free(j->launch_q.items);
	free(j->threads);
	free(j->stacks);
	free(j->recent);
	free(j->streams);
	free(j->stream_slots);
	free(j->stream_q.items);
	free(j->stream_pids);
	free(j->gone);
	free(j->stack_ts);
	free(j->ctr);
	free(j->ctr_slots);
	if (j->hist)
		for (i = 0; i <= THREAD_MASK; i++)
			free(j->hist[i]);
	free(j->hist);
	free(j->horizon);
	free(j->range_pids);
	if (j->gnodes)
		for (i = 0; i < j->opts.max_graph_nodes; i++)
			free(j->gnodes[i].stack);
	free(j->gnodes);
	free(j->gnode_slots);
	free(j->graph_pids);
	free(j);
}
