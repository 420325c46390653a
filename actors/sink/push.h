/* SPDX-License-Identifier: MIT */
/*
 * The pprof sink's push: each finished profile file POSTed to a Pyroscope-compatible ingest
 * endpoint (docs/fleet.md), with a bounded on-disk spool so that a receiver that refuses,
 * hangs or is gone loses nothing until the spool is full.
 *
 *	pusher__open(&p, &opts, why, len)      check opts, lock and scan the spool (files a
 *						previous run left are queued, oldest first),
 *						start the upload thread
 *	pusher__submit(p, path, from, until)   the sink's thread: link (or copy) a finished
 *						file into the spool and wake the upload thread;
 *						never waits on the network
 *	pusher__counters(p, ...)               any thread, any time: what was sent, retried,
 *	pusher__error(p, buf, len)             refused, dropped; the trouble in words
 *	pusher__close(p, drain_ms)             try for up to drain_ms to send what is queued,
 *						then stop; the rest stays in the spool for the
 *						next open
 *
 * The spool is the queue: a file is in the queue exactly when its spool copy exists, named
 * SEQ-FROM-UNTIL.pprof (SEQ orders them; FROM and UNTIL are the query's), so a sink killed
 * at any point finds at its next start what it had not sent. A file is removed from the
 * spool once the receiver answered 2xx (sent) or refused it for good (rejected: a 4xx other
 * than 408 and 429). Anything else (5xx, 408, 429, 3xx, a timeout, a refused connection) is
 * retried, the oldest file first, after a delay that doubles from backoff_ms up to
 * backoff_max_s and is reset by a success (or the server's Retry-After, up to
 * backoff_max_s). Delivery is at least once: a receiver that took
 * a body but answered after the timeout gets it again.
 *
 * Threads: one upload thread per pusher, which alone uses libcurl (an easy handle, kept for
 * its connections). submit, counters, error and close may be called from one other thread;
 * counters and error from any.
 */
#ifndef XPUSUP_ACTORS_SINK_PUSH_H
#define XPUSUP_ACTORS_SINK_PUSH_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#include "common/config.h"

/*
 * What a pusher needs. The first members are the sink's configuration keys (PUSH_CONF_KEYS
 * below), so that a kind can embed the struct in its options; the last ones are filled by
 * the caller.
 */
struct push_opts {
	/* the keys */
	const char *url; /* http(s)://HOST[:PORT][/PATH]; /ingest is added unless PATH ends so */
	const char *app; /* the `name` before the labels: [A-Za-z0-9._-]+ */
	const char *labels; /* "k=v,k=v" or NULL: added after host */
	const char *tenant; /* X-Scope-OrgID (a multi-tenant Pyroscope); NULL: none */
	const char *spool; /* the spool folder; NULL: the caller must set it (pusher__open) */
	unsigned long long spool_mb; /* the spool's cap, MiB */
	unsigned long long timeout_s; /* one request, connection included */
	unsigned long long backoff_ms; /* first delay after a failure */
	unsigned long long backoff_max_s; /* the delay doubles up to this */
	unsigned long long drain_ms; /* for the caller: pusher__close's drain_ms at stop */
	/* not keys */
	const char *host; /* the host label; NULL: gethostname() */
	unsigned long long spool_bytes; /* when not 0: the cap in bytes, not spool_mb (tests) */
};

/* The defaults, as the keys' .def say. */
#define PUSH_APP_DEFAULT "xpusup"
#define PUSH_SPOOL_MB_DEFAULT 256
#define PUSH_TIMEOUT_S_DEFAULT 30
#define PUSH_BACKOFF_MS_DEFAULT 1000
#define PUSH_BACKOFF_MAX_S_DEFAULT 60
#define PUSH_DRAIN_MS_DEFAULT 2000
#define PUSH_SPOOL_DIR "push-spool" /* a default spool: this folder beside the output */

#define PUSH_STR_(x) #x
#define PUSH_STR(x) PUSH_STR_(x)

