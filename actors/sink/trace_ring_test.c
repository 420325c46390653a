// SPDX-License-Identifier: MIT
/*
 * The flight recorder's ring against a model: random appends of texts from 0 bytes to most
 * of the ring (so records wrap, and a big one empties it), expiries, and a reader that reads
 * a few records between appends as a snapshot does. The model is the list of every record
 * appended; the ring must hold exactly a suffix of it (minus the expired prefix), within its
 * size, each text intact, and count what left.
 */
#include "actors/sink/trace_ring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix.h"
#include "tests/tap.h"

#define SIZE 8192u
#define STEPS 200000u

/* The text of record i: its length and bytes follow from i. */
static __u32 text_len(__u64 seed)
{
	return seed % 16 == 0 ? (__u32)(seed % (SIZE - 64)) : (__u32)(seed % 200);
}

static void text_fill(char *buf, __u32 len, __u64 i)
{
	__u32 k;

	for (k = 0; k < len; k++)
		buf[k] = (char)('a' + (i + k) % 26);
}

int main(void)
{
	struct trace_ring *r;
	struct trace_ring_counts c;
	struct trace_ring_rec rec;
	static char buf[SIZE], want[SIZE];
	__u64 seed = 5, first = 0, next = 0, bad = 0, reader = 0, reader_end = 0, skipped = 0;
	__u64 i, read_i = 0, expired = 0, ts_cut = 0;
	int err;

	if (trace_ring__new(&r, SIZE))
		tap_bail("out of memory");
	for (i = 0; i < STEPS && !bad; i++) {
		seed = xpu_mix64(seed + i);
		if (seed % 97 == 0) { /* expire what is older than a point behind the tail */
			ts_cut = next > 20 ? next - 20 : 0;
			trace_ring__expire(r, ts_cut);
			continue;
		}
		text_fill(buf, text_len(seed), next);
		err = trace_ring__append(r, buf, text_len(seed), next, next + 1, NULL);
		if (err) {
			bad++;
			tap_diag("append %llu: %d", (unsigned long long)next, err);
		}
		next++;
		/* a reader, as a snapshot: a few records each step, from where it was */
		if (reader == reader_end) {
			reader = trace_ring__head(r);
			reader_end = trace_ring__tail(r);
			read_i = 0;
		}
		for (int k = 0; k < 3 && !bad; k++) {
			__u64 before = skipped, at = reader;
			int end = trace_ring__next(r, &reader, reader_end, &rec, &skipped);

			/* what the reader lost is of its own range, never what came after */
			if (at < reader_end && skipped - before > reader_end - at) {
				bad++;
				tap_diag("lost %llu bytes of a range of %llu",
					 (unsigned long long)(skipped - before),
					 (unsigned long long)(reader_end - at));
			}
			if (end || bad)
				break;
			/* its ts says which record it is: check the text against it */
			if (rec.ts < read_i) {
				bad++;
				tap_diag("reader went back: %llu after %llu",
					 (unsigned long long)rec.ts, (unsigned long long)read_i);
			}
			read_i = rec.ts;
			text_fill(want, rec.len, rec.ts);
			if (rec.len >= SIZE || memcmp(rec.text, want, rec.len) ||
			    rec.dep != rec.ts + 1) {
				bad++;
				tap_diag("record %llu: text damaged", (unsigned long long)rec.ts);
			}
		}
	}
	tap_ok(!bad,
	       "random appends, expiries and a reader among them: nothing damaged, the reader "
	       "only goes forward, and counts lost only what was in its range (%llu bad)",
	       (unsigned long long)bad);

	/* what is held is a suffix of what was appended, contiguous and within SIZE */
	trace_ring__counts(r, &c);
	{
		__u64 pos = trace_ring__head(r), n = 0, prev = 0;
		int gaps = 0;

		while (!trace_ring__next(r, &pos, trace_ring__tail(r), &rec, NULL)) {
			if (n && rec.ts != prev + 1)
				gaps++;
			prev = rec.ts;
			n++;
		}
		first = next - n;
		tap_ok(n == c.records && !gaps && (!n || prev == next - 1),
		       "the ring holds the newest %llu records in order, the last appended last "
		       "(%d gaps)",
		       (unsigned long long)n, gaps);
	}
	tap_ok(c.bytes <= SIZE, "it holds %llu bytes of a %u-byte ring",
	       (unsigned long long)c.bytes, SIZE);
	expired = c.expired;
	tap_ok(c.evicted + c.expired + c.records == next && c.evicted > 0 && expired > 0,
	       "every record appended is held, evicted or expired (%llu = %llu + %llu + %llu)",
	       (unsigned long long)next, (unsigned long long)c.records,
	       (unsigned long long)c.evicted, (unsigned long long)expired);
	(void)first;

	/* too big: refused and counted, nothing else touched */
	{
		static char big[SIZE + 8];
		__u64 held = c.records;

		tap_ok(trace_ring__append(r, big, sizeof(big), 1, 0, NULL) == -E2BIG,
		       "a record larger than the ring is refused");
		trace_ring__counts(r, &c);
		tap_ok(c.too_big == 1 && c.records == held, "counted, and nothing held is dropped");
	}

	/* expire stops at the first younger record; all older than everything empties it */
	trace_ring__expire(r, ~0ull);
	trace_ring__counts(r, &c);
	tap_ok(c.records == 0 && c.bytes == 0 && trace_ring__head(r) == trace_ring__tail(r),
	       "expiring everything empties it");
	{
		__u64 at = 0, from = trace_ring__head(r);

		tap_ok(!trace_ring__append(r, buf, 100, 7, 3, &at) &&
			       !trace_ring__next(r, &from, trace_ring__tail(r), &rec, NULL) &&
			       rec.ts == 7 && rec.len == 100 && rec.dep == 3 && rec.pos == at,
		       "and it takes records again, saying where each went");
	}
	trace_ring__free(r);
	return tap_done();
}
