// SPDX-License-Identifier: MIT
/* stats.json and the interval lines from the accumulators (docs/stats.md). */
#include "actors/sink/stats.h"

#include "actors/sink/derived.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/json_escape.h"

static void text_write(void *t, const char *p, size_t len)
{
	text__bytes(t, p, len);
}

/* A name's characters inside a JSON string: common/json_escape.h's policy, the one of every
 * JSON file we write. */
static void put_json_chars(struct text *t, const char *s, size_t n)
{
	xpu_json_escape_to(s, n, 0, text_write, t);
}

/* A name as a JSON string. */
static void put_json_str(struct text *t, const char *s, size_t n)
{
	text__bytes(t, "\"", 1);
	put_json_chars(t, s, n);
	text__bytes(t, "\"", 1);
}

/* The sketch's summary as JSON members, after an opening brace the caller wrote. */
static void put_sketch(struct text *t, const struct sketch *s)
{
	text__put(t,
		  "\"count\": %" PRIu64 ", \"total_ns\": %" PRIu64 ", \"mean_ns\": %" PRIu64
		  ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
		  ", \"p95_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64,
		  (uint64_t)s->count, (uint64_t)s->sum, (uint64_t)stats_mean(s->sum, s->count),
		  (uint64_t)(s->count ? s->min : 0), (uint64_t)(s->count ? s->max : 0),
		  (uint64_t)stats_round_ns(sketch__quantile(s, 0.50)),
		  (uint64_t)stats_round_ns(sketch__quantile(s, 0.95)),
		  (uint64_t)stats_round_ns(sketch__quantile(s, 0.99)));
}

static void put_kernel_name(struct text *t, const struct stats *st, const struct kstat *k)
{
	if (k == &st->other)
		text__put(t, "\"[other kernels]\"");
	else if (!k->len)
		text__put(t, "\"[unnamed kernel]\"");
	else
		put_json_str(t, k->name, k->len);
}

static void put_volume(struct text *t, const struct volume *v)
{
	text__put(t,
		  "\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"total_ns\": %" PRIu64
		  ", \"mean_ns\": %" PRIu64 ", \"bandwidth_gbps\": %.3f",
		  (uint64_t)v->count, (uint64_t)v->bytes, (uint64_t)v->ns,
		  (uint64_t)stats_mean(v->ns, v->count),
		  v->ns ? (double)v->bytes / (double)v->ns : 0.0);
}

/* The function's name as the folded format writes its frame: kernel frames with "_[k]". */
static void put_function_name(struct text *t, const struct cpu *c, const struct cpu_fn *f)
{
	if (f == &c->other) {
		text__put(t, "\"(other)\"");
		return;
	}
	text__bytes(t, "\"", 1);
	put_json_chars(t, f->name, f->len);
	text__put(t, "%s\"", f->kernel ? "_[k]" : "");
}

/* The first CPU_TOP_FUNCTIONS rows by self or total time, as a JSON list named key. */
static void put_function_list(struct text *t, const struct cpu *c, const char *key,
			      struct frow *rows, __u32 n, bool self, __u64 whole)
{
	__u32 i;

	n = frows__sort(rows, n, self);
	text__put(t, ",\n  \"%s\": [", key);
	for (i = 0; i < n && i < CPU_TOP_FUNCTIONS; i++) {
		const struct cpu_fn_time *ft = rows[i].t;

		text__put(t, "%s\n    {\"name\": ", i ? "," : "");
		put_function_name(t, c, rows[i].f);
		text__put(t,
			  ", \"self_ns\": %" PRIu64
			  ", \"self_pct\": %.3f, \"self_samples\": %" PRIu64
			  ", \"total_ns\": %" PRIu64
			  ", \"total_pct\": %.3f, \"total_samples\": %" PRIu64 "}",
			  (uint64_t)ft->self.ns, stats_pct(ft->self.ns, whole),
			  (uint64_t)ft->self.samples, (uint64_t)ft->total.ns,
			  stats_pct(ft->total.ns, whole), (uint64_t)ft->total.samples);
	}
	text__put(t, "%s]", i ? "\n  " : "");
}

