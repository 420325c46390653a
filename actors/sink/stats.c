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
 *		       per window (sm_active.h)
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
 *
 * This file is the fmt_ops glue (options, files, intervals); the layers are apart (stats.h):
 * stats_acc.c takes the events, stats_rows.c sorts and derives what both renderers show,
 * stats_json.c writes stats.json and the interval lines, stats_text.c stats.txt.
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
#include "actors/sink/stats.h"
#include "actors/sink/sketch.h"
#include "actors/sink/sm_active.h"
#include "common/config.h"
#include "common/mix.h"
#include "common/paths.h"
#include "common/status.h"
#include "xpusup/event.h"

#define PENDING_MAX (16u << 20) /* interval lines held while their file cannot be written */

static const char *const counter_names[] = {
	"kernel_names",	 "gpu_records", "queue_unresolved", "sm_windows_closed", "sm_late_kernels",
	"files_written", "cpu_samples", "cpu_functions",    "lines_dropped"
};

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

	stats__put_json(&t, st, final);
	err = write_file(st->path, &t, why, why_len);
	if (!err && st->text[0]) {
		t.len = 0;
		stats__put_text(&t, st, final);
		err = write_file(st->text, &t, why, why_len);
	}
	text__free(&t);
	if (!err)
		st->writes++;
	return err;
}

/* Append the pending interval lines. The file is a plain O_APPEND file, not an out.h
 * one: it grows by a line an interval, and a line must not wait for a rename. A new
 * session's sink truncates it; a restarted one appends (its lines number from 0 again). */
static int write_pending(struct stats *st, char *why, size_t why_len)
{
	int fd, err = 0;
	ssize_t n;

	if (!st->intervals_opened)
		xpu_mkdir_parents(st->intervals, 0755); /* if it fails, open says why */
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
		st->intervals_mid_line = st->pending.p[n - 1] != '\n';
		memmove(st->pending.p, st->pending.p + n, st->pending.len - (size_t)n);
		st->pending.len -= (size_t)n;
	}
	close(fd);
	return err;
}

__u64 text__drop_lines(struct text *t, bool mid_line)
{
	size_t keep = 0, i;
	__u64 lines = 0;

	if (mid_line) { /* the rest of the line the file is inside, its end included */
		while (keep < t->len && t->p[keep] != '\n')
			keep++;
		keep += keep < t->len;
	}
	for (i = keep; i < t->len; i++) /* the lines held, not every interval */
		lines += t->p[i] == '\n';
	t->len = keep;
	return lines;
}

/* One interval's line: its statistics and the SM-active windows closed during it. */
static void put_interval(struct stats *st, __u64 now_ns)
{
	struct text *t = &st->pending;
	size_t start = t->len;
	struct sm_counts c;

	if (t->len > PENDING_MAX) { /* the file has been failing for long: keep the newest */
		st->lines_dropped += text__drop_lines(t, st->intervals_mid_line);
		start = t->len;
	}
	sm_active__counts(st->sm, &c);
	text__put(t,
		  "{\"interval\": %" PRIu64 ", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64
		  ", \"windows_missing\": %" PRIu64 ",\n",
		  (uint64_t)st->n_intervals, (uint64_t)st->interval_start, (uint64_t)now_ns,
		  (uint64_t)(c.windows_closed - st->next_window > SM_WINDOWS_KEPT ?
				     c.windows_closed - st->next_window - SM_WINDOWS_KEPT :
				     0));
	/* the interval's own numbers: missed and rewinds are those since the last line */
	st->cur.missed = st->seq.missed - st->run.missed;
	st->cur.rewinds = st->seq.rewinds - st->run.rewinds;
	stats__put_period(t, st, &st->cur, false);
	stats__put_sm_active(t, st,
			     st->cur.first_ns < st->run.first_ns || !st->run.first_ns ?
				     st->cur.first_ns :
				     st->run.first_ns,
			     st->cur.last_ns > st->run.last_ns ? st->cur.last_ns : st->run.last_ns,
			     true, st->next_window);
	text__put(t, "}\n");
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
	stats__merge(st);
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

void stats__free(struct stats *st)
{
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
	launch_map__free(&st->launches);
	sm_active__free(st->sm);
	sink_clocks__free(&st->clocks);
	text__free(&st->pending);
	free(st);
}

static void stats_free(void *state)
{
	stats__free(state);
}

static unsigned int stats_counters(void *state, const char **names, __u64 *values, unsigned int max)
{
	struct stats *st = state;
	struct sm_counts c;
	__u64 v[9];
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
	v[8] = st->lines_dropped;
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
	if (!err && st->text[0] && !strcmp(st->text, st->intervals)) {
		snprintf(why, why_len, "bad 'intervals': the same file as 'text'");
		err = -EINVAL;
	}
	if (err)
		goto fail;
	st->interval_ns = o.interval_s * 1000000000ull;
	if (st->interval_ns && !st->intervals[0]) {
		snprintf(why, why_len, "interval_s needs an 'intervals' file (it is none)");
		err = -EINVAL;
		goto fail;
	}
	err = stats__init(st, o.window_ms * 1000000ull, o.lateness_ms * 1000000ull,
			  (__u32)o.max_kernels, CPU_FUNCTIONS_MAX);
	if (err) {
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	*out = st;
	return 0;
fail:
	stats__free(st);
	return err;
}

int stats__init(struct stats *st, __u64 window_ns, __u64 lateness_ns, __u32 max_kernels,
		__u32 max_functions)
{
	st->cpu.max_fns = max_functions;
	sketch__init(&st->run.queue);
	sketch__init(&st->cur.queue);
	st->window_ns = window_ns;
	st->lateness_ns = lateness_ns;
	st->max_kernels = max_kernels;
	for (st->mask = 16; st->mask < 2 * st->max_kernels; st->mask <<= 1)
		;
	st->mask--;
	st->slots = calloc((size_t)st->mask + 1, sizeof(*st->slots));
	st->kernels = calloc(st->max_kernels, sizeof(*st->kernels));
	st->sm = sm_active__new(st->window_ns, st->lateness_ns);
	if (!st->slots || !st->kernels ||
	    (!st->counts_only && launch_map__init(&st->launches, LAUNCH_MAP_MAX)) || !st->sm)
		return -ENOMEM;
	return 0;
}

bool stats__can_share(const struct stats *st, __u64 window_ns, __u64 lateness_ns)
{
	return !st->counts_only && !st->interval_ns && st->window_ns == window_ns &&
	       st->lateness_ns == lateness_ns;
}

const struct fmt_ops fmt_stats = {
	.kind = "stats",
	.open = stats_open,
	.batch = stats__batch,
	.tick = stats_tick,
	.finish = stats_finish,
	.free = stats_free,
	.counters = stats_counters,
};
