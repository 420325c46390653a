/* SPDX-License-Identifier: MIT */
/*
 * An output format of the sinks: folded stacks, the Chrome trace timeline, statistics. A
 * format knows nothing of actors or nng: the sink actor (sink.c) and `xpusup subscribe` both
 * feed it decoded batches, so the remote sink is the same code as the local one.
 *
 * Calling order: open, then batch and tick in any order, then finish (stop) and free.
 * Errors in words go to why (why_len bytes); a format that cannot write its file keeps its
 * state and tries again at the next tick or at finish, so the caller can show the problem
 * and go on.
 */
#ifndef XPUSUP_ACTORS_SINK_FMT_H
#define XPUSUP_ACTORS_SINK_FMT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"
#include "common/status.h"
#include "common/wire.h"

/*
 * What a collector counts per origin (`xpusup subscribe` with several URLs: a row per host,
 * in the order first heard from), for a format that reports it (kind metrics). The collector
 * writes the rows before each tick and finish, in the format's own thread.
 */
#define FMT_ORIGINS_MAX 64
struct fmt_origin {
	char host[XPU_WIRE_HOST_MAX + 1];
	__u64 batches, events;
	__u64 missed; /* events lost in sequence gaps on the way */
	__u64 rewinds; /* batches whose sequence went back */
	__u64 sessions; /* sessions of the host seen: more than 1, it restarted */
	__u64 clock_moves; /* announced realtime steps on the host */
};

struct fmt_origins {
	unsigned int n;
	struct fmt_origin row[FMT_ORIGINS_MAX];
};

struct fmt_ops;

/* Where a format reads its options: the sink's section of pipeline.conf, or the command line
 * of `xpusup subscribe`. */
struct fmt_env {
	void *ctx;
	/* the value of key, or NULL when not given */
	const char *(*get)(void *ctx, const char *key);
	/* a file name option with a relative name taken from the right folder: 0, -ENOENT
	 * when not given, -ENAMETOOLONG */
	int (*path)(void *ctx, const char *key, char *buf, size_t size);
	/* a restarted sink of the same session: a format may pick up its last complete
	 * output (the counts the sink reports assume it does only what tick said it wrote) */
	bool resume;
	/* the session's status block (read-only here), for a format that reports what other
	 * actors counted; NULL outside a session (unit tests) */
	const struct xpu_status_block *status;
	/* the session's folder (its rings), for a format that reports on them (kind metrics);
	 * NULL outside a session or where the driver does not give it */
	const char *session_dir;
	/* the pipeline.conf the options come from, for a format that reads other sections
	 * (kind group: its [format] sections); NULL outside a session */
	const struct conf *conf;
	/* a collector's per-origin counts (above); NULL but in `xpusup subscribe` with several
	 * URLs */
	const struct fmt_origins *origins;
	/* in a group: the state of a format of that kind opened before this one in the same
	 * group (the group opens its stats formats first), or NULL; NULL outside a group. Valid
	 * for the life of the format (the group frees its formats together) */
	void *(*sibling)(void *ctx, const struct fmt_ops *kind);
};

/* Counters a format may show: the sink's status slot holds XPU_STATUS_MAX_COUNTERS, of which
 * the sink driver's own take 7 (sink.c) and one is spare. */
#define FMT_COUNTERS_MAX (XPU_STATUS_MAX_COUNTERS - 8)

enum { FMT_IDLE = 0, FMT_COMPLETE = 1, FMT_WROTE = 2 };

struct fmt_ops {
	const char *kind; /* "folded": the actor program is xpusup-folded */
	/* read options (a bad one is an error: -EINVAL) and make the state */
	int (*open)(void **st, const struct fmt_env *env, char *why, size_t why_len);
	void (*batch)(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev);
	/* optional: each message as it arrived, before decoding, for a format that forwards
	 * batches untouched (kind publish); a format with raw may leave batch NULL */
	void (*raw)(void *st, const void *msg, size_t len);
	/* about every 100 ms: periodic output. Returns FMT_IDLE (nothing written),
	 * FMT_WROTE (written; a problem shown before is over), FMT_COMPLETE (a complete
	 * output of everything received so far was written: a restart loses nothing before
	 * it), or -errno with why */
	int (*tick)(void *st, __u64 now_ns, char *why, size_t why_len);
	/* the final output. 0 or -errno with why */
	int (*finish)(void *st, char *why, size_t why_len);
	void (*free)(void *st);
	/* up to max (name, value) counters to show in status; returns how many */
	unsigned int (*counters)(void *st, const char **names, __u64 *values, unsigned int max);
	/* optional: start a snapshot of what the format keeps in memory (the timeline's
	 * mode = ring) into path (NULL: a name of its own). 0: started, written over the next
	 * ticks; -EBUSY: one is being written; -ENOTSUP: the format keeps nothing; -errno;
	 * each with why */
	int (*snapshot)(void *st, const char *path, char *why, size_t why_len);
	/* optional: the outcome of the last snapshot, told once: 1 written (path, and a
	 * summary in why), -errno failed (why), 0 nothing new */
	int (*snapshot_result)(void *st, char *path, size_t path_len, char *why, size_t why_len);
};

extern const struct fmt_ops fmt_folded;
extern const struct fmt_ops fmt_group;
extern const struct fmt_ops fmt_publish;
extern const struct fmt_ops fmt_stats;
extern const struct fmt_ops fmt_timeline;
extern const struct fmt_ops fmt_metrics;
extern const struct fmt_ops fmt_pprof;

/* sink__one_thread - whether a sink decodes and runs every format on its one thread (no
 * decode thread, no group lanes: docs/sinks.md): on a machine of 2 CPUs or fewer, or with
 * XPUSUP_SINK_THREADS=1 in the environment; XPUSUP_SINK_THREADS=2 asks for the threads. */
bool sink__one_thread(void);

/* sink__thread_start - fn(arg) on a thread of its own, named name (top -H, /proc/PID/task),
 * with every signal blocked: the sink's main thread takes them (a stop, a snapshot). 0 or
 * -errno. */
int sink__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name);

/* fmt__find - the format of that kind, or NULL. */
const struct fmt_ops *fmt__find(const char *kind);

#endif /* XPUSUP_ACTORS_SINK_FMT_H */
