// SPDX-License-Identifier: MIT
/* The stats format's accumulators: each event to its topic's tables (kernels, copies, the
 * queue delay's launch map, CPU samples, counters), and the merge of an interval into the
 * run. stats.h says what is kept. */
#include "actors/sink/stats.h"

#include "actors/sink/derived.h"
#include "actors/sink/table_hash.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/mix.h"
#include "common/pyframe.h"

/* ---- counting ------------------------------------------------------------------------ */

/* The kernel's entry: found, made, or the shared one past max_kernels. */
static struct kstat *kernel_of(struct stats *st, const char *name, __u32 len)
{
	__u64 h = xpu_mix64(sink_hash_words(0, name, len));
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
 * marker, inside that call, when the API record is not known) to the kernel's start. The
 * links are looked up in order and the first call found ends the search: the correlator
 * names the call before the marker (join.c), and a marker whose call was seen is not in the
 * map (launch_marker_redundant), so looking it up too read a slot no put had touched lately,
 * a cache miss a GPU record (perf of record's group in a pipeline: launch_map__find 6 % of
 * the sink). */
static void queue_delay(struct stats *st, __u32 producer, const struct xpu_cevent *e)
{
	const struct recent_launch *s, *api = NULL, *marker = NULL;
	struct period *p = &st->cur;
	__u32 i;

	for (i = 0; i < e->n_links && i < XPU_WIRE_LINKS_MAX; i++) {
		if (e->links[i].type != XPU_LINK_LAUNCHED_BY)
			continue;
		s = launch_map__find(&st->launches, producer, e->links[i].target);
		if (s && s->kind == XPU_REC_CUDA_API) {
			api = s;
			break;
		}
		if (s)
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

/* The index + 1 of a counter name, made when new; 0 past CTR_NAMES_MAX or without memory. */
static __u32 ctr_name_of(struct counters *c, const char *name, __u32 len)
{
	__u64 h = xpu_hash_bytes(name, len);
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
struct ctr_group *counters__group(struct counters *c, __u32 name, __u32 owner, bool create)
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
		g = counters__group(c, name, e->sub_kind == XPU_PMU_SCOPE_CPU ? CTR_SYSTEM : e->pid,
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
		if (!derived__is(e->counters[i].name, e->counters[i].name_len,
				 derived_instructions))
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
	if (st->counts_only) /* what a sketch keeps apart from its buckets */
		sketch__count(&k->cur, d);
	else if (sketch__add(&k->cur, d))
		st->sketch_nomem++;
	kernel_counters(k, e);
	if (!st->counts_only)
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
	__u64 h = sink_hash_words(kernel, name, len);
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

/* Frame k of e's stack as a function, by the text the folded format writes for it: a Python
 * frame's function, "[py] QUALNAME (FILE)" (every line of it one function) or "[py] 0x<code>";
 * a native frame's name when the event has one, else its address in hex. text has room for
 * FRAME_TEXT_MAX bytes. */
#define FRAME_TEXT_MAX XPU_PYFRAME_FUNCTION_SIZE(XPU_WIRE_FRAME_NAME_MAX)

/* "0x" and at in hex, NUL-terminated (HEX_FRAME_MAX + 1 bytes), as "0x%" PRIx64 prints it
 * (a sample has several frames without names: printf was most of its cost). Its length. */
static __u32 hex_frame(char *text, __u64 at)
{
	static const char digits[] = "0123456789abcdef";
	__u32 n = 1, k;

	while (n < 16 && at >> 4 * n)
		n++;
	text[0] = '0';
	text[1] = 'x';
	for (k = n; k > 0; k--, at >>= 4)
		text[1 + k] = digits[at & 15];
	text[2 + n] = 0;
	return 2 + n;
}
static struct cpu_fn *cpu__frame(struct cpu *c, const struct xpu_cevent *e, __u32 k, char *text)
{
	const char *name = e->frames ? e->frames[k] : NULL;
	bool kernel = k < e->n_kernel; /* kernel frames come first */

	if (!kernel && xpu_pyframe__is(e->stack[k]))
		return cpu__function(c, text,
				     (__u32)xpu_pyframe__function(text, FRAME_TEXT_MAX, e->stack[k],
								  name),
				     false);
	if (name && name[0])
		return cpu__function(c, name, (__u32)strnlen(name, XPU_WIRE_FRAME_NAME_MAX),
				     kernel);
	return cpu__function(c, text, hex_frame(text, e->stack[k]), kernel);
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
	char text[FRAME_TEXT_MAX];
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
	if (!c->max_fns) /* no function table (the metrics format): per process only */
		return;
	c->serial++;
	for (k = 0; k < n; k++) {
		f = cpu__frame(c, e, k, text);
		if (!k)
			cpu_time__add(&f->cur.self, e->value);
		if (f->last_sample != c->serial) {
			f->last_sample = c->serial;
			cpu_time__add(&f->cur.total, e->value);
		}
	}
}

/*
 * A LAUNCH marker is remembered only for GPU work whose call is unknown (queue_delay takes the
 * call first): the marker of the call put last, the same call by producer, thread and
 * correlation id, is not. That halves the puts of a launch (this format's instructions an
 * event, callgrind of fmt_bench: 486 -> 429), and the map holds twice the calls. A marker
 * put just after its call would be forgotten just after it too, so no queue delay is lost
 * but at that edge. A call is remembered as the last one here.
 */
static bool launch_marker_redundant(struct stats *st, __u32 producer, const struct xpu_cevent *e)
{
	if (e->kind == XPU_REC_CUDA_API) {
		st->last_call.correlation_id = e->correlation_id;
		st->last_call.producer = producer;
		st->last_call.pid = e->pid;
		st->last_call.tid = e->tid;
		return false;
	}
	return e->correlation_id && e->correlation_id == st->last_call.correlation_id &&
	       producer == st->last_call.producer && e->pid == st->last_call.pid &&
	       e->tid == st->last_call.tid;
}

void stats__batch(void *state, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct stats *st = state;
	struct period *p = &st->cur;
	struct recent_launch *l;
	struct volume *v;
	__u32 i;

	xpu_wire_seq__batch(&st->seq, b);
	p->batches++;
	p->events += b->n_events;
	for (i = 0; i < b->n_events; i++) {
		const struct xpu_cevent *e = &ev[i];

		if (i + LAUNCH_MAP_PREFETCH_AHEAD < b->n_events &&
		    !st->counts_only) /* its slot is a cache miss (markers: rarely put, below) */
			launch_map__prefetch_event(&st->launches, b->producer,
						   &ev[i + LAUNCH_MAP_PREFETCH_AHEAD], false);
		if (e->kind < XPU_REC_TYPE_MAX)
			p->by_kind[e->kind]++;
		note_time(p, e->ts_ns, e->end_ns);
		switch (e->kind) {
		case XPU_REC_CUDA_API:
		case XPU_REC_LAUNCH:
			if (st->counts_only || launch_marker_redundant(st, b->producer, e))
				break;
			l = launch_map__put(&st->launches, b->producer, e->id);
			l->ts = e->ts_ns;
			l->kind = e->kind;
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
void stats__merge(struct stats *st)
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
