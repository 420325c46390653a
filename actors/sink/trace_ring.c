// SPDX-License-Identifier: MIT
/* The timeline sink's flight recorder: a byte ring of events; see trace_ring.h. */
#include "actors/sink/trace_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HDR 24u /* struct hdr */
#define WRAP 0xffffffffu /* len of a wrap mark: the rest of the buffer is unused */
#define MIN_SIZE 4096u

struct hdr {
	__u32 len; /* text bytes, or WRAP */
	__u32 pad;
	__u64 ts;
	__u64 dep; /* trace_ring__append's */
};

_Static_assert(sizeof(struct hdr) == HDR, "HDR is struct hdr's size");

struct trace_ring {
	unsigned char *buf;
	__u64 size; /* a multiple of 8 */
	__u64 head, tail; /* byte positions since the start; tail - head <= size */
	__u64 records, evicted, expired, too_big;
};

static __u64 rec_size(__u32 len)
{
	return HDR + (((__u64)len + 7) & ~7ull);
}

int trace_ring__new(struct trace_ring **out, size_t size)
{
	struct trace_ring *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->size = size < MIN_SIZE ? MIN_SIZE : (__u64)size & ~7ull;
	/* malloc, not calloc: pages are touched as events come, so a ring that never fills
	 * costs what it holds */
	r->buf = malloc(r->size);
	if (!r->buf) {
		free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void trace_ring__free(struct trace_ring *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

/* The bytes from position pos to the end of the buffer, when no record starts at pos (a
 * wrap mark, or too little room left for a header); 0 when one does. */
static __u64 wrap_at(const struct trace_ring *r, __u64 pos)
{
	__u64 off = pos % r->size, rest = r->size - off;
	struct hdr h;

	if (rest < HDR)
		return rest;
	memcpy(&h, r->buf + off, sizeof(h));
	return h.len == WRAP ? rest : 0;
}

/* Drop the record (or wrap) at the head. */
static void drop_head(struct trace_ring *r)
{
	__u64 skip = wrap_at(r, r->head);
	struct hdr h;

	if (!skip) {
		memcpy(&h, r->buf + r->head % r->size, sizeof(h));
		skip = rec_size(h.len);
		r->records--;
	}
	r->head += skip;
}

int trace_ring__append(struct trace_ring *r, const char *text, size_t len, __u64 ts, __u64 dep,
		       __u64 *pos)
{
	__u64 need = rec_size((__u32)len), off = r->tail % r->size, rest = r->size - off;
	__u64 room = need + (rest < need ? rest : 0); /* a record never straddles the end */
	struct hdr h = { .len = (__u32)len, .ts = ts, .dep = dep };

	if (len >= WRAP || need > r->size) {
		r->too_big++;
		return -E2BIG;
	}
	while (r->size - (r->tail - r->head) < room && r->head < r->tail) {
		__u64 before = r->records;

		drop_head(r);
		r->evicted += before - r->records;
	}
	if (r->size - (r->tail - r->head) < room) {
		/* empty, and the record and the rest of the buffer are more than it holds:
		 * start again at the beginning of the buffer */
		r->tail += rest;
		r->head = r->tail;
		off = 0;
		rest = r->size;
	}
	if (rest < need) {
		if (rest >= HDR) {
			struct hdr w = { .len = WRAP };

			memcpy(r->buf + off, &w, sizeof(w));
		}
		r->tail += rest;
		off = 0;
	}
	memcpy(r->buf + off, &h, sizeof(h));
	memcpy(r->buf + off + HDR, text, len);
	if (pos)
		*pos = r->tail;
	r->tail += need;
	r->records++;
	return 0;
}

void trace_ring__expire(struct trace_ring *r, __u64 before)
{
	struct hdr h;

	while (r->head < r->tail) {
		if (!wrap_at(r, r->head)) {
			memcpy(&h, r->buf + r->head % r->size, sizeof(h));
			if (h.ts >= before)
				return;
			r->expired++;
		}
		drop_head(r);
	}
}

__u64 trace_ring__head(const struct trace_ring *r)
{
	return r->head;
}

__u64 trace_ring__tail(const struct trace_ring *r)
{
	return r->tail;
}

int trace_ring__next(const struct trace_ring *r, __u64 *pos, __u64 end, struct trace_ring_rec *rec,
		     __u64 *skipped)
{
	struct hdr h;
	__u64 skip;

	if (*pos < r->head) {
		/* what the reader lost of its own range: not what came after its end */
		if (skipped && *pos < end)
			*skipped += (r->head < end ? r->head : end) - *pos;
		*pos = r->head;
	}
	if (end > r->tail)
		end = r->tail;
	while (*pos < end && (skip = wrap_at(r, *pos)))
		*pos += skip;
	if (*pos >= end)
		return -ENOENT;
	memcpy(&h, r->buf + *pos % r->size, sizeof(h));
	rec->text = (const char *)r->buf + *pos % r->size + HDR;
	rec->len = h.len;
	rec->ts = h.ts;
	rec->dep = h.dep;
	rec->pos = *pos;
	*pos += rec_size(h.len);
	return 0;
}

void trace_ring__counts(const struct trace_ring *r, struct trace_ring_counts *c)
{
	*c = (struct trace_ring_counts){ .bytes = r->tail - r->head,
					 .records = r->records,
					 .evicted = r->evicted,
					 .expired = r->expired,
					 .too_big = r->too_big };
}