/* The CPU samples of a period as the member "cpu"; its limits are the run's so far. */
void stats__put_cpu(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	const struct cpu *c = &st->cpu;
	const struct cpu_fn_time *other = run ? &c->other.run : &c->other.cur;
	const struct cpu_time *other_proc = run ? &c->other_proc.run : &c->other_proc.cur;
	struct frow *fns;
	struct prow *procs;
	__u32 i, n_fns, n_procs;

	procs = cpu__process_rows(c, run, &n_procs);
	fns = cpu__function_rows(c, run, &n_fns);
	if (!procs || !fns)
		t->failed = true;
	/* "(other)" is not one function, nor one process: not in the counts */
	text__put(t,
		  "  \"cpu\": {\"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
		  ", \"without_stack\": %" PRIu64 ", \"processes\": %u, \"threads\": %u"
		  ", \"functions\": %u",
		  (uint64_t)p->cpu.samples, (uint64_t)p->cpu.ns, (uint64_t)p->cpu_no_stack,
		  n_procs - !!other_proc->samples, cpu__threads_seen(c, run),
		  n_fns - !!other->total.samples);
	text__put(t, ",\n  \"top_processes\": [");
	for (i = 0; i < n_procs && i < CPU_TOP_PROCESSES; i++) {
		const struct cpu_proc *pr = procs[i].p;

		text__put(t, "%s\n    {\"pid\": ", i ? "," : "");
		if (pr == &c->other_proc) {
			text__put(t, "null, \"comm\": \"(other)\"");
		} else {
			text__put(t, "%u, \"comm\": ", pr->pid);
			put_json_str(t, pr->comm, strlen(pr->comm));
		}
		text__put(t,
			  ", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
			  ", \"share_pct\": %.3f}",
			  (uint64_t)procs[i].t->samples, (uint64_t)procs[i].t->ns,
			  stats_pct(procs[i].t->ns, p->cpu.ns));
	}
	text__put(t, "%s]", i ? "\n  " : "");
	put_function_list(t, c, "top_self", fns, n_fns, true, p->cpu.ns);
	put_function_list(t, c, "top_total", fns, n_fns, false, p->cpu.ns);
	text__put(t,
		  ",\n  \"limits\": {\"max_functions\": %u, \"frames_over_max\": %" PRIu64
		  ", \"max_processes\": %u, \"process_samples_over_max\": %" PRIu64
		  ", \"max_threads\": %u, \"thread_samples_over_max\": %" PRIu64 "}},\n",
		  c->max_fns, (uint64_t)c->frames_over, CPU_PROCESSES_MAX,
		  (uint64_t)(c->other_proc.run.samples + c->other_proc.cur.samples),
		  CPU_THREADS_MAX, (uint64_t)c->threads_over);
	free(fns);
	free(procs);
}

static void put_ctr_name(struct text *t, const struct counters *c, __u32 name)
{
	const struct ctr_name *n = &c->names[name - 1];

	if (!n->len)
		text__put(t, "\"[unnamed counter]\"");
	else
		put_json_str(t, n->name, n->len);
}

/* owner's counters as the elements of a JSON list, each on its own line at indent, and the
 * list's closing bracket on a line of its own at close (on the same line when empty). */
static void put_ctr_rows(struct text *t, const struct stats *st, __u32 owner, bool run, __u64 span,
			 const char *indent, const char *close)
{
	__u32 names[CTR_NAMES_MAX], n = stats__ctr_names_of(st, owner, run, names), i;

	for (i = 0; i < n; i++) {
		const struct ctr_acc *a = stats__ctr_get(st, names[i], owner, run);

		text__put(t, "%s\n%s{\"name\": ", i ? "," : "", indent);
		put_ctr_name(t, &st->ctr, names[i]);
		text__put(
			t,
			", \"readings\": %" PRIu64 ", \"not_counted\": %" PRIu64 ", \"total\": %.3f"
			", \"rate_per_s\": %.3f, \"running_min_pct\": %.3f, \"running_mean_pct\": %.3f}",
			(uint64_t)a->readings, (uint64_t)(a->readings - a->counted), a->total,
			ctr_acc__rate(a, span), a->counted ? 100 * a->running_min : 0.0,
			100 * ctr_acc__running_mean(a));
	}
	text__put(t, "%s%s]", n ? "\n" : "", n ? close : "");
}

