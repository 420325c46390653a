/* SPDX-License-Identifier: MIT */
/*
 * The metrics format's HTTP server (metrics_http.c), private to the format (metrics.c): a
 * thread of its own that serves the last page the format published, so that the sink's loop
 * never waits for a client and a client never waits for the sink's loop.
 *
 * The page is published whole (copied, reference-counted): a scrape sends the page that was
 * current when its request was complete, however many pages are published while it is sent.
 *
 * Calling order: metrics_http__start, then metrics_http__publish and metrics_http__counts from
 * one thread (the format's) in any order, then metrics_http__stop.
 */
#ifndef XPUSUP_ACTORS_SINK_METRICS_H
#define XPUSUP_ACTORS_SINK_METRICS_H

#include <stddef.h>

#include <linux/types.h>

#include "actors/sink/sink_options.h"
#include "actors/sink/stats.h"

/* The exposition format's media type (Prometheus text format 0.0.4). */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* A request line and its headers together: more is answered 431. */
#define METRICS_REQUEST_MAX 8192

/* What the server counted; every member only grows. */
struct metrics_http_counts {
	__u64 scrapes; /* 200 answers to GET or HEAD /metrics */
	__u64 bad_requests; /* 400: not an HTTP/1.x request */
	__u64 not_found; /* 404: another path */
	__u64 bad_methods; /* 405: neither GET nor HEAD */
	__u64 too_large; /* 431: request and headers over METRICS_REQUEST_MAX */
	__u64 timed_out; /* closed: no whole request, or reply not taken, within the timeout */
	__u64 evicted; /* closed: the oldest still sending its request, for a new connection */
	__u64 accepted; /* connections */
};

struct metrics_http;

/*
 * metrics_http__start - listen on l (SO_REUSEADDR, backlog 16) and start the server thread:
 * at most max_clients connections at once, each closed when it has not sent a whole request
 * within timeout_ns of its accept, or not taken its reply within timeout_ns of its start.
 * Until the first metrics_http__publish, a scrape is answered 503. Returns the server, or NULL
 * with errno and why (bind errors name the address).
 */
struct metrics_http *metrics_http__start(const struct metrics_listen *l, unsigned int max_clients,
					 __u64 timeout_ns, char *why, size_t why_len);

/* metrics_http__publish - the page scrapes get from now on (len bytes, copied). 0 or -ENOMEM
 * (the previous page stays). */
int metrics_http__publish(struct metrics_http *h, const char *page, size_t len);

/* metrics_http__counts - the counters so far (each exact, the set not one instant). */
void metrics_http__counts(const struct metrics_http *h, struct metrics_http_counts *c);

/* metrics_http__stop - stop the thread, close every connection and the socket, free h; NULL
 * is fine. */
void metrics_http__stop(struct metrics_http *h);

/* ---- the page's spelling (metrics.c; public for its unit test) ------------------------ */

/* metrics__label - a label value's text (without quotes) for a name of n bytes: its bytes as
 * stats.json spells them (common/json_escape.h), with the format's escapes \\ \" \n. */
void metrics__label(struct text *t, const char *s, size_t n);

/* An actor counter's family (docs/fleet.md, "Actor counters: the mapping"). */
struct metrics_family {
	char name[XPU_STATUS_COUNTER_NAME_LEN + 40]; /* the family, _total included */
	double scale; /* the value times this is in the base unit */
	bool gauge;
};

/* metrics__family - the family of the counter name (len bytes, no NUL needed). */
void metrics__family(const char *name, size_t len, struct metrics_family *f);

#endif /* XPUSUP_ACTORS_SINK_METRICS_H */
