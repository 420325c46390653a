/* SPDX-License-Identifier: MIT */
/*
 * The timeline sink's flight recorder (mode = ring, docs/timeline.md): the last events of a
 * session kept in memory, as the JSON text they will be written as, until a snapshot asks
 * for them. One buffer of a fixed size, allocated once; events go in at the tail and the
 * oldest leave at the head, to make room (evicted: counted) or because they are older than
 * the sink keeps (expired).
 *
 *	trace_ring__append(r, text, len, ts)   one event (or events that must stay together,
 *					       a flow arrow's two ends) with its time
 *	trace_ring__expire(r, before)           drop from the head what is older than before
 *	pos = trace_ring__head(r); end = trace_ring__tail(r);
 *	while (trace_ring__next(r, &pos, end, &rec) == 0) ...   read, oldest first
 *
 * Positions are byte counts since the ring was made (never wrapping in a __u64), so a reader
 * that fell behind, its records evicted under it while it wrote, knows it and skips to the
 * head. A record is [len][ts][dep][text] padded to 8 bytes, never split at the end of the buffer:
 * where one does not fit, a wrap mark sends readers to the start.
 */
#ifndef XPUSUP_ACTORS_SINK_TRACE_RING_H
#define XPUSUP_ACTORS_SINK_TRACE_RING_H

#include <stddef.h>

#include <linux/types.h>

struct trace_ring;

struct trace_ring_rec {
	const char *text;
	__u32 len;
	__u64 ts;
	__u64 dep; /* as appended */
	__u64 pos; /* where it is */
};

struct trace_ring_counts {
	__u64 bytes; /* held now, headers and padding included */
	__u64 records; /* held now */
	__u64 evicted; /* records dropped for room */
	__u64 expired; /* records dropped for age */
	__u64 too_big; /* records refused: larger than the ring */
};

/* trace_ring__new - a ring of size bytes (rounded down to 8; at least 4 KiB). 0 or -ENOMEM. */
int trace_ring__new(struct trace_ring **r, size_t size);

void trace_ring__free(struct trace_ring *r);

/* trace_ring__append - keep len bytes of text stamped ts, evicting the oldest records as
 * needed; dep is kept for readers (the timeline: position + 1 of a record
 * this one needs, 0 none), and *pos (may be NULL) says where the record went. 0, or -E2BIG
 * when it cannot fit even in an empty ring (counted in too_big). */
int trace_ring__append(struct trace_ring *r, const char *text, size_t len, __u64 ts, __u64 dep,
		       __u64 *pos);

/* trace_ring__expire - drop records from the head while their ts is below before. Records
 * arrive roughly in time order (the correlator's lateness), so one younger record stops it:
 * older ones behind it leave later, or are skipped by the snapshot's own cut. */
void trace_ring__expire(struct trace_ring *r, __u64 before);

__u64 trace_ring__head(const struct trace_ring *r);
__u64 trace_ring__tail(const struct trace_ring *r);

/* trace_ring__next - the record at *pos (moved to the head first when it was evicted) if
 * *pos < end, and *pos past it. 0, or -ENOENT at end. *skipped (may be NULL) grows by the
 * bytes a reader lost to eviction. */
int trace_ring__next(const struct trace_ring *r, __u64 *pos, __u64 end, struct trace_ring_rec *rec,
		     __u64 *skipped);

void trace_ring__counts(const struct trace_ring *r, struct trace_ring_counts *c);

#endif /* XPUSUP_ACTORS_SINK_TRACE_RING_H */