static void put_ctr_derived(struct text *t, const struct stats *st, __u32 owner, bool run,
			    __u64 span)
{
	size_t i;
	double v;
	int n = 0;

	text__put(t, "{");
	for (i = 0; i < DERIVED_RATIOS; i++)
		if (stats__ctr_ratio(st, i, owner, run, span, &v))
			text__put(t, "%s\"%s\": %.6f", n++ ? ", " : "", derived_ratios[i].key, v);
	text__put(t, "}");
}

/* The counters of a period as the member "counters". span: the period's, for the rates. */
void stats__put_counters(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	const struct counters *c = &st->ctr;
	__u64 span = p->first_ns ? p->last_ns - p->first_ns : 0, readings = 0, counted = 0;
	__u32 i, n, n_procs, rank_by, names = 0, names_seen[CTR_NAMES_MAX] = { 0 };
	struct ctr_prow *procs;
	struct krow *rows;

	for (i = 0; c->groups && i < 2 * CTR_GROUPS_MAX; i++) {
		const struct ctr_acc *a = ctr_group__acc(&c->groups[i], run);

		if (!c->groups[i].name || !a->readings)
			continue;
		readings += a->readings;
		counted += a->counted;
		names += !names_seen[c->groups[i].name - 1]++;
	}
	procs = stats__ctr_processes(st, run, &n_procs, &rank_by);
	if (!procs)
		t->failed = true;
	text__put(t,
		  "  \"counters\": {\"readings\": %" PRIu64 ", \"not_counted\": %" PRIu64
		  ", \"names\": %u, \"processes\": %u,\n  \"system\": [",
		  (uint64_t)readings, (uint64_t)(readings - counted), names, n_procs);
	put_ctr_rows(t, st, CTR_SYSTEM, run, span, "    ", "  ");
	text__put(t, ",\n  \"system_derived\": ");
	put_ctr_derived(t, st, CTR_SYSTEM, run, span);
	text__put(t, ",\n  \"rank_by\": ");
	if (rank_by)
		put_ctr_name(t, c, rank_by);
	else
		text__put(t, "null");
	text__put(t, ",\n  \"top_processes\": [");
	for (i = 0; i < n_procs && i < CTR_TOP_PROCESSES; i++) {
		text__put(t, "%s\n    {\"pid\": %u, \"counters\": [", i ? "," : "", procs[i].pid);
		put_ctr_rows(t, st, procs[i].pid, run, span, "      ", "    ");
		text__put(t, ", \"derived\": ");
		put_ctr_derived(t, st, procs[i].pid, run, span);
		text__put(t, "}");
	}
	text__put(t, "%s],\n  \"kernels\": [", i ? "\n  " : "");
	free(procs);
	rows = stats__kernel_rows(st, run, &n, NULL);
	if (!rows)
		t->failed = true;
	for (i = 0, names = 0; i < n; i++) {
		const struct kctr *k = kstat__ctr(rows[i].k, run);

		if (!k->runs)
			continue;
		text__put(t, "%s\n    {\"name\": ", names++ ? "," : "");
		put_kernel_name(t, st, rows[i].k);
		text__put(t,
			  ", \"runs\": %" PRIu64 ", \"with_counters\": %" PRIu64
			  ", \"estimated\": %" PRIu64 ", \"ipc_runs\": %" PRIu64
			  ", \"ipc_mean\": %.6f, \"instructions_runs\": %" PRIu64
			  ", \"instructions_mean\": %.3f}",
			  (uint64_t)rows[i].s->count, (uint64_t)k->runs, (uint64_t)k->estimated,
			  (uint64_t)k->ipc_runs,
			  k->ipc_runs ? k->ipc_sum / (double)k->ipc_runs : 0.0,
			  (uint64_t)k->insn_runs,
			  k->insn_runs ? k->insn_sum / (double)k->insn_runs : 0.0);
	}
	free(rows);
	text__put(t,
		  "%s],\n  \"limits\": {\"max_names\": %u, \"max_groups\": %u, \"names\": %u"
		  ", \"groups\": %u, \"readings_over_max\": %" PRIu64 "}},\n",
		  names ? "\n  " : "", CTR_NAMES_MAX, CTR_GROUPS_MAX, c->n_names, c->n_groups,
		  (uint64_t)c->over);
}

