/* SPDX-License-Identifier: MIT */
/*
 * The stats format's accumulator: what the sink keeps of the events it received (the
 * per-topic state below, filled by stats__batch and folded into the run by stats__merge),
 * and the sorted views of it both renderers read. stats.c is the fmt_ops glue (options,
 * files, intervals), stats_acc.c takes events, stats_rows.c sorts and derives,
 * stats_json.c writes stats.json and the interval lines, stats_text.c stats.txt.
 *
 * Private to the stats format (and its unit test): nothing here is a stable interface.
 */
#ifndef XPUSUP_ACTORS_SINK_STATS_H
#define XPUSUP_ACTORS_SINK_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "actors/sink/clock_sync.h"
#include "actors/sink/launch_map.h"
#include "actors/sink/sketch.h"
#include "actors/sink/sm_active.h"
#include "common/status.h"
#include "common/wire.h"
#include "xpusup/event.h"

#define STATS_PATH_MAX 4096
#define STATS_VERSION 1
#define COPY_OTHER 11 /* enum xpu_copy_kind ends at 10; later kinds are counted here */
#define COPY_SLOTS 12
#define LAUNCH_MAP_MAX (1u << 16) /* launch-side events remembered for the queue delay */
#define TEXT_ROWS_MAX 50 /* kernels, devices, processes shown in stats.txt */
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

struct cpu_fn_time {
	struct cpu_time self; /* samples in which it was the innermost frame */
	struct cpu_time total; /* samples with it anywhere on the stack, each once */
};

/* A function, keyed by what the report shows for it, the text the folded format writes for
 * its frames: its name as the event gave it, or the frame's address in hex when it had none,
 * a Python frame's "[py] QUALNAME (FILE)" (all its lines, common/pyframe.h) or "[py] 0x<code
 * object>"; and whether it is a kernel frame (shown with folded's "_[k]" suffix). */
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
	/* the last CUDA_API call put into launches: its LAUNCH marker need not be (stats__batch) */
	struct {
		__u64 correlation_id; /* 0: none */
		__u32 producer, pid, tid;
	} last_call;
	struct cpu cpu;
	struct counters ctr;
	struct sm_active *sm;
	struct xpu_wire_seq seq;
	struct sink_clocks clocks; /* a model per other clock, from the CLOCK_SYNC events */

	__u64 interval_start, last_interval, n_intervals;
	__u64 next_window; /* ordinal of the first window not yet in an interval line */
	struct text pending; /* interval lines not written yet */
	bool intervals_opened;
	bool intervals_mid_line; /* the file ends inside a line: a write was cut short */
	__u64 lines_dropped;
	__u64 writes, gpu_records, sketch_nomem;
	/* the metrics format's accumulator: kernels' counts and sums (their sketches hold no
	 * buckets), no queue delays and so no launch map. Set before stats__init. */
	bool counts_only;
};

extern const char *const stats_copy_names[COPY_SLOTS];

/* ---- text: a growable buffer --------------------------------------------------------- */

/* Append printf-style; on failure t->failed is set and the rest is not written. */
void text__put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void text__bytes(struct text *t, const void *data, size_t n);
void text__free(struct text *t);
/* text__drop_lines - drop the whole lines t holds; mid_line: the file they go to ends inside
 * the first, whose rest is kept (that line is finished, never followed by another). Returns
 * the lines dropped. */
__u64 text__drop_lines(struct text *t, bool mid_line);

/* ---- the accumulator alone (stats.c) ------------------------------------------------- */

/* stats__init - the tables of a zeroed st (calloc'd; status may be set): SM-active windows of
 * window_ns closing lateness_ns late, max_kernels names kept apart, max_functions CPU
 * functions (0: none, CPU samples are counted per process only). Also for the metrics format,
 * which accumulates the same numbers without the files. 0 or -ENOMEM (stats__free frees what
 * was made). */
int stats__init(struct stats *st, __u64 window_ns, __u64 lateness_ns, __u32 max_kernels,
		__u32 max_functions);
/* stats__can_share - whether a metrics format of those windows may read the stats format's
 * st rather than accumulate the same events again (kind group): the same SM-active windows
 * and lateness, a full accumulator, and no intervals (the metrics format merges each interval
 * into the run at its ticks, which would take the interval lines' numbers). */
bool stats__can_share(const struct stats *st, __u64 window_ns, __u64 lateness_ns);
/* stats__free - everything of st and st itself; NULL is fine. */
void stats__free(struct stats *st);

/* ---- accumulating (stats_acc.c) ------------------------------------------------------ */

/* fmt_ops.batch: every event of the batch into the interval's accumulators (cur). */
void stats__batch(void *state, const struct xpu_wire_batch *b, const struct xpu_cevent *ev);
/* The interval's accumulators into the run's; the interval starts over. */
void stats__merge(struct stats *st);
/* The group of (name, owner): found, made (create), or NULL. */
struct ctr_group *counters__group(struct counters *c, __u32 name, __u32 owner, bool create);

/* ---- views for the renderers (stats_rows.c) ------------------------------------------ */

struct krow {
	const struct kstat *k;
	const struct sketch *s;
};

