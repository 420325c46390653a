// SPDX-License-Identifier: MIT
/*
 * Exact (pid, correlation id) join, and the orchestration that runs a record through the
 * engines of join_engines.h. Data structures, all allocated in join__new:
 *
 *   entries[]   pending state per key, a free list through `next`
 *   keys        open-addressing hash (linear probing, deletion through common/oatab.h) ->
 *               entry index, with the key's hash beside it; a process's neighbouring
 *               correlation ids share a cache line of it (key_home)
 *   pids[]      open-addressing hash of processes -> a doubly linked list of their entries,
 *               so PROC_EXIT touches only that process's state
 *   waiting[]   copies of GPU records that arrived before their launch side, listed per entry
 *   ttl_q       FIFO of (deadline, entry, generation): entries are created in time order, so
 *               deadlines come out sorted and expiry pops only what is due
 *   exit_q      the same for exit-grace deadlines (PROC_EXIT arrives in time order too)
 *   linger_q    the same for keys whose GPU work matched: kept linger_ns more, not ttl_ns
 *   launch_q    the same for keys whose kernels wait for their LAUNCH (launch_wait_ns)
 *
 * A queue item whose generation no longer matches its entry (the entry was matched away,
 * evicted, or reused) is skipped when it reaches the head.
 *
 * A record's way through (join__record_enrich): it takes the next event id and becomes an
 * event (to_cevent: names resolved); then, by kind:
 *   - LAUNCH, CUDA_API: nested in its thread's open ranges (ranges.c), goes out, then
 *     starts or completes its key (a graph node creation goes to graph.c instead); a
 *     CUDA_API is remembered per process (recent.c);
 *   - GPU activity: out at once when its key's launch side is known, else it waits on the
 *     key; as it goes out (emit_gpu) it gets counters (counters.c), its launch side, its
 *     node's creation stack (graph.c) or a timestamp-strategy guess (recent.c), and its
 *     same_stream_prev link (streams.c);
 *   - RANGE: nesting (ranges.c), counters over a popped or ended range (counters.c);
 *   - CPU_SAMPLE: placed by its timestamp (ranges.c), sampled_in (recent.c);
 *   - PMU_COUNTER: kept (counters.c);
 *   - PROC_EXIT: the thread's open ranges close (ranges.c); a process exit queues its keys
 *     on exit_q and the process on the gone list (exits.c), which calls every engine's drop
 *     hook once the exit grace has passed.
 * join__expire runs the key queues first, then the gone list, then the idle streams.
 */
#include "actors/correlator/join.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "actors/correlator/join_engines.h"
#include "common/big_alloc.h"
#include "common/config.h"

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

#define STACK_CLASSES 5 /* LAUNCH stacks of up to 8, 16, 32, 64, 128 frames (stack_get) */

/* The key table (an idx_slots): each slot an entry's index + 1 (0: empty) in its low
 * KEY_IDX_BITS, and above them the top bits of its key's home (key_home), so a probe compares
 * the entry only where those match (idx_slots__at does not apply: key_slot_idx). max_pending
 * is at most 1 << 24: the index + 1 fits in 25 bits. */
#define KEY_IDX_BITS 25
#define KEY_IDX_MASK ((1u << KEY_IDX_BITS) - 1)

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

/*
 * A CPU sample held back (join_opts.range_wait_ns). A program's range records come in its
 * batches (annotate/annotate.c: flushed at the next call past 10 ms, or when its outermost
 * range ends), often after the samples taken inside them, which the CPU source sends within
 * its drain_ms: placed at once, such a sample would miss the range around it. So a sample of
 * a process with ranges whose thread's records have not reached its time waits, until they
 * have or for range_wait_ns at most, a copy of its record (after the unwind and Python
 * stages) with the id it got at arrival.
 */
#define HOLD_MAX 8192u

struct held_sample {
	__u64 id;
	__u64 call; /* the CUDA API call it was taken in, as known at its arrival (recent.c) */
	__u64 deadline; /* the shard's clock */
	__u32 size;
	__u32 enrich;
	_Alignas(8) unsigned char rec[];
};

struct pidstate {
	__u32 pid; /* 0: empty slot */
	__u32 head; /* first entry of this process */
	__u32 n; /* entries */
	__u32 reserved;
};