/* Everything but SM-active, for the run or one interval, as members of an open object. */
void stats__put_period(struct text *t, const struct stats *st, const struct period *p, bool run)
{
	static const char *const stages[] = { "source", "correlator", "unknown" };
	__u64 gpu = 0, lost = 0, stage;
	double conf = 0;
	struct krow *rows;
	struct volume all = { 0 };
	__u32 i, n, s, named;

	text__put(t,
		  "  \"time\": {\"first_ns\": %" PRIu64 ", \"last_ns\": %" PRIu64
		  ", \"span_ns\": %" PRIu64 "},\n",
		  (uint64_t)p->first_ns, (uint64_t)p->last_ns,
		  (uint64_t)(p->first_ns ? p->last_ns - p->first_ns : 0));
	text__put(t,
		  "  \"events\": {\"batches\": %" PRIu64 ", \"total\": %" PRIu64 ", \"by_kind\": {",
		  (uint64_t)p->batches, (uint64_t)p->events);
	for (i = 0, n = 0; i < XPU_REC_TYPE_MAX; i++)
		if (p->by_kind[i])
			text__put(t, "%s\"%s\": %" PRIu64, n++ ? ", " : "", xpu_rec_type__name(i),
				  (uint64_t)p->by_kind[i]);
	text__put(t, "}},\n");
	stats__put_cpu(t, st, p, run);

	rows = stats__kernel_rows(st, run, &n, &named);
	text__put(t,
		  "  \"kernels\": {\"count\": %" PRIu64 ", \"total_ns\": %" PRIu64
		  ", \"names\": %u, \"by_name\": [",
		  (uint64_t)p->kernels, (uint64_t)p->kernel_ns, named);
	for (i = 0; i < n; i++) {
		text__put(t, "%s\n    {\"name\": ", i ? "," : "");
		put_kernel_name(t, st, rows[i].k);
		text__put(t, ", \"time_pct\": %.3f, ", stats_pct(rows[i].s->sum, p->kernel_ns));
		put_sketch(t, rows[i].s);
		text__put(t, "}");
	}
	if (!rows)
		t->failed = true;
	free(rows);
	text__put(t, "%s]},\n", n ? "\n  " : "");

	for (i = 0; i < COPY_SLOTS; i++) {
		all.count += p->copy[i].count;
		all.bytes += p->copy[i].bytes;
		all.ns += p->copy[i].ns;
	}
	text__put(t, "  \"memcpy\": {");
	put_volume(t, &all);
	text__put(t, ", \"by_kind\": [");
	for (i = 0, n = 0; i < COPY_SLOTS; i++) {
		if (!p->copy[i].count)
			continue;
		text__put(t, "%s\n    {\"kind\": \"%s\", ", n++ ? "," : "", stats_copy_names[i]);
		put_volume(t, &p->copy[i]);
		text__put(t, "}");
	}
	text__put(t, "%s]},\n", n ? "\n  " : "");
	text__put(t, "  \"memset\": {");
	put_volume(t, &p->memset);
	text__put(t, "},\n");

	text__put(t, "  \"queue_delay\": {");
	put_sketch(t, &p->queue);
	text__put(t, ", \"unresolved\": %" PRIu64 ", \"negative\": %" PRIu64 "},\n",
		  (uint64_t)p->queue_unresolved, (uint64_t)p->queue_negative);

	for (i = 0; i < XPU_CORR_TYPE_MAX; i++) {
		gpu += p->gpu_by_type[i];
		conf += p->conf_by_type[i];
	}
	text__put(t,
		  "  \"correlation\": {\"gpu_records\": %" PRIu64 ", \"with_stack\": %" PRIu64
		  ", \"mean_confidence\": %.4f, \"by_type\": {",
		  (uint64_t)gpu, (uint64_t)p->gpu_with_stack, gpu ? conf / (double)gpu : 0.0);
	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		text__put(t,
			  "%s\"%s\": {\"count\": %" PRIu64
			  ", \"fraction\": %.6f, \"mean_confidence\": %.4f}",
			  i ? ", " : "", xpu_corr_type__name(i), (uint64_t)p->gpu_by_type[i],
			  gpu ? (double)p->gpu_by_type[i] / (double)gpu : 0.0,
			  p->gpu_by_type[i] ? p->conf_by_type[i] / (double)p->gpu_by_type[i] : 0.0);
	text__put(t, "}},\n");

	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		lost += p->lost_by_cause[i];
	text__put(t,
		  "  \"losses\": {\"loss_records\": %" PRIu64 ", \"records_lost\": %" PRIu64
		  ", \"by_cause\": {",
		  (uint64_t)p->loss_records, (uint64_t)lost);
	for (i = 1; i <= XPU_LOSS_CAUSE_MAX; i++) /* the unknown cause, slot 0, last */
		text__put(t, "%s\"%s\": %" PRIu64, i > 1 ? ", " : "",
			  xpu_loss_cause__name(i % XPU_LOSS_CAUSE_MAX),
			  (uint64_t)p->lost_by_cause[i % XPU_LOSS_CAUSE_MAX]);
	text__put(t, "}, \"by_stage\": {");
	for (s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
		for (i = 0, stage = 0; i < XPU_LOSS_CAUSE_MAX; i++)
			if (!strcmp(stats_loss_stage(i), stages[s]))
				stage += p->lost_by_cause[i];
		text__put(t, "\"%s\": %" PRIu64 ", ", stages[s], (uint64_t)stage);
	}
	text__put(t,
		  "\"transport\": %" PRIu64 "}, \"sequence\": {\"events_missed\": %" PRIu64
		  ", \"rewinds\": %" PRIu64 "}},\n",
		  (uint64_t)p->missed, (uint64_t)p->missed, (uint64_t)p->rewinds);
	stats__put_counters(t, st, p, run);
}

