/* SPDX-License-Identifier: MIT */
/* The sink kinds' configuration schemas (docs/sinks.md): one table and one options struct
 * per format. A format reads them through conf_kind__options() from its fmt_env, so that
 * the options of `xpusup subscribe` pass the same checks as a pipeline.conf's. */
#ifndef XPUSUP_ACTORS_SINK_OPTIONS_H
#define XPUSUP_ACTORS_SINK_OPTIONS_H

#include <stdbool.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "actors/sink/push.h"
#include "common/config.h"

/* kind = stats: one member per key of stats_keys (sink_options.c). */
struct stats_options {
	const char *path;
	const char *text; /* NULL: beside path, .txt; "none": no text file */
	unsigned long long interval_s;
	const char *intervals; /* NULL: beside path, .intervals.jsonl; "none": none */
	unsigned long long window_ms;
	unsigned long long lateness_ms;
	unsigned long long max_kernels;
};

/* folded's `weight`: in the order of the schema's names. */
enum folded_weight { FOLDED_WEIGHT_NS, FOLDED_WEIGHT_SAMPLES };

/* kind = folded: one member per key of folded_keys. */
struct folded_options {
	const char *path;
	const char *html; /* NULL: beside path, .html; "none": no page */
	int weight; /* enum folded_weight */
	unsigned long long snapshot_s;
	unsigned long long max_stacks;
};

/* kind = publish: one member per key of publish_keys. */
struct publish_options {
	const char *listen;
	const char *tls_cert;
	const char *tls_key;
	const char *tls_ca;
	const char *host;
	unsigned long long queue;
	unsigned long long linger_ms;
};

/* timeline's `mode`: in the order of the schema's names. */
enum timeline_mode { TIMELINE_FILE, TIMELINE_RING };

/* kind = timeline: one member per key of timeline_keys. */
struct timeline_options {
	const char *path;
	unsigned long long sm_window_ms;
	unsigned long long sm_lateness_ms;
	unsigned long long max_launches;
	int mode; /* enum timeline_mode */
	unsigned long long window_s; /* file: a new file every window_s; 0: one file */
	unsigned long long max_mb; /* file with windows: on disk; ring: in memory; 0: none */
	unsigned long long keep_s; /* ring */
	unsigned long long trigger_kernel_us; /* ring: 0 none */
	const char *trigger_mark; /* ring: NULL none */
	unsigned long long trigger_holdoff_s; /* ring */
};

/* kind = pprof: one member per key of pprof_keys. */
struct pprof_options {
	const char *path;
	unsigned long long interval_s;
	unsigned long long max_entries;
	const char *host; /* NULL: the hostname */
	const char *labels; /* "k=v,k=v", checked; NULL: none */
	struct push_opts push; /* push_url and the other push_ keys (push.h) */
};

/* pprof's user labels at most (host is one more). */
#define PPROF_LABELS_MAX 16

/* kind = group: one member per key of group_keys. */
struct group_options {
	const char *formats;
};

/* Defaults of the ring when its keys are not written (docs/pipeline.md says why). */
#define TIMELINE_RING_MB_DEFAULT 256

/* kind = metrics: where it listens, as parsed from `listen` (HOST:PORT, HOST an IPv4 address
 * or a bracketed IPv6 one: no names, so no resolver at start). */
struct metrics_listen {
	struct sockaddr_storage addr;
	socklen_t len;
	bool loopback; /* 127.0.0.0/8 or ::1 */
	char text[64]; /* as written */
};

/* metrics_listen__parse - s into *l: 0, or -EINVAL (l untouched). */
int metrics_listen__parse(const char *s, struct metrics_listen *l);

/* kind = metrics: one member per key of metrics_keys. */
struct metrics_options {
	struct metrics_listen listen;
	unsigned long long top_kernels;
	unsigned long long top_processes;
	unsigned long long window_ms;
	unsigned long long lateness_ms;
	unsigned long long max_clients;
	unsigned long long timeout_ms;
};

extern const struct conf_kind stats_conf_kind;
extern const struct conf_kind folded_conf_kind;
extern const struct conf_kind publish_conf_kind;
extern const struct conf_kind timeline_conf_kind;
extern const struct conf_kind metrics_conf_kind;
extern const struct conf_kind pprof_conf_kind;
extern const struct conf_kind group_conf_kind;

/*
 * timeline_index__path - where a timeline in windows (window_s) at path lists its windows:
 * DIR/STEM.index.json for DIR/STEM.json (or DIR/STEM). -ENAMETOOLONG when it does not fit in
 * size bytes, -EINVAL for a path without a name. The sink and `xpusup record` both use it.
 */
int timeline_index__path(const char *path, char *buf, size_t size);

#endif /* XPUSUP_ACTORS_SINK_OPTIONS_H */