struct frow {
	const struct cpu_fn *f;
	const struct cpu_fn_time *t;
};

struct prow {
	const struct cpu_proc *p;
	const struct cpu_time *t;
};

struct ctr_prow {
	__u32 pid;
	double rank; /* the total of the rank_by counter, -1 without it */
};

/* Rounding: a double of ns to whole ns; a mean rounded to nearest (0 for no count); a
 * percentage of whole, 0 when whole is 0, never above 100. */
__u64 stats_round_ns(double v);
__u64 stats_mean(__u64 sum, __u64 count);
double stats_pct(__u64 part, __u64 whole);

/* Rows of a period (run, else the interval) for the caller to free: kernels sorted (most
 * time, then launches, then name), functions unsorted (frows__sort), processes sorted (most
 * time, then pid, "(other)" last); NULL and *n = 0 without memory. */
struct krow *stats__kernel_rows(const struct stats *st, bool run, __u32 *n, __u32 *named);
struct frow *cpu__function_rows(const struct cpu *c, bool run, __u32 *n);
struct prow *cpu__process_rows(const struct cpu *c, bool run, __u32 *n);
/* The threads seen in the period. */
__u32 cpu__threads_seen(const struct cpu *c, bool run);
/* Sort by self (else total) time; returns how many to list (by self: those with self time). */
__u32 frows__sort(struct frow *rows, __u32 n, bool self);

/* A group's accumulator of the period; owner's of name index + 1 `name`, NULL without
 * readings. */
const struct ctr_acc *ctr_group__acc(const struct ctr_group *g, bool run);
const struct ctr_acc *stats__ctr_get(const struct stats *st, __u32 name, __u32 owner, bool run);
/* Ratio i of derived.h's derived_ratios for owner: false when a counter of it is missing. */
bool stats__ctr_ratio(const struct stats *st, size_t i, __u32 owner, bool run, __u64 span,
		      double *v);
/* The total per second of span (0 for none); the mean time_running / time_enabled. */
double ctr_acc__rate(const struct ctr_acc *a, __u64 span);
double ctr_acc__running_mean(const struct ctr_acc *a);
/* The name indices + 1 owner has readings of, in byte order of the names, into out
 * (CTR_NAMES_MAX); returns their count. */
__u32 stats__ctr_names_of(const struct stats *st, __u32 owner, bool run, __u32 *out);
/* The processes with readings, ranked by *rank_by's total (name index + 1, 0 none), then
 * pid; for the caller to free; NULL and *n = 0 without memory. */
struct ctr_prow *stats__ctr_processes(const struct stats *st, bool run, __u32 *n, __u32 *rank_by);
/* The counters the correlator attached to the kernel's runs in the period. */
const struct kctr *kstat__ctr(const struct kstat *k, bool run);
/* Where in the pipeline records of a loss cause were dropped: "source", "correlator",
 * "unknown". */
const char *stats_loss_stage(__u32 cause);
/* The part of window [start, start + len) inside [first, last], len when none: the
 * denominator of its SM-active. */
__u64 stats_window_len(__u64 start, __u64 len, __u64 first, __u64 last);

/* ---- rendering (stats_json.c, stats_text.c) ------------------------------------------ */

/* A counter that actors publish in the session's status block, summed over them for a
 * member of stats.json ("unwind", "python"). */
struct status_sum {
	const char *key; /* in stats.json */
	const char *counter; /* the actors' counter name */
	__u32 role; /* enum conf_role: the actors that count it */
	/* 0: a plain sum. Else each actor's value is its mean per unit of key mean_by - 1
	 * (ns per stack): the result is the mean over all of them, weighted by that key. */
	unsigned int mean_by;
};
#define STATUS_SUMS_MAX 32

/* The sums of keys (n, at most STATUS_SUMS_MAX) into v, over the actors of each key's
 * role; zeros outside a session (no status block) and for a counter no actor publishes. */
void stats__sum_status(const struct stats *st, const struct status_sum *keys, unsigned int n,
		       __u64 *v);
/* stats.json's Python member's keys (PY_SUMS of them): what the CPU sources' and the
 * correlators' Python readers counted (docs/stats.md). */
#define PY_SUMS 14
extern const struct status_sum stats_python_sums[PY_SUMS];

/* stats.json: the run's totals; final: the run has ended. */
void stats__put_json(struct text *t, struct stats *st, bool final);
/* The members of one period (the run, or an interval for its line) but SM-active. */
void stats__put_period(struct text *t, const struct stats *st, const struct period *p, bool run);
void stats__put_cpu(struct text *t, const struct stats *st, const struct period *p, bool run);
void stats__put_counters(struct text *t, const struct stats *st, const struct period *p, bool run);
/* SM-active, the last member: the run (from_ordinal UINT64_MAX) or the windows of an
 * interval line closed since from_ordinal. */
void stats__put_sm_active(struct text *t, const struct stats *st, __u64 first, __u64 last,
			  bool final, __u64 from_ordinal);
/* stats.txt: the run for people. */
void stats__put_text(struct text *t, const struct stats *st, bool final);

#endif /* XPUSUP_ACTORS_SINK_STATS_H */