static void put_window(struct text *t, const struct sm_window *w, __u64 window_ns, __u64 first,
		       __u64 last)
{
	__u64 len = stats_window_len(w->start_ns, window_ns, first, last);
	__u32 k, n;
	int proc;

	text__put(t, "\n    {\"start_ns\": %" PRIu64 ", \"len_ns\": %" PRIu64,
		  (uint64_t)w->start_ns, (uint64_t)len);
	for (proc = 0; proc < 2; proc++) {
		text__put(t, ", \"%s\": [", proc ? "processes" : "devices");
		for (k = 0, n = 0; k < w->n; k++) {
			if (SM_IS_PROCESS(w->e[k].key) != proc)
				continue;
			text__put(t,
				  "%s{\"%s\": %u, \"busy_ns\": %" PRIu64 ", \"active_pct\": %.3f}",
				  n++ ? ", " : "", proc ? "pid" : "device", SM_ID(w->e[k].key),
				  (uint64_t)w->e[k].busy_ns, stats_pct(w->e[k].busy_ns, len));
		}
		text__put(t, "]");
	}
	text__put(t, "}");
}

/* SM-active as the last member. from_ordinal UINT64_MAX: the run (totals per device and
 * process, and the kept windows); otherwise an interval line (the windows closed since
 * from_ordinal). Not final (a snapshot while running): the run's percentages are over the
 * part of the span whose windows are closed, since open windows are not counted yet. */