struct join {
	struct join_opts opts;
	join_emit_fn emit;
	join_gone_fn gone_fn;
	struct join_env env; /* the record being processed, the counters */
	struct entry *entries;
	__u32 free_entry, hw_entry; /* hw_*: slots below it have been used */
	struct idx_slots keys;
	struct pidstate *pids;
	__u32 pid_mask;
	__u32 n_pids;
	struct waiting *waiting;
	__u32 free_wait, hw_wait;
	__u64 *stack_free[STACK_CLASSES]; /* LAUNCH stacks to reuse, by class (stack_get) */
	__u32 stack_n_free[STACK_CLASSES]; /* blocks on each list */
	__u32 stack_low[STACK_CLASSES]; /* the fewest on each list since the last trim */
	__u64 stack_trim_at; /* when the lists were last trimmed (stacks__trim) */
	struct fifo ttl_q, exit_q, linger_q, launch_q;
	__u64 next_id;
	struct ranges ranges;
	struct recent_calls recent;
	struct streams streams;
	struct counters counters;
	struct graph graph;
	struct exits exits;
	/* CPU samples waiting for their thread's range records (range_wait_ns): a ring of
	 * HOLD_MAX, oldest at hold_head; a slot emptied out of turn (its process exited) is NULL */
	struct held_sample **hold;
	__u32 hold_head, hold_n, hold_live;
};

size_t join__entry_size(void)
{
	/* the entry, its hash slots (load <= 1/2), its share of the three queues (twice
	 * max_pending each); the process table is fixed (at most 2 MiB) */
	return sizeof(struct entry) + 2 * sizeof(__u32) + 6 * sizeof(struct qitem);
}

/* ---- LAUNCH stacks ---- */

/*
 * Each pending key with a LAUNCH keeps a copy of its stack, from the LAUNCH until the key
 * goes: thousands live at a time under load, freed in a different order than allocated,
 * which kept glibc's malloc off its fast path (about 7 % of a shard's time in malloc, free
 * and consolidation). Stacks of up to 8 << (STACK_CLASSES - 1) frames are blocks of 8 << c
 * frames, reused through a list per class. Longer stacks go to malloc.
 *
 * A burst (a GPU that stalls while launches go on) can leave hundreds of thousands of blocks
 * on the lists, up to max_pending of them: a list's low-water mark over a second is what that
 * second never needed, and half of it goes back to malloc at each trim, so a shard returns
 * to its steady size within seconds without freeing what it reuses.
 */
#define STACK_TRIM_NS 1000000000ull
static int stack_class(__u32 frames)
{
	int c = 0;

	while (c < STACK_CLASSES && (8u << c) < frames)
		c++;
	return c < STACK_CLASSES ? c : -1;
}

static __u64 *stack_get(struct join *j, __u32 frames)
{
	int c = stack_class(frames);
	__u64 *p;

	if (c < 0)
		return malloc(8u * frames);
	p = j->stack_free[c];
	if (!p)
		return malloc(8u * (8u << c));
	j->stack_free[c] = (__u64 *)(uintptr_t)p[0]; /* a free block's first word: the next */
	if (--j->stack_n_free[c] < j->stack_low[c])
		j->stack_low[c] = j->stack_n_free[c];
	return p;
}

static void stack_put(struct join *j, __u64 *p, __u32 frames)
{
	int c = stack_class(frames);

	if (!p)
		return;
	if (c < 0) {
		free(p);
		return;
	}
	p[0] = (__u64)(uintptr_t)j->stack_free[c];
	j->stack_free[c] = p;
	j->stack_n_free[c]++;
}

