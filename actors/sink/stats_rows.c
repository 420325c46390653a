// SPDX-License-Identifier: MIT
/* The stats format's views of its accumulators, shared by stats.json and stats.txt: the
 * text buffer, rows sorted as both show them, counter ratios. */
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

const char *const stats_copy_names[COPY_SLOTS] = {
	"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	"AtoD",	   "DtoA", "DtoD", "HtoH", "PtoP", "other",
};

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

void text__put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void text__put(struct text *t, const char *fmt, ...)
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

void text__bytes(struct text *t, const void *data, size_t n)
{
	text_reserve(t, n);
	if (t->failed)
		return;
	memcpy(t->p + t->len, data, n);
	t->len += n;
	t->p[t->len] = 0;
}

void text__free(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

/* ---- numbers ------------------------------------------------------------------------- */

__u64 stats_round_ns(double v)
{
	return (__u64)(v + 0.5);
}

__u64 stats_mean(__u64 sum, __u64 count)
{
	return count ? (sum + count / 2) / count : 0;
}

double stats_pct(__u64 part, __u64 whole)
{
	double v = whole ? 100.0 * (double)part / (double)whole : 0;

	return v > 100 ? 100 : v; /* clamping: rounding never shows as more than 100 % */
}

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
struct krow *stats__kernel_rows(const struct stats *st, bool run, __u32 *n, __u32 *named)
{
	struct krow *rows = malloc(((size_t)st->n_kernels + 1) * sizeof(*rows));
	__u32 i, m = 0;

	*n = 0;
	if (named)
		*named = 0;
	if (!rows)
		return NULL;
	for (i = 0; i < st->n_kernels; i++) {
		const struct sketch *s = run ? &st->kernels[i]->run : &st->kernels[i]->cur;

		if (s->count)
			rows[m++] = (struct krow){ st->kernels[i], s };
	}
	if (named)
		*named = m;
	if ((run ? &st->other.run : &st->other.cur)->count)
		rows[m++] = (struct krow){ &st->other, run ? &st->other.run : &st->other.cur };
	qsort(rows, m, sizeof(*rows), krow_cmp);
	*n = m;
	return rows;
}

/* ---- CPU section --------------------------------------------------------------------- */

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
struct frow *cpu__function_rows(const struct cpu *c, bool run, __u32 *n)
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
struct prow *cpu__process_rows(const struct cpu *c, bool run, __u32 *n)
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

__u32 cpu__threads_seen(const struct cpu *c, bool run)
{
	__u32 i, n = 0;

	for (i = 0; c->threads && i <= c->thread_mask; i++)
		n += c->threads[i].used && (run ? c->threads[i].run : c->threads[i].cur);
	return n;
}

/* Sort rows by self time (self) or total time, and say how many of them to list: those
 * with self time only, in the first, as a function never innermost has no place there. */
__u32 frows__sort(struct frow *rows, __u32 n, bool self)
{
	qsort(rows, n, sizeof(*rows), self ? frow_self_cmp : frow_total_cmp);
	while (self && n && !rows[n - 1].t->self.samples)
		n--;
	return n;
}

/* ---- counters section ---------------------------------------------------------------- */

/* Counters are ranked processes by the first of these they have, else by the first name. */
static const char *const ctr_rank_names[] = { "cycles",	   "cpu-cycles",   "task-clock",
					      "cpu-clock", "instructions", NULL };

const struct ctr_acc *ctr_group__acc(const struct ctr_group *g, bool run)
{
	return run ? &g->run : &g->cur;
}

/* owner's counts of name index + 1 `name` in the period; NULL when it has no reading. */
const struct ctr_acc *stats__ctr_get(const struct stats *st, __u32 name, __u32 owner, bool run)
{
	const struct ctr_group *g =
		counters__group((struct counters *)&st->ctr, name, owner, false);

	return g && ctr_group__acc(g, run)->readings ? ctr_group__acc(g, run) : NULL;
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
		a = stats__ctr_get(st, ctr_name_index(&st->ctr, *aliases), owner, run);
		if (a && a->counted) {
			*total = a->total;
			return true;
		}
	}
	return false;
}

/* Derived ratio i of owner's counters: false when a counter of it is missing. */
bool stats__ctr_ratio(const struct stats *st, size_t i, __u32 owner, bool run, __u64 span,
		      double *v)
{
	double num, den;

	if (!ctr_total(st, derived_ratios[i].num, owner, run, &num))
		return false;
	if (!derived_ratios[i].den) {
		*v = span ? num * 1e9 / (double)span : 0;
		return true;
	}
	if (!ctr_total(st, derived_ratios[i].den, owner, run, &den) || !(den > 0))
		return false;
	*v = num / den * derived_ratios[i].mult;
	return true;
}

double ctr_acc__rate(const struct ctr_acc *a, __u64 span)
{
	return span ? a->total * 1e9 / (double)span : 0;
}

double ctr_acc__running_mean(const struct ctr_acc *a)
{
	return a->counted ? a->running_sum / (double)a->counted : 0;
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
__u32 stats__ctr_names_of(const struct stats *st, __u32 owner, bool run, __u32 *out)
{
	const struct counters *c = &st->ctr;
	__u32 i, j, n = 0;

	for (i = 1; i <= c->n_names; i++) {
		if (!stats__ctr_get(st, i, owner, run))
			continue;
		for (j = n++; j && ctr_name_cmp(c, out[j - 1], i) > 0; j--) /* insertion sort */
			out[j] = out[j - 1];
		out[j] = i;
	}
	return n;
}

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

struct ctr_prow *stats__ctr_processes(const struct stats *st, bool run, __u32 *n, __u32 *rank_by)
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

		if (!g->name || g->owner == CTR_SYSTEM || !ctr_group__acc(g, run)->readings)
			continue;
		rows[m++] = (struct ctr_prow){ .pid = g->owner, .rank = -1 };
		if (ctr_group__acc(g, run)->counted &&
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
		a = stats__ctr_get(st, *rank_by, rows[i].pid, run);
		if (a && a->counted)
			rows[i].rank = a->total;
	}
	qsort(rows, m, sizeof(*rows), ctr_prow_cmp);
	*n = m;
	return rows;
}

const struct kctr *kstat__ctr(const struct kstat *k, bool run)
{
	return run ? &k->ctr_run : &k->ctr_cur;
}

/* Stage of each loss cause: where in the pipeline the records were dropped. */
const char *stats_loss_stage(__u32 cause)
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

/* The part of window [start, start + len) inside the run's span: the denominator of its
 * SM-active, so a run that starts or ends inside a window is not diluted by idle time it
 * never had. */
__u64 stats_window_len(__u64 start, __u64 len, __u64 first, __u64 last)
{
	__u64 s = start > first ? start : first, e = start + len < last ? start + len : last;

	return e > s ? e - s : len;
}