void stats__put_sm_active(struct text *t, const struct stats *st, __u64 first, __u64 last,
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
	text__put(t,
		  "  \"sm_active\": {\"window_ns\": %" PRIu64 ", \"lateness_ns\": %" PRIu64
		  ", \"span_ns\": %" PRIu64,
		  (uint64_t)st->window_ns, (uint64_t)st->lateness_ns, (uint64_t)span);
	if (from_ordinal == UINT64_MAX) { /* the run: totals per entity */
		for (proc = 0; proc < 2; proc++) {
			text__put(t, ",\n  \"%s\": [", proc ? "processes" : "devices");
			for (i = 0, n = 0; i < sm_active__n_totals(st->sm); i++) {
				const struct sm_total *e = sm_active__total(st->sm, i);

				if (SM_IS_PROCESS(e->key) != proc)
					continue;
				text__put(t,
					  "%s\n    {\"%s\": %u, \"busy_ns\": %" PRIu64
					  ", \"active_pct\": %.3f, \"windows\": %" PRIu64
					  ", \"peak_window_start_ns\": %" PRIu64
					  ", \"peak_window_pct\": %.3f, \"late\": %" PRIu64
					  ", \"late_ns\": %" PRIu64 ", \"filled_ns\": %" PRIu64 "}",
					  n++ ? "," : "", proc ? "pid" : "device", SM_ID(e->key),
					  (uint64_t)e->busy_ns, stats_pct(e->busy_ns, span),
					  (uint64_t)e->windows, (uint64_t)e->peak_start_ns,
					  stats_pct(e->peak_busy_ns,
						    stats_window_len(e->peak_start_ns,
								     st->window_ns, first, last)),
					  (uint64_t)e->late, (uint64_t)e->late_ns,
					  (uint64_t)e->filled_ns);
			}
			text__put(t, "%s]", n ? "\n  " : "");
		}
		from_ordinal = 0;
	}
	text__put(t, ",\n  \"windows\": [");
	for (i = 0, n = 0; i < kept; i++) {
		const struct sm_window *w = sm_active__window(st->sm, i);

		if (w->ordinal < from_ordinal)
			continue;
		text__put(t, "%s", n++ ? "," : "");
		put_window(t, w, st->window_ns, first, last);
	}
	text__put(t, "%s],\n", n ? "\n  " : "");
	text__put(t,
		  "  \"windows_closed\": %" PRIu64
		  ", \"windows_listed\": %u, \"windows_open\": %" PRIu64
		  ", \"windows_forced\": %" PRIu64 ", \"late\": %" PRIu64 ", \"late_ns\": %" PRIu64
		  ", \"filled_ns\": %" PRIu64 ", \"untracked\": %" PRIu64 ", \"skipped\": %" PRIu64
		  ", \"out_of_memory\": %" PRIu64 "}",
		  (uint64_t)c.windows_closed, n, (uint64_t)c.open, (uint64_t)c.forced,
		  (uint64_t)c.late, (uint64_t)c.late_ns, (uint64_t)c.filled_ns,
		  (uint64_t)c.untracked, (uint64_t)c.skipped, (uint64_t)c.nomem);
}

static void put_limits(struct text *t, const struct stats *st)
{
	__u64 unbucketed = st->run.queue.unbucketed, collapsed = st->run.queue.collapsed;
	__u32 i;

	for (i = 0; i < st->n_kernels; i++) {
		unbucketed += st->kernels[i]->run.unbucketed;
		collapsed += st->kernels[i]->run.collapsed;
	}
	text__put(t,
		  "  \"limits\": {\"max_kernels\": %u, \"kernels_over_max\": %" PRIu64
		  ", \"launch_map\": %u, \"launches_evicted\": %" PRIu64
		  ", \"sketch_unbucketed\": %" PRIu64 ", \"sketch_collapsed\": %" PRIu64
		  ", \"out_of_memory\": %" PRIu64 ", \"interval_lines_dropped\": %" PRIu64 "},\n",
		  st->max_kernels, (uint64_t)st->other_names, LAUNCH_MAP_MAX,
		  (uint64_t)st->launches.evicted, (uint64_t)unbucketed, (uint64_t)collapsed,
		  (uint64_t)st->sketch_nomem, (uint64_t)st->lines_dropped);
}

