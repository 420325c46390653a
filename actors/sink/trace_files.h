/* SPDX-License-Identifier: MIT */
/*
 * The files of a timeline sink with windows (window_s, docs/timeline.md): for path
 * out/trace.json, each window is out/trace-<UTC start>.json (trace-20261125T061530.123Z.json),
 * a whole Chrome trace of its own, and out/trace.index.json lists the windows on disk, oldest
 * first, with their time ranges:
 *
 *	{"format":"xpusup trace windows 1","path":"trace.json","windows":[
 *	{"file":"trace-20261125T061530.123Z.json","start_ns":...,"end_ns":...,
 *	 "first_ts":1234.567,"last_ts":1239.001,"events":51234,"bytes":5123456,
 *	 "start":"2026-11-25T06:15:30.123Z","end":"2026-11-25T06:15:35.124Z"},
 *	...
 *	],"windows_deleted":3,"bytes_deleted":15000000}
 *
 * start and end are when the window was opened and closed (CLOCK_REALTIME: ns since the
 * epoch, and as UTC text); first_ts and last_ts are on the traces' own axis (CLOCK_MONOTONIC
 * microseconds, three decimals): the earliest start and the latest end of the events the
 * window received. With max_mb, the
 * oldest windows are deleted so that what is on disk, the window being written included,
 * stays under the cap. The index is rewritten (whole, renamed into place) after each change,
 * one window a line, which is also how a restarted sink reads it back.
 */
#ifndef XPUSUP_ACTORS_SINK_TRACE_FILES_H
#define XPUSUP_ACTORS_SINK_TRACE_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

struct trace_windows;

struct trace_window {
	char file[256]; /* name in the folder of path */
	__u64 start_ns, end_ns; /* CLOCK_REALTIME */
	__u64 first_ts, last_ts; /* the events', ns */
	__u64 events, bytes;
};

/* trace_windows__open - for path (the sink's `path`), at most max_bytes on disk (0: no cap).
 * The index found is taken over (the windows it lists that are still there: a restarted
 * sink's own, or an earlier session's, which then count under the cap and go oldest first).
 * resume: a restarted sink, whose counts of windows written and deleted go on from the
 * index's, and which deletes the unfinished window the killed run was writing
 * (STEM-*.json.partial; trace_windows__partials_removed says how many). 0 or -errno with
 * why. */
int trace_windows__open(struct trace_windows **w, const char *path, __u64 max_bytes, bool resume,
			char *why, size_t why_len);

void trace_windows__free(struct trace_windows *w);

/* trace_files__stamped - for path dir/stem.json, dir/stem-TAG<UTC now>.json into buf (UTC as
 * 20261125T061530.123Z; when a file of that name exists, dir/stem-TAG<UTC now>-N.json with the
 * first N from 2 that is free), and now in *wall_ns (CLOCK_REALTIME). -ENAMETOOLONG. */
int trace_files__stamped(const char *path, const char *tag, char *buf, size_t size, __u64 *wall_ns);

/* trace_windows__name - the full path of a window starting now (wall clock), into buf, and
 * its start in *start_ns. -ENAMETOOLONG when it does not fit. */
int trace_windows__name(const struct trace_windows *w, char *buf, size_t size, __u64 *start_ns);

/* trace_windows__add - the window at full path file was written whole: listed, the index
 * rewritten, then the cap applied. 0 or -errno with why (the index could not be written: the
 * window stays listed and the next add writes it). */
int trace_windows__add(struct trace_windows *w, const char *file, const struct trace_window *win,
		       char *why, size_t why_len);

/* trace_windows__trim - with current bytes being written besides the windows listed,
 * delete the oldest ones (never the last one) until the total is under the cap; rewrites the
 * index when it deleted. Returns how many it deleted; a window it cannot delete stops it
 * (trace_windows__error). */
unsigned int trace_windows__trim(struct trace_windows *w, __u64 current);

/* trace_windows__error - what is wrong with the windows on disk now: the last trim could not
 * delete a window (it stays listed and counted, and trim stops there; said until a trim no
 * longer fails), or the index could not be written (it lists windows that are gone; said
 * until a write works, the next add's at the latest): -errno with why, or 0. */
int trace_windows__error(const struct trace_windows *w, char *why, size_t why_len);

unsigned int trace_windows__partials_removed(const struct trace_windows *w);

/* trace_windows__count - windows listed; __listed_bytes their size on disk. */
unsigned int trace_windows__count(const struct trace_windows *w);
__u64 trace_windows__listed_bytes(const struct trace_windows *w);

/* counters for status: windows written, windows deleted, bytes deleted */
void trace_windows__counts(const struct trace_windows *w, __u64 *written, __u64 *deleted,
			   __u64 *bytes_deleted);

/* trace_windows__index - the index file's full path. */
const char *trace_windows__index(const struct trace_windows *w);

#endif /* XPUSUP_ACTORS_SINK_TRACE_FILES_H */