/*
 * PUSH_CONF_KEYS(TYPE, m) - the push keys as struct conf_key entries, for a kind whose
 * options struct TYPE has a `struct push_opts m;`. Paste into the kind's table (before its
 * { .key = NULL }) and call push_opts__check() from the kind's check, so that a bad URL, app
 * name or label is a configuration error with its line.
 */
/* clang-format off */
#define PUSH_CONF_KEYS(TYPE, m)                                                                    \
	{ .key = "push_url", CONF_MEMBER(TYPE, m.url),                                             \
	  .type = CONF_T_TEXT, .roles = CONF_SINK,                                                 \
	  .doc = "POST each file to this Pyroscope-compatible server's /ingest: "                  \
		 "http(s)://HOST:PORT (default: no push)" },                                       \
	{ .key = "push_app", CONF_MEMBER(TYPE, m.app),                                             \
	  .type = CONF_T_TEXT, .roles = CONF_SINK, .def = PUSH_APP_DEFAULT,                        \
	  .doc = "the application name the server files the profiles under" },                     \
	{ .key = "push_labels", CONF_MEMBER(TYPE, m.labels),                                       \
	  .type = CONF_T_TEXT, .roles = CONF_SINK,                                                 \
	  .doc = "labels of the pushed profiles, k=v,k=v (host is always one)" },                  \
	{ .key = "push_tenant", CONF_MEMBER(TYPE, m.tenant),                                       \
	  .type = CONF_T_TEXT, .roles = CONF_SINK,                                                 \
	  .doc = "the tenant of a multi-tenant server, sent as X-Scope-OrgID (default: none)" },   \
	{ .key = "push_spool", CONF_MEMBER(TYPE, m.spool),                                         \
	  .type = CONF_T_TEXT, .roles = CONF_SINK,                                                 \
	  .doc = "the folder of files not sent yet (default: " PUSH_SPOOL_DIR " beside the output)" }, \
	{ .key = "push_spool_mb", CONF_MEMBER(TYPE, m.spool_mb),                                   \
	  .type = CONF_T_UINT, .roles = CONF_SINK,                                                 \
	  .min = 1, .max = 1048576, .def = PUSH_STR(PUSH_SPOOL_MB_DEFAULT),                        \
	  .doc = "the spool's cap in MiB: a file that does not fit is dropped and counted" },      \
	{ .key = "push_timeout_s", CONF_MEMBER(TYPE, m.timeout_s),                                 \
	  .type = CONF_T_UINT, .roles = CONF_SINK,                                                 \
	  .min = 1, .max = 3600, .def = PUSH_STR(PUSH_TIMEOUT_S_DEFAULT),                          \
	  .doc = "one request's time limit; a request that takes longer is retried" },             \
	{ .key = "push_backoff_ms", CONF_MEMBER(TYPE, m.backoff_ms),                               \
	  .type = CONF_T_UINT, .roles = CONF_SINK,                                                 \
	  .min = 10, .max = 3600000, .def = PUSH_STR(PUSH_BACKOFF_MS_DEFAULT),                     \
	  .doc = "the first delay before a retry; it doubles with each failure" },                 \
	{ .key = "push_backoff_max_s", CONF_MEMBER(TYPE, m.backoff_max_s),                         \
	  .type = CONF_T_UINT, .roles = CONF_SINK,                                                 \
	  .min = 1, .max = 3600, .def = PUSH_STR(PUSH_BACKOFF_MAX_S_DEFAULT),                      \
	  .doc = "the longest delay between retries" },                                            \
	{ .key = "push_drain_ms", CONF_MEMBER(TYPE, m.drain_ms),                                   \
	  .type = CONF_T_UINT, .roles = CONF_SINK,                                                 \
	  .max = 600000, .def = PUSH_STR(PUSH_DRAIN_MS_DEFAULT),                                   \
	  .doc = "at stop, time given to sending what is queued; the rest waits in the "           \
		 "spool for the next start" }