/* The sync metadata (docs/clock.md): a model per other clock, or the statement
 * that every source stamps CLOCK_MONOTONIC. */
static void put_clock_sync(struct text *t, struct stats *st)
{
	char *json = malloc(SINK_CLOCKS_JSON_MAX);

	if (!json || sink_clocks__json(&st->clocks, json, SINK_CLOCKS_JSON_MAX) < 0) {
		t->failed = true;
		free(json);
		return;
	}
	text__put(t, ",\n  \"clock_sync\": %s", json);
	free(json);
}

void stats__sum_status(const struct stats *st, const struct status_sum *keys, unsigned int n,
		       __u64 *v)
{
	__u64 one[STATUS_SUMS_MAX], weighted[STATUS_SUMS_MAX] = { 0 };
	unsigned int i, k, c, count;

	memset(v, 0, n * sizeof(*v));
	for (i = 0; st->status && i < XPU_STATUS_MAX_ACTORS; i++) {
		const struct xpu_actor_slot *a = &st->status->slots[i];

		if (!a->name[0])
			continue;
		memset(one, 0, sizeof(one));
		/* pairs with the release store of n_counters in actor__counter: the names it
		 * covers are written */
		count = __atomic_load_n(&a->n_counters, __ATOMIC_ACQUIRE);
		for (c = 0; c < count && c < XPU_STATUS_MAX_COUNTERS; c++)
			for (k = 0; k < n && k < STATUS_SUMS_MAX; k++)
				if (keys[k].role == a->role &&
				    !strncmp(a->counters[c].name, keys[k].counter,
					     sizeof(a->counters[c].name)))
					one[k] = __atomic_load_n(&a->counters[c].value,
								 __ATOMIC_RELAXED);
		for (k = 0; k < n && k < STATUS_SUMS_MAX; k++)
			if (keys[k].mean_by) /* an actor's mean back to its total */
				weighted[k] += one[k] * one[keys[k].mean_by - 1];
			else
				v[k] += one[k];
	}
	for (k = 0; k < n && k < STATUS_SUMS_MAX; k++)
		if (keys[k].mean_by)
			v[k] = v[keys[k].mean_by - 1] ? weighted[k] / v[keys[k].mean_by - 1] : 0;
}

/* ,"member": {"key": sum, ...} of keys (n) */
static void put_status_sums(struct text *t, const struct stats *st, const char *member,
			    const struct status_sum *keys, unsigned int n)
{
	__u64 v[STATUS_SUMS_MAX];
	unsigned int k;

	stats__sum_status(st, keys, n, v);
	text__put(t, ",\n  \"%s\": {", member);
	for (k = 0; k < n; k++)
		text__put(t, "%s\"%s\": %" PRIu64, k ? ", " : "", keys[k].key, (uint64_t)v[k]);
	text__put(t, "}");
}

/*
 * What the correlators' unwinders counted (actors/correlator/unwind.h), summed over the
 * shards: how many copied stacks were unwound and how their walks ended, frames by CFI and by
 * frame pointer, time per stack, CFI held, mappings processes reported of themselves (MODULE
 * records) and frames found in them. All zero outside a session or when no source copies
 * stacks (unwind = fp).
 */
