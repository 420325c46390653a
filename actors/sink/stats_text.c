// SPDX-License-Identifier: MIT
/* stats.txt from the accumulators: the run for people, the tables cut to TEXT_ROWS_MAX. */
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
	text__bytes(t, buf, n);
	if (n < len)
		text__put(t, "...");
}

/* A kernel's name at the end of a line of the report, and the line's end. */
static void put_text_kernel_name(struct text *t, const struct stats *st, const struct kstat *k)
{
	if (k == &st->other)
		text__put(t, "[other kernels]");
	else if (!k->len)
		text__put(t, "[unnamed kernel]");
	else
		put_text_name(t, k->name, k->len);
	text__put(t, "\n");
}

static void put_text_sm(struct text *t, const struct stats *st, __u64 span)
{
	char a[32], b[32];
	__u32 i, shown;
	int proc;

	text__put(
		t,
		"\nSM active: merged kernel time over the span (windows of %s, %s late allowed)\n",
		human_ns(a, sizeof(a), (double)st->window_ns),
		human_ns(b, sizeof(b), (double)st->lateness_ns));
	for (proc = 0; proc < 2; proc++) {
		for (i = 0, shown = 0; i < sm_active__n_totals(st->sm); i++) {
			const struct sm_total *e = sm_active__total(st->sm, i);

			if (SM_IS_PROCESS(e->key) != proc)
				continue;
			if (shown++ == TEXT_ROWS_MAX) {
				text__put(t, "  ... more in stats.json\n");
				break;
			}
			text__put(t, "  %-7s %-10u %8.3f %%  busy %s  peak window %.3f %%\n",
				  proc ? "pid" : "device", SM_ID(e->key),
				  stats_pct(e->busy_ns, span),
				  human_ns(a, sizeof(a), (double)e->busy_ns),
				  stats_pct(e->peak_busy_ns,
					    stats_window_len(e->peak_start_ns, st->window_ns,
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

	n = frows__sort(rows, n, self);
	text__put(t, "%12s %8s %12s %8s  %s\n", "self", "self %", "total", "total %", "function");
	for (i = 0; i < n && i < CPU_TOP_FUNCTIONS; i++) {
		const struct cpu_fn_time *ft = rows[i].t;

		text__put(t, "%12s %8.3f %12s %8.3f  ", human_ns(a, sizeof(a), (double)ft->self.ns),
			  stats_pct(ft->self.ns, whole),
			  human_ns(b, sizeof(b), (double)ft->total.ns),
			  stats_pct(ft->total.ns, whole));
		if (rows[i].f == &c->other) {
			text__put(t, "(other)\n");
			continue;
		}
		put_text_name(t, rows[i].f->name, rows[i].f->len);
		text__put(t, "%s\n", rows[i].f->kernel ? "_[k]" : "");
	}
	if (n > CPU_TOP_FUNCTIONS)
		text__put(t, "  ... %u more functions\n",
			  n - CPU_TOP_FUNCTIONS); /* nor in the JSON */
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

	procs = cpu__process_rows(c, true, &n_procs);
	fns = cpu__function_rows(c, true, &n_fns);
	if (!procs || !fns)
		t->failed = true;
	text__put(t, "\nCPU samples: %" PRIu64 " samples, %s sampled, %u processes, %u threads\n",
		  (uint64_t)p->cpu.samples, human_ns(a, sizeof(a), (double)p->cpu.ns),
		  n_procs - !!c->other_proc.run.samples, cpu__threads_seen(c, true));
	if (p->cpu_no_stack)
		text__put(t,
			  "  %" PRIu64 " samples without a stack (in the time, in no function)\n",
			  (uint64_t)p->cpu_no_stack);

	text__put(t, "\nTop processes\n%10s %10s %12s %8s  %s\n", "pid", "samples", "time",
		  "share %", "comm");
	for (i = 0; i < n_procs && i < CPU_TOP_PROCESSES; i++) {
		const struct cpu_proc *pr = procs[i].p;

		if (pr == &c->other_proc)
			text__put(t, "%10s", "(other)");
		else
			text__put(t, "%10u", pr->pid);
		text__put(t, " %10" PRIu64 " %12s %8.3f  ", (uint64_t)procs[i].t->samples,
			  human_ns(a, sizeof(a), (double)procs[i].t->ns),
			  stats_pct(procs[i].t->ns, p->cpu.ns));
		if (pr != &c->other_proc && pr->comm[0])
			put_text_name(t, pr->comm, (__u32)strlen(pr->comm));
		text__put(t, "\n");
	}
	if (n_procs > CPU_TOP_PROCESSES) /* nor in the JSON: its counts say how many */
		text__put(t, "  ... %u more processes\n", n_procs - CPU_TOP_PROCESSES);

	text__put(t, "\nHottest functions by self time (the innermost frame)\n");
	put_text_functions(t, c, fns, n_fns, true, p->cpu.ns);
	text__put(t,
		  "\nHottest functions by total time (anywhere on the stack, once per sample)\n");
	put_text_functions(t, c, fns, n_fns, false, p->cpu.ns);
	if (c->frames_over)
		text__put(t,
			  "  %" PRIu64 " frames past the first %u functions counted as (other)\n",
			  (uint64_t)c->frames_over, c->max_fns);
	free(fns);
	free(procs);
}

/* The Python readers' counters (stats.json's "python"), when there was anything to read. */
static void put_text_python(struct text *t, const struct stats *st)
{
	__u64 v[PY_SUMS];
	unsigned int k;

	stats__sum_status(st, stats_python_sums, PY_SUMS, v);
	for (k = 0; k < PY_SUMS && !v[k]; k++)
		;
	if (k == PY_SUMS)
		return;
	/* the order of stats_python_sums */
	text__put(t,
		  "\nPython: %" PRIu64 " processes (%" PRIu64 " unsupported), %" PRIu64
		  " stacks, %" PRIu64 " frames (%" PRIu64 " stacks truncated, %" PRIu64
		  " bad frames)\n",
		  (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3], (uint64_t)v[4],
		  (uint64_t)v[5]);
	text__put(t,
		  "  code objects: %" PRIu64 " resolved, %" PRIu64 " failed, %" PRIu64
		  " cached; frames %" PRIu64 " named, %" PRIu64 " unnamed; %" PRIu64
		  " stacks merged (%" PRIu64 " ns each), %" PRIu64 " unmatched\n",
		  (uint64_t)v[6], (uint64_t)v[7], (uint64_t)v[8], (uint64_t)v[9], (uint64_t)v[10],
		  (uint64_t)v[12], (uint64_t)v[13], (uint64_t)v[11]);
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
	__u32 i, n, named;

	sm_active__counts(st->sm, &sc);
	rows = stats__kernel_rows(st, true, &n, &named);
	text__put(t, "\nGPU kernels: %" PRIu64 " runs, %s in total, %u names\n",
		  (uint64_t)p->kernels, human_ns(a, sizeof(a), (double)p->kernel_ns), named);
	if (n)
		text__put(t, "%10s %12s %8s %11s %11s %11s %11s  %s\n", "count", "total", "time %",
			  "mean", "p50", "p95", "p99", "name");
	for (i = 0; i < n && i < TEXT_ROWS_MAX; i++) {
		const struct sketch *s = rows[i].s;

		text__put(t, "%10" PRIu64 " %12s %8.3f %11s %11s %11s %11s  ", (uint64_t)s->count,
			  human_ns(a, sizeof(a), (double)s->sum), stats_pct(s->sum, p->kernel_ns),
			  human_ns(b, sizeof(b), (double)stats_mean(s->sum, s->count)),
			  human_ns(c, sizeof(c), sketch__quantile(s, 0.50)),
			  human_ns(d, sizeof(d), sketch__quantile(s, 0.95)),
			  human_ns(e, sizeof(e), sketch__quantile(s, 0.99)));
		put_text_kernel_name(t, st, rows[i].k);
	}
	if (n > TEXT_ROWS_MAX)
		text__put(t, "  ... %u more in stats.json\n", n - TEXT_ROWS_MAX);
	free(rows);

	text__put(t, "\nMemory copies\n");
	for (i = 0, n = 0; i < COPY_SLOTS; i++) {
		const struct volume *v = &p->copy[i];

		if (!v->count)
			continue;
		if (!n++)
			text__put(t, "  %-8s %10s %12s %12s %14s\n", "kind", "count", "bytes",
				  "time", "bandwidth");
		text__put(t, "  %-8s %10" PRIu64 " %12s %12s %9.3f GB/s\n", stats_copy_names[i],
			  (uint64_t)v->count, human_bytes(a, sizeof(a), v->bytes),
			  human_ns(b, sizeof(b), (double)v->ns),
			  v->ns ? (double)v->bytes / (double)v->ns : 0.0);
	}
	if (!n)
		text__put(t, "  none\n");
	text__put(t, "Memsets: %" PRIu64 ", %s, %s\n", (uint64_t)p->memset.count,
		  human_bytes(a, sizeof(a), p->memset.bytes),
		  human_ns(b, sizeof(b), (double)p->memset.ns));

	text__put(
		t,
		"\nLaunch-to-start queue delay (kernel start - start of its launching CUDA call)\n");
	text__put(t, "  %" PRIu64 " kernels: mean %s, p50 %s, p95 %s, p99 %s, max %s\n",
		  (uint64_t)p->queue.count,
		  human_ns(a, sizeof(a), (double)stats_mean(p->queue.sum, p->queue.count)),
		  human_ns(b, sizeof(b), sketch__quantile(&p->queue, 0.50)),
		  human_ns(c, sizeof(c), sketch__quantile(&p->queue, 0.95)),
		  human_ns(d, sizeof(d), sketch__quantile(&p->queue, 0.99)),
		  human_ns(e, sizeof(e), (double)(p->queue.count ? p->queue.max : 0)));
	text__put(t, "  without a known launch: %" PRIu64 "; starting before it: %" PRIu64 "\n",
		  (uint64_t)p->queue_unresolved, (uint64_t)p->queue_negative);

	if (!final && sc.closed_until < p->last_ns)
		span = sc.closed_until > p->first_ns ? sc.closed_until - p->first_ns : 0;
	put_text_sm(t, st, span);
	if (sc.late)
		text__put(t,
			  "  %" PRIu64 " kernels came after their window closed (%s not counted)\n",
			  (uint64_t)sc.late, human_ns(a, sizeof(a), (double)sc.late_ns));

	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		gpu += p->gpu_by_type[i];
	text__put(t, "\nCorrelation of %" PRIu64 " GPU records (%" PRIu64 " with a launch stack)\n",
		  (uint64_t)gpu, (uint64_t)p->gpu_with_stack);
	for (i = 0; i < XPU_CORR_TYPE_MAX; i++)
		text__put(t, "  %-12s %10" PRIu64 " %8.3f %%  mean confidence %.3f\n",
			  xpu_corr_type__name(i), (uint64_t)p->gpu_by_type[i],
			  stats_pct(p->gpu_by_type[i], gpu),
			  p->gpu_by_type[i] ? p->conf_by_type[i] / (double)p->gpu_by_type[i] : 0.0);
}

/* A counter's name on a line of the report. */
static void put_text_ctr_name(struct text *t, const struct counters *c, __u32 name)
{
	const struct ctr_name *n = &c->names[name - 1];

	if (n->len)
		put_text_name(t, n->name, n->len);
	else
		text__put(t, "[unnamed counter]");
}

/* owner's counters as table rows, and the ratios derived from them on one line. */
static void put_text_ctr_owner(struct text *t, const struct stats *st, __u32 owner, __u64 span)
{
	__u32 names[CTR_NAMES_MAX], n = stats__ctr_names_of(st, owner, true, names), i;
	size_t d;
	double v;
	int any = 0;

	for (i = 0; i < n; i++) {
		const struct ctr_acc *a = stats__ctr_get(st, names[i], owner, true);

		text__put(t, "  %16.6g %14.6g %9.1f / %-6.1f ", a->total, ctr_acc__rate(a, span),
			  a->counted ? 100 * a->running_min : 0.0, 100 * ctr_acc__running_mean(a));
		put_text_ctr_name(t, &st->ctr, names[i]);
		text__put(t, "%s\n",
			  a->counted < a->readings ? " (some readings not counted)" : "");
	}
	for (d = 0; d < DERIVED_RATIOS; d++)
		if (stats__ctr_ratio(st, d, owner, true, span, &v))
			text__put(t, "%s%s %.3f", any++ ? ", " : "  ", derived_ratios[d].text, v);
	if (any)
		text__put(t, "\n");
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

	procs = stats__ctr_processes(st, true, &n_procs, &rank_by);
	if (!procs)
		t->failed = true;
	text__put(t, "\nCounters: %" PRIu64 " readings; rates per second of the %s span\n",
		  (uint64_t)p->by_kind[XPU_REC_PMU_COUNTER], human_ns(a, sizeof(a), (double)span));
	text__put(t, "  %16s %14s %18s  %s\n", "total", "per s", "running min/mean %", "counter");
	if (stats__ctr_names_of(st, CTR_SYSTEM, true, names)) {
		text__put(t, "System-wide (all CPUs)\n");
		put_text_ctr_owner(t, st, CTR_SYSTEM, span);
	}
	for (i = 0; i < n_procs && i < CTR_TOP_PROCESSES; i++) {
		if (!i) {
			text__put(t, "Top processes by ");
			if (rank_by)
				put_text_ctr_name(t, &st->ctr, rank_by);
			else
				text__put(t, "pid");
			text__put(t, "\n");
		}
		text__put(t, "pid %u\n", procs[i].pid);
		put_text_ctr_owner(t, st, procs[i].pid, span);
	}
	if (n_procs > CTR_TOP_PROCESSES)
		text__put(t, "  ... %u more processes\n", n_procs - CTR_TOP_PROCESSES);
	free(procs);
	if (st->ctr.over)
		text__put(t,
			  "  %" PRIu64
			  " readings past the first %u names or %u groups, in no row\n",
			  (uint64_t)st->ctr.over, CTR_NAMES_MAX, CTR_GROUPS_MAX);

	rows = stats__kernel_rows(st, true, &n, NULL);
	if (!rows)
		t->failed = true;
	for (i = 0, shown = 0; i < n && shown < TEXT_ROWS_MAX; i++) {
		const struct kctr *k = &rows[i].k->ctr_run;

		if (!k->runs)
			continue;
		if (!shown++)
			text__put(
				t,
				"\nKernels with counters (means per run)\n%10s %10s %10s %14s  %s\n",
				"runs", "estimated", "IPC", "instructions", "name");
		text__put(t, "%10" PRIu64 " %10" PRIu64 " %10.3f %14.6g  ", (uint64_t)k->runs,
			  (uint64_t)k->estimated,
			  k->ipc_runs ? k->ipc_sum / (double)k->ipc_runs : 0.0,
			  k->insn_runs ? k->insn_sum / (double)k->insn_runs : 0.0);
		put_text_kernel_name(t, st, rows[i].k);
	}
	free(rows);
}

void stats__put_text(struct text *t, const struct stats *st, bool final)
{
	const struct period *p = &st->run;
	__u64 lost = 0, span = p->first_ns ? p->last_ns - p->first_ns : 0;
	char a[32];
	__u32 i;

	text__put(t, "xpusup statistics (%s)\n\n", final ? "final" : "so far: the run goes on");
	text__put(t, "Span %s: %" PRIu64 " events in %" PRIu64 " batches\n",
		  human_ns(a, sizeof(a), (double)span), (uint64_t)p->events, (uint64_t)p->batches);
	if (p->cpu.samples)
		put_text_cpu(t, st);
	put_text_python(t, st);
	if (gpu_seen(p))
		put_text_gpu(t, st, final);
	else
		text__put(t, "\nGPU: no activity recorded\n");
	if (p->by_kind[XPU_REC_PMU_COUNTER])
		put_text_counters(t, st);

	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		lost += p->lost_by_cause[i];
	text__put(t, "\nLosses: %" PRIu64 " records lost in %" PRIu64 " LOSS records",
		  (uint64_t)lost, (uint64_t)p->loss_records);
	for (i = 0; i < XPU_LOSS_CAUSE_MAX; i++)
		if (p->lost_by_cause[i])
			text__put(t, "; %s %" PRIu64 " (%s)", xpu_loss_cause__name(i),
				  (uint64_t)p->lost_by_cause[i], stats_loss_stage(i));
	text__put(t,
		  "\n  %" PRIu64 " events missed between the correlators and this sink, %" PRIu64
		  " sequence rewinds\n",
		  (uint64_t)st->seq.missed, (uint64_t)st->seq.rewinds);
}