/* clang-format on */

struct pusher;

/* Whether s (n bytes) may be a label value: Pyroscope reads name as APP{k=v,k=v}, so a
 * value may not hold what separates them (nor a space or control byte). */
bool push__label_value_ok(const char *s, size_t n);

/*
 * push_opts__check - the rules of the push keys that a table cannot say: url parses and is
 * http:// or https:// with a host and no query, app and labels are what Pyroscope's name
 * accepts, tenant is printable, backoff_ms is at most backoff_max_s. NULL when they hold (or url is NULL: no
 * push), else the key to blame ("push_url") with why in words. For a conf_kind's check.
 */
const char *push_opts__check(const struct push_opts *o, char *why, size_t why_len);

/*
 * pusher__open - check o (push_opts__check), make the spool folder if missing and take its
 * lock (one pusher a spool), queue the files a previous run left there, oldest first, and
 * start the upload thread. o->url and o->spool must be set. o's strings are copied.
 *
 * Returns 0 with *p (free it with pusher__close), or -EINVAL (a bad option), -EBUSY (another
 * pusher holds the spool), -errno (the spool cannot be made or read, no thread); *p is NULL
 * on error and why (why_len bytes) says it in words.
 */
int pusher__open(struct pusher **p, const struct push_opts *o, char *why, size_t why_len);

/*
 * pusher__submit - queue the finished file path (a gzip'ed profile.proto), covering the
 * UNIX seconds [from_s, until_s], for upload: hard-linked into the spool (copied when the
 * spool is on another file system), so the caller may remove or replace path afterwards.
 * Never waits on the network.
 *
 * Returns 0 (queued), -ENOSPC (not queued: the spool would go over its cap, or its disk is
 * full; counted in dropped and dropped_bytes), -ENOENT or another -errno (path cannot be
 * read, or the spool written: counted as dropped too when path was readable), -EINVAL
 * (until_s < from_s, not counted).
 */
int pusher__submit(struct pusher *p, const char *path, __u64 from_s, __u64 until_s);

/* The counters, in this order (names as pusher__counters gives them). */
enum push_counter {
	PUSH_SENT, /* push_sent: files the receiver took (2xx) */
	PUSH_SENT_BYTES, /* push_sent_bytes */
	PUSH_FAILURES, /* push_failures: attempts that failed (5xx, 408, 429, transport) */
	PUSH_RETRIES, /* push_retries: attempts of a file that had failed before */
	PUSH_REJECTED, /* push_rejected: files refused for good (other 4xx), removed */
	PUSH_SPOOLED, /* push_spooled: files in the spool now */
	PUSH_SPOOL_BYTES, /* push_spool_bytes */
	PUSH_DROPPED, /* push_dropped: files not queued (spool cap or disk full) */
	PUSH_DROPPED_BYTES, /* push_dropped_bytes */
	PUSH_N_COUNTERS,
};

/*
 * pusher__counters - up to max (name, value) pairs in enum push_counter's order, as
 * fmt_ops.counters wants them (a format appends them to its own). Returns how many. The
 * names are static; the values a consistent snapshot.
 */
unsigned int pusher__counters(struct pusher *p, const char **names, __u64 *values,
			      unsigned int max);

/*
 * pusher__error - when the last attempt failed (or the last submit dropped a file), what
 * happened in words into buf ("push to http://h:4040/ingest: HTTP 500 (...); 3 files
 * waiting, retry in 2 s"), and returns 1; 0 (buf "") when the last attempt succeeded.
 */
int pusher__error(struct pusher *p, char *buf, size_t len);

/*
 * pusher__close - stop: go on sending for up to drain_ms while files are queued (0: stop at
 * once, an upload in flight is cut short), then stop the thread, release the spool and free
 * p. What was not sent stays in the spool. Accepts NULL.
 */
void pusher__close(struct pusher *p, unsigned int drain_ms);

#endif /* XPUSUP_ACTORS_SINK_PUSH_H */