static const struct status_sum unwind_sums[] = {
	{ "stacks", "unwind_stacks", CONF_ROLE_CORRELATOR, 0 },
	{ "ok", "unwind_ok", CONF_ROLE_CORRELATOR, 0 },
	{ "truncated", "unwind_truncated", CONF_ROLE_CORRELATOR, 0 },
	{ "failed", "unwind_failed", CONF_ROLE_CORRELATOR, 0 },
	{ "failed_no_rule", "unwind_failed_no_rule", CONF_ROLE_CORRELATOR, 0 },
	{ "failed_bad_cfi", "unwind_failed_bad_cfi", CONF_ROLE_CORRELATOR, 0 },
	{ "failed_loop", "unwind_failed_loop", CONF_ROLE_CORRELATOR, 0 },
	{ "frames_cfi", "unwind_frames_cfi", CONF_ROLE_CORRELATOR, 0 },
	{ "frames_fp", "unwind_frames_fp", CONF_ROLE_CORRELATOR, 0 },
	{ "ns_per_stack", "unwind_ns_per_stack", CONF_ROLE_CORRELATOR, 1 /* stacks */ },
	{ "cfi_files", "cfi_files", CONF_ROLE_CORRELATOR, 0 },
	{ "cfi_kib", "cfi_kib", CONF_ROLE_CORRELATOR, 0 },
	{ "cfi_evicted", "cfi_evicted", CONF_ROLE_CORRELATOR, 0 },
	{ "modules", "modules", CONF_ROLE_CORRELATOR, 0 },
	{ "module_frames", "module_frames", CONF_ROLE_CORRELATOR, 0 },
};

/*
 * What the Python readers counted (docs/stats.md#python), summed over the actors: the CPU
 * sources' (BPF reads the frames at sample and launch time) and the correlators' (they name
 * code objects and merge the frames into the native stacks). All zero outside a session or
 * without Python programs.
 */
const struct status_sum stats_python_sums[PY_SUMS] = {
	{ "processes", "py_processes", CONF_ROLE_SOURCE, 0 },
	{ "unsupported", "py_unsupported", CONF_ROLE_SOURCE, 0 },
	{ "stacks", "py_stacks", CONF_ROLE_SOURCE, 0 },
	{ "frames", "py_frames", CONF_ROLE_SOURCE, 0 },
	{ "truncated", "py_truncated", CONF_ROLE_SOURCE, 0 },
	{ "bad_frames", "py_bad_frames", CONF_ROLE_SOURCE, 0 },
	{ "codes_resolved", "py_codes_resolved", CONF_ROLE_CORRELATOR, 0 },
	{ "codes_failed", "py_codes_failed", CONF_ROLE_CORRELATOR, 0 },
	{ "codes_cached", "py_codes_cached", CONF_ROLE_CORRELATOR, 0 },
	{ "frames_named", "py_frames_named", CONF_ROLE_CORRELATOR, 0 },
	{ "frames_unnamed", "py_frames_unnamed", CONF_ROLE_CORRELATOR, 0 },
	{ "unmatched", "py_unmatched", CONF_ROLE_CORRELATOR, 0 },
	{ "merged", "py_stacks_merged", CONF_ROLE_CORRELATOR, 0 },
	{ "ns_per_merge", "py_ns_per_merge", CONF_ROLE_CORRELATOR, 13 /* merged */ },
};

void stats__put_json(struct text *t, struct stats *st, bool final)
{
	text__put(t,
		  "{\n  \"xpusup_stats\": %d,\n  \"final\": %s,\n"
		  "  \"sketch\": {\"relative_error\": %g, \"rank\": \"floor(q * (count - 1))\"},\n",
		  STATS_VERSION, final ? "true" : "false", SKETCH_ALPHA);
	stats__put_period(t, st, &st->run, true);
	put_limits(t, st);
	stats__put_sm_active(t, st, st->run.first_ns, st->run.last_ns, final, UINT64_MAX);
	put_clock_sync(t, st);
	put_status_sums(t, st, "unwind", unwind_sums, sizeof(unwind_sums) / sizeof(unwind_sums[0]));
	put_status_sums(t, st, "python", stats_python_sums, PY_SUMS);
	text__put(t, "\n}\n");
}