/* Every STACK_TRIM_NS: half of what each list kept unused since the last trim goes. */
static void stacks__trim(struct join *j, __u64 now_ns)
{
	__u32 c, k;

	if (now_ns < j->stack_trim_at + STACK_TRIM_NS)
		return;
	j->stack_trim_at = now_ns;
	for (c = 0; c < STACK_CLASSES; c++) {
		for (k = (j->stack_low[c] + 1) / 2; k; k--) {
			__u64 *p = j->stack_free[c];

			j->stack_free[c] = (__u64 *)(uintptr_t)p[0];
			free(p);
			j->stack_n_free[c]--;
			j->env.st.stacks_trimmed++;
		}
		j->stack_low[c] = j->stack_n_free[c];
	}
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

/* ---- the key hash ---- */

/*
 * A key's home slot. CUPTI numbers a process's API calls in order, and the keys pending at a
 * time are a window of the latest: keys of one process whose correlation ids differ only in
 * their low bits share a block of KEY_BLOCK slots (a 64-byte line of the table), and the
 * blocks are spread by the hash. A shard then touches a few lines of a table of megabytes,
 * not one line (and one TLB entry) a key: with a random home the first load of a slot was a
 * cache miss, a fifth of a shard's time (docs/performance.md). Full blocks make longer probe
 * runs than random homes would: the tag in each slot keeps a probe from reading the entries
 * it passes.
 */
#define KEY_BLOCK 16u

static __u32 key_home(__u32 pid, __u64 corr)
{
	return (__u32)pid_id_hash(pid, corr / KEY_BLOCK) * KEY_BLOCK + (__u32)(corr % KEY_BLOCK);
}

static __u32 key_slot_value(__u32 idx, __u32 home)
{
	return (home & ~KEY_IDX_MASK) | (idx + 1);
}

static __u32 key_slot_idx(const struct idx_slots *t, __u32 slot)
{
	return (t->slot[slot] & KEY_IDX_MASK) - 1;
}

static uint32_t key_slot_home(const void *tab, uint32_t slot)
{
	const struct join *j = container_of(tab, const struct join, keys);
	const struct entry *e = &j->entries[key_slot_idx(&j->keys, slot)];

	return key_home(e->pid, e->corr);
}

static const struct oatab_ops key_ops = {
	.empty = idx_slots__empty,
	.home = key_slot_home,
	.move = idx_slots__move,
	.clear = idx_slots__clear,
};

/* The entry of (pid, corr), whose key_home is home, or NIL; *slot: where it is, or the empty
 * slot where it goes. */
static __u32 key_find_at(const struct join *j, __u32 home, __u32 pid, __u64 corr, __u32 *slot)
{
	__u32 i = home & j->keys.mask, v, e;

	for (;; i = (i + 1) & j->keys.mask) {
		v = j->keys.slot[i];
		if (!v) {
			*slot = i;
			return NIL;
		}
		e = (v & KEY_IDX_MASK) - 1;
		if (!((v ^ home) & ~KEY_IDX_MASK) && j->entries[e].corr == corr &&
		    j->entries[e].pid == pid) {
			*slot = i;
			return e;
		}
	}
}

static __u32 key_find(const struct join *j, __u32 pid, __u64 corr, __u32 *slot)
{
	return key_find_at(j, key_home(pid, corr), pid, corr, slot);
}

/* ---- processes ---- */

static __u32 pid_slot(struct join *j, __u32 pid, bool create)
{
	__u32 i = (__u32)xpu_mix64(pid) & j->pid_mask;

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

/* The process table's slots for common/oatab.h: the records themselves, pid 0 empty. */
static bool pid_empty(const void *tab, uint32_t slot)
{
	return !((const struct pidstate *)tab)[slot].pid;
}

static uint32_t pid_home(const void *tab, uint32_t slot)
{
	return (__u32)xpu_mix64(((const struct pidstate *)tab)[slot].pid);
}

static void pid_move(void *tab, uint32_t to, uint32_t from)
{
	struct pidstate *p = tab;

	p[to] = p[from];
}

static void pid_clear(void *tab, uint32_t slot)
{
	((struct pidstate *)tab)[slot].pid = 0;
}

static const struct oatab_ops pid_ops = {
	.empty = pid_empty,
	.home = pid_home,
	.move = pid_move,
	.clear = pid_clear,
};

static void pid_delete(struct join *j, __u32 slot)
{
	j->n_pids--;
	oatab__delete(j->pids, j->pid_mask, slot, &pid_ops);
}

/* ---- queues ---- */

static bool item_live(const void *owner, const struct qitem *it)
{
	const struct join *j = owner;

	return (j->entries[it->entry].flags & F_USED) && j->entries[it->entry].gen == it->gen;
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

/* GPU work a CUDA graph launched: a kernel, copy or memset node (event.h's graph flags). */
static bool in_graph(const struct xpu_cevent *ev)
{
	if (ev->kind == XPU_REC_GPU_KERNEL)
		return ev->flags & XPU_KERNEL_F_GRAPH;
	if (ev->kind == XPU_REC_GPU_MEMCPY || ev->kind == XPU_REC_GPU_MEMSET)
		return ev->flags & XPU_COPY_F_GRAPH;
	return false;
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
		if (j->env.name && k->name_id && (j->env.enrich & CONF_ENRICH_NAMES))
			ev->name = j->env.name(k->hdr.pid, k->name_id, XPU_STR_KERNEL,
					       &ev->name_len, j->env.ctx);
		break;
	}
	case XPU_REC_GPU_MEMCPY: {
		const struct xpu_gpu_memcpy *m = rec;

		fill_gpu(ev, m->start_ns, m->end_ns, m->correlation_id, m->device_id, m->context_id,
			 m->stream_id);
		ev->bytes = m->bytes;
		ev->sub_kind = m->copy_kind;
		ev->graph_id = m->graph_id;
		ev->graph_node_id = m->graph_node_id;
		break;
	}
	case XPU_REC_GPU_MEMSET: {
		const struct xpu_gpu_memset *m = rec;

		fill_gpu(ev, m->start_ns, m->end_ns, m->correlation_id, m->device_id, m->context_id,
			 m->stream_id);
		ev->bytes = m->bytes;
		ev->value = m->value;
		ev->graph_id = m->graph_id;
		ev->graph_node_id = m->graph_node_id;
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
		} else if (j->env.name && r->name_id && (j->env.enrich & CONF_ENRICH_NAMES)) {
			ev->name = j->env.name(h->pid, r->name_id, XPU_STR_RANGE, &ev->name_len,
					       j->env.ctx);
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
		if (j->env.name && c->counter_id && (j->env.enrich & CONF_ENRICH_NAMES))
			ev->name = j->env.name(h->pid, c->counter_id, XPU_STR_COUNTER,
					       &ev->name_len, j->env.ctx);
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

static void emit_gpu(struct join *j, struct entry *e, const void *rec, __u64 id)
{
	const struct recent_sample *rs;
	struct xpu_cevent ev;

	to_cevent(j, &ev, rec, id);
	if (ev.kind == XPU_REC_GPU_KERNEL)
		counters__attach(&j->counters, &ev, ev.ts_ns, ev.end_ns);
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
			if (j->env.enrich & CONF_ENRICH_STACKS) {
				ev.n_user = e->n_stack;
				ev.stack = e->stack;
			}
		}
		if (in_graph(&ev))
			graph__attribute(&j->graph, &ev);
		/* kernel -> launch -> enclosing range: the user scope is the kernel's root */
		if (e->range_id) {
			add_link(&ev, XPU_LINK_INSIDE_RANGE, e->range_id);
			ev.root_id = e->root_id;
		}
		e->flags |= F_GPU_OUT;
		j->env.st.matched++;
		/* Matched: keep the launch side only a little longer, for the other kernels of
		 * a graph launch (they share the correlation id and arrive together). */
		if (!(e->flags & F_LINGER)) {
			e->flags |= F_LINGER;
			fifo_push(&j->linger_q, j->env.now_ns + j->opts.linger_ns,
				  (__u32)(e - j->entries), e->gen);
		}
	} else if (j->opts.time_window_ns &&
		   (ev.links[0].target = recent__find_call(&j->recent, ev.pid, ev.ts_ns))) {
		/* No launch by id: the timestamp strategy's nearest earlier API call. */
		ev.links[0].type = XPU_LINK_LAUNCHED_BY;
		ev.n_links = 1;
		ev.parent_id = ev.root_id = ev.links[0].target;
		ev.corr_type = XPU_CORR_TIMESTAMP;
		ev.confidence = 0.5f;
		j->env.st.time_matched++;
	} else if (j->opts.time_window_ns &&
		   (rs = recent__find_sample(&j->recent, ev.pid, ((const struct xpu_rec *)rec)->tid,
					     ev.ts_ns))) {
		/* Not even an API call near: the CPU sample of the process taken just before
		 * the work began, and its stack, as the best guess at what launched it. */
		ev.links[0] = (struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = rs->id };
		ev.n_links = 1;
		ev.parent_id = ev.root_id = rs->id;
		ev.corr_type = XPU_CORR_TIMESTAMP;
		ev.confidence = 0.25f;
		if (j->env.enrich & CONF_ENRICH_STACKS) {
			ev.n_user = rs->n_user;
			ev.stack = rs->ips;
		}
		j->env.st.time_matched_samples++;
	} else {
		ev.links[0].target = 0;
		ev.corr_type = XPU_CORR_NONE;
		j->env.st.unmatched++;
	}
	if (j->env.enrich & CONF_ENRICH_STREAMS)
		streams__link(&j->streams, &ev);
	j->emit(&ev, j->env.ctx);
}

/* Emit e's waiting GPU records in arrival order and return their slots. */
static void release_waiting(struct join *j, struct entry *e)
{
	__u32 w = e->wait_head, next;
	unsigned int enrich = j->env.enrich;

	while (w != NIL) {
		next = j->waiting[w].next;
		/* No longer held once emitted: the count drops first, because the emit callback
		 * may checkpoint (the correlator's count of held records must not include an
		 * event that is already in the batch it checkpoints). */
		j->env.st.waiting--;
		j->env.enrich = j->waiting[w].enrich;
		emit_gpu(j, e, j->waiting[w].rec, j->waiting[w].id);
		j->waiting[w].next = j->free_wait;
		j->free_wait = w;
		w = next;
	}
	j->env.enrich = enrich;
	e->wait_head = e->wait_tail = NIL;
}

static void entry_remove(struct join *j, __u32 idx)
{
	struct entry *e = &j->entries[idx];
	__u32 slot, ps = pid_slot(j, e->pid, false);
	struct pidstate *p = &j->pids[ps];

	release_waiting(j, e); /* unmatched unless a launch side arrived */
	key_find(j, e->pid, e->corr, &slot);
	oatab__delete(&j->keys, j->keys.mask, slot, &key_ops);
	if (e->pid_prev != NIL)
		j->entries[e->pid_prev].pid_next = e->pid_next;
	else
		p->head = e->pid_next;
	if (e->pid_next != NIL)
		j->entries[e->pid_next].pid_prev = e->pid_prev;
	if (!--p->n)
		pid_delete(j, ps);
	stack_put(j, e->stack, e->n_stack);
	e->stack = NULL;
	e->flags = 0;
	e->gen++;
	e->next = j->free_entry;
	j->free_entry = idx;
	j->env.st.pending--;
}

/* Pop the oldest live entry (for eviction) from the TTL queue. */
static void evict_oldest(struct join *j)
{
	struct qitem *it;

	while ((it = fifo_peek(&j->ttl_q))) {
		__u32 idx = it->entry, gen = it->gen;

		fifo_pop(&j->ttl_q);
		if (item_live(j, &(struct qitem){ 0, idx, gen })) {
			j->env.st.evicted++;
			entry_remove(j, idx);
			return;
		}
	}
}

static struct entry *entry_get(struct join *j, __u32 pid, __u64 corr, __u64 now_ns)
{
	__u32 home = key_home(pid, corr), slot, idx, ps;
	struct entry *e;

	idx = key_find_at(j, home, pid, corr, &slot);
	if (idx != NIL)
		return &j->entries[idx];
	if ((j->free_entry == NIL && j->hw_entry == j->opts.max_pending) ||
	    (j->n_pids + 1) * 4 > (j->pid_mask + 1) * 3) {
		evict_oldest(j);
		while ((j->n_pids + 1) * 4 > (j->pid_mask + 1) * 3 && j->env.st.pending)
			evict_oldest(j);
		key_find_at(j, home, pid, corr, &slot); /* the table changed */
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
	j->keys.slot[slot] = key_slot_value(idx, home);
	fifo_push(&j->ttl_q, now_ns + j->opts.ttl_ns, idx, e->gen);
	j->env.st.pending++;
	return e;
}

/* GPU work whose launch stack the CUPTI library records: kernels, copies and memsets (the
 * copy and memset APIs, cupti/convert.h's conv__is_transfer). */
static bool has_launch_stack(__u32 type)
{
	return type == XPU_REC_GPU_KERNEL || type == XPU_REC_GPU_MEMCPY ||
	       type == XPU_REC_GPU_MEMSET;
}

/*
 * With launch_wait_ns, a kernel, copy or memset whose CUDA_API has come waits for its LAUNCH
 * (the launch stack) that long: the CUPTI library's records come within its flush interval,
 * the launch marker's through the CPU source's BPF ring, which may hold them longer, so going
 * out with the API call alone would often lose the stack. Other GPU records of a key that
 * waits (a synchronisation) wait with them, in order. Only marked calls wait at all (an
 * unmarked call's key gives up at once, on_launch_side): a library older than the marking of
 * copies never makes a copy wait.
 */
static bool launch_awaited(const struct join *j, const struct entry *e, __u32 type)
{
	return j->opts.launch_wait_ns && !(e->flags & (F_LAUNCH | F_GAVE_UP)) &&
	       (has_launch_stack(type) || (e->flags & F_AWAIT));
}

static bool waits_stacked(const struct join *j, const struct entry *e)
{
	__u32 w;

	for (w = e->wait_head; w != NIL; w = j->waiting[w].next)
		if (has_launch_stack(((const struct xpu_rec *)j->waiting[w].rec)->type))
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
	fifo_push(&j->launch_q, j->env.now_ns + j->opts.launch_wait_ns, (__u32)(e - j->entries),
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
		j->env.st.launch_wait_expired++;
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
	ranges__annotate(&j->ranges, &ev);
	corr = ev.correlation_id;
	j->emit(&ev, j->env.ctx);
	if (h->type == XPU_REC_CUDA_API)
		recent__add_call(&j->recent, &ev);
	if (j->opts.no_exact)
		return;
	if (!corr)
		return;
	/* A graph node's creation: no key (nothing carries its id as a correlation id), its
	 * stack is kept for the node's kernels. */
	if (h->type == XPU_REC_LAUNCH && (corr & XPU_LAUNCH_GRAPH_NODE)) {
		const struct xpu_launch *l = rec;

		graph__put(&j->graph, h->pid, corr & ~XPU_LAUNCH_GRAPH_NODE, l->ips, l->n_user);
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
			j->env.st.late_launch++;
		if (!e->launch_id) {
			e->launch_id = id;
			e->flags |= F_LAUNCH;
			if (l->n_user) {
				e->stack = stack_get(j, l->n_user);
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
	if (h->type == XPU_REC_CUDA_API && waits_stacked(j, e) &&
	    launch_awaited(j, e, XPU_REC_GPU_KERNEL)) {
		j->env.st.launch_waited += waiting_count(j, e);
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
			j->env.st.evicted++;
		emit_gpu(j, e && (e->flags & F_API) ? e : NULL, rec, id);
		return;
	}
	/* Held from here on, before entry_get, which may evict (and emit) to make room: the
	 * record must count in `waiting` whenever the emit callback runs. */
	w = &j->waiting[slot];
	memcpy(w->rec, rec, size);
	w->size = (__u16)size;
	w->enrich = (__u16)j->env.enrich;
	w->id = id;
	w->next = NIL;
	j->env.st.waiting++;
	j->env.st.waited++;
	e = entry_get(j, h->pid, corr, now_ns);
	if (e->wait_tail != NIL)
		j->waiting[e->wait_tail].next = slot;
	else
		e->wait_head = slot;
	e->wait_tail = slot;
	if (e->flags & F_API) {
		j->env.st.launch_waited++;
		await_launch(j, e);
	}
}

static void on_process_exit(struct join *j, __u32 pid, __u64 now_ns)
{
	__u32 ps = pid_slot(j, pid, false), e;

	exits__push(&j->exits, pid, now_ns + j->opts.exit_grace_ns);
	if (ps == NIL)
		return;
	for (e = j->pids[ps].head; e != NIL; e = j->entries[e].pid_next) {
		if (j->entries[e].flags & F_EXITING)
			continue;
		j->entries[e].flags |= F_EXITING;
		fifo_push(&j->exit_q, now_ns + j->opts.exit_grace_ns, e, j->entries[e].gen);
	}
}

/* RANGE: nesting, then the counters over a range that ended (a pop, or an end after its
 * start). */
static void on_range(struct join *j, struct xpu_cevent *ev)
{
	__u64 push_ts;

	if (ranges__range(&j->ranges, ev, &push_ts))
		counters__attach(&j->counters, ev, push_ts, ev->ts_ns);
	else if (ev->sub_kind == XPU_RANGE_START)
		counters__range_start(&j->counters, ev);
	else if (ev->sub_kind == XPU_RANGE_END)
		counters__range_end(&j->counters, ev);
}

/* A CPU sample's event: placed among its thread's ranges by its time, inside the CUDA call it
 * was taken in, remembered for the timestamp strategy, out. */
static void sample_out(struct join *j, const void *rec, __u64 id, __u64 call)
{
	struct xpu_cevent ev;

	to_cevent(j, &ev, rec, id);
	ranges__place(&j->ranges, &ev);
	recent__annotate_sample(&j->recent, &ev, call);
	if (j->opts.time_window_ns)
		recent__remember_sample(&j->recent, &ev);
	j->emit(&ev, j->env.ctx);
}

static void held__out(struct join *j, struct held_sample *h)
{
	unsigned int enrich = j->env.enrich;

	j->env.enrich = h->enrich; /* its source's stages, not the record's being read */
	sample_out(j, h->rec, h->id, h->call);
	j->env.enrich = enrich;
	free(h);
	j->hold_live--;
}

/* Let the held samples go, oldest first, while the oldest may go: its thread's ranges are
 * known up to its time, its wait is over (counted when they were not), or all. */
static void hold__release(struct join *j, __u64 now_ns, bool all)
{
	while (j->hold_n) {
		struct held_sample *h = j->hold[j->hold_head];
		const struct xpu_rec *r = h ? (const struct xpu_rec *)h->rec : NULL;

		if (h && !all && !ranges__known(&j->ranges, r->pid, r->tid, r->ts_ns)) {
			if (h->deadline > now_ns)
				break;
			j->env.st.range_wait_expired++;
		}
		j->hold[j->hold_head] = NULL;
		j->hold_head = (j->hold_head + 1) % HOLD_MAX;
		j->hold_n--;
		if (h)
			held__out(j, h);
	}
}

/* pid exits: its held samples go out before its exit does (a sink may close its tracks). */
static void hold__release_pid(struct join *j, __u32 pid)
{
	__u32 k, i;

	for (k = 0; k < j->hold_n && j->hold_live; k++) {
		i = (j->hold_head + k) % HOLD_MAX;
		if (j->hold[i] && ((const struct xpu_rec *)j->hold[i]->rec)->pid == pid) {
			held__out(j, j->hold[i]);
			j->hold[i] = NULL;
		}
	}
	hold__release(j, j->env.now_ns, false); /* the empty slots at the head */
}

/* Whether the CPU sample rec waits (true: it is held, and out later). */
static bool hold__sample(struct join *j, const void *rec, __u32 size, __u64 id, __u64 now_ns)
{
	const struct xpu_rec *r = rec;
	struct held_sample *h;

	if (!j->hold || !ranges__may_have(&j->ranges, r->pid) ||
	    ranges__known(&j->ranges, r->pid, r->tid, r->ts_ns))
		return false;
	if (j->hold_n == HOLD_MAX) { /* full: the oldest goes now, its wait cut short */
		struct held_sample *old = j->hold[j->hold_head];

		j->hold[j->hold_head] = NULL;
		j->hold_head = (j->hold_head + 1) % HOLD_MAX;
		j->hold_n--;
		if (old) {
			j->env.st.range_wait_full++;
			held__out(j, old);
		}
	}
	h = malloc(sizeof(*h) + size);
	if (!h)
		return false; /* placed now, as without the wait */
	*h = (struct held_sample){ .id = id,
				   .call = recent__call_at(&j->recent, r->pid, r->tid, r->ts_ns),
				   .deadline = now_ns + j->opts.range_wait_ns,
				   .size = size,
				   .enrich = j->env.enrich };
	memcpy(h->rec, rec, size);
	j->hold[(j->hold_head + j->hold_n++) % HOLD_MAX] = h;
	j->hold_live++;
	j->env.st.range_waited++;
	return true;
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

	j->env.st.in++;
	j->env.enrich = enrich;
	j->env.now_ns = now_ns;
	/* The PMU source writes a CPU's reading into every shard's ring: one shard sends it. */
	if (h->type == XPU_REC_PMU_COUNTER && j->opts.shard &&
	    ((const struct xpu_pmu_counter *)rec)->scope == XPU_PMU_SCOPE_CPU) {
		j->env.st.counters_routed++;
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
	case XPU_REC_CPU_SAMPLE:
		if (!hold__sample(j, rec, size, id, now_ns))
			sample_out(j, rec, id, 0);
		break;
	default:
		to_cevent(j, &ev, rec, id);
		if (h->type == XPU_REC_PMU_COUNTER)
			counters__reading(&j->counters, rec);
		if (h->type == XPU_REC_RANGE)
			on_range(j, &ev);
		if (h->type == XPU_REC_PROC_EXIT && h->pid == h->tid && j->hold_live)
			hold__release_pid(j, h->pid);
		j->emit(&ev, j->env.ctx);
		if (h->type == XPU_REC_PROC_EXIT) {
			/* the thread is gone: its open ranges end with it */
			ranges__thread_exit(&j->ranges, h->pid, h->tid, h->ts_ns);
			if (h->pid == h->tid)
				on_process_exit(j, h->pid, now_ns);
		}
		/* a range record or an exit may have made the oldest held samples placeable */
		if (j->hold_live && (h->type == XPU_REC_RANGE || h->type == XPU_REC_PROC_EXIT))
			hold__release(j, now_ns, false);
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
			j->env.st.expired++;
			entry_remove(j, idx);
		}
	}
}

void join__expire(struct join *j, __u64 now_ns)
{
	/* first: a held sample's process may be about to be forgotten */
	hold__release(j, now_ns, now_ns == ~0ull);
	expire_queue(j, &j->ttl_q, now_ns);
	expire_queue(j, &j->exit_q, now_ns);
	expire_queue(j, &j->linger_q, now_ns);
	expire_launch_wait(j, now_ns);
	/* after the keys: a process's last GPU records have gone out, with their stream links */
	exits__expire(&j->exits, now_ns);
	streams__expire(&j->streams, now_ns);
	stacks__trim(j, now_ns);
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
	j->env.name = fn;
}

__u64 join__next_id(const struct join *j)
{
	return j->next_id;
}

void join__stats(const struct join *j, struct join_stats *st)
{
	__u32 c;

	*st = j->env.st;
	st->range_held = j->hold_live;
	st->stacks_kept = 0;
	for (c = 0; c < STACK_CLASSES; c++)
		st->stacks_kept += j->stack_n_free[c];
}

/* The last drop hook: the shard forgets what it keeps per process (names). */
static void gone_notify(void *join, __u32 pid)
{
	struct join *j = join;

	if (j->gone_fn)
		j->gone_fn(pid, j->env.ctx);
}

/* The sizes of the two big arrays, for xpu_big_alloc and xpu_big_free */
static size_t entries_len(const struct join *j)
{
	return (size_t)j->opts.max_pending * sizeof(*j->entries);
}

static size_t key_slots_len(const struct join *j)
{
	return ((size_t)j->keys.mask + 1) * sizeof(*j->keys.slot);
}

static void *queue_items(__u32 cap)
{
	return calloc(cap, sizeof(struct qitem));
}

struct join *join__new(const struct join_opts *opts, join_emit_fn emit, void *ctx)
{
	__u32 qcap = 2 * opts->max_pending;
	struct join *j;

	if (!opts->max_pending || !opts->max_waiting || !emit || opts->max_pending > (1u << 24) ||
	    opts->max_streams > (1u << 24) || opts->max_graph_nodes > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->opts = *opts;
	if (!j->opts.max_streams)
		j->opts.max_streams = 16384;
	if (!j->opts.stream_idle_ns)
		j->opts.stream_idle_ns = 60000000000ull;
	if (!j->opts.max_graph_nodes)
		j->opts.max_graph_nodes = 65536;
	j->emit = emit;
	j->env.ctx = ctx;
	j->env.enrich = CONF_ENRICH_ALL;
	j->next_id = opts->first_id ? opts->first_id : 1;
	j->keys.mask = pow2_at_least(2ull * opts->max_pending) - 1;
	/* Processes with pending state: far fewer than keys in practice; entry_get evicts
	 * when this table is three quarters full. */
	j->pid_mask = pow2_at_least(2ull * opts->max_pending < PIDS_MAX ? 2ull * opts->max_pending :
									  PIDS_MAX) -
		      1;
	/* Looked up at random once or twice a record: in huge pages where the kernel has them,
	 * so that the lookup's cache miss is not also a TLB miss (common/big_alloc.h) */
	j->entries = xpu_big_alloc(entries_len(j));
	j->keys.slot = xpu_big_alloc(key_slots_len(j));
	j->pids = calloc((size_t)j->pid_mask + 1, sizeof(*j->pids));
	j->waiting = calloc(opts->max_waiting, sizeof(*j->waiting));
	j->ttl_q = (struct fifo){
		.items = queue_items(qcap), .cap = qcap, .live = item_live, .owner = j
	};
	j->exit_q = j->linger_q = j->launch_q = j->ttl_q;
	j->exit_q.items = queue_items(qcap);
	j->linger_q.items = queue_items(qcap);
	j->launch_q.items = opts->launch_wait_ns ? queue_items(qcap) : NULL;
	j->hold = opts->range_wait_ns ? calloc(HOLD_MAX, sizeof(*j->hold)) : NULL;
	/* each engine's own state (0 or -ENOMEM; __fini frees a half-made one) */
	if (ranges__init(&j->ranges, &j->env) ||
	    recent__init(&j->recent, &j->env, opts->time_window_ns) ||
	    streams__init(&j->streams, &j->env, j->opts.max_streams, j->opts.stream_idle_ns) ||
	    counters__init(&j->counters, &j->env) ||
	    graph__init(&j->graph, &j->env, j->opts.max_graph_nodes) || exits__init(&j->exits) ||
	    /* what each forgets once a process's exit grace has passed, the shard's names last
	     * (join__expire runs the key queues first: a process's last GPU records have gone
	     * out, with their stream links, when its streams go) */
	    exits__add_hook(&j->exits, streams__drop_pid, &j->streams) ||
	    exits__add_hook(&j->exits, counters__drop_pid, &j->counters) ||
	    exits__add_hook(&j->exits, ranges__drop_pid, &j->ranges) ||
	    exits__add_hook(&j->exits, graph__drop_pid, &j->graph) ||
	    exits__add_hook(&j->exits, gone_notify, j) || !j->entries || !j->keys.slot ||
	    !j->pids || !j->waiting || !j->ttl_q.items || !j->exit_q.items || !j->linger_q.items ||
	    (opts->launch_wait_ns && !j->launch_q.items) || (opts->range_wait_ns && !j->hold)) {
		join__free(j);
		errno = ENOMEM;
		return NULL;
	}
	/* Free lists start empty and slots are first taken in order (hw_*): nothing is
	 * touched up front, so a restarted shard is ready in milliseconds whatever the bounds. */
	j->free_entry = j->free_wait = NIL;
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
	for (i = 0; i < STACK_CLASSES; i++) {
		while (j->stack_free[i]) {
			__u64 *p = j->stack_free[i];

			j->stack_free[i] = (__u64 *)(uintptr_t)p[0];
			free(p);
		}
	}
	xpu_big_free(j->entries, entries_len(j));
	xpu_big_free(j->keys.slot, key_slots_len(j));
	free(j->pids);
	free(j->waiting);
	free(j->ttl_q.items);
	free(j->exit_q.items);
	free(j->linger_q.items);
	free(j->launch_q.items);
	if (j->hold)
		for (i = 0; i < HOLD_MAX; i++)
			free(j->hold[i]);
	free(j->hold);
	ranges__fini(&j->ranges);
	recent__fini(&j->recent);
	streams__fini(&j->streams);
	counters__fini(&j->counters);
	graph__fini(&j->graph);
	exits__fini(&j->exits);
	free(j);
}
