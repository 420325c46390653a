// SPDX-License-Identifier: MIT
/*
 * Fuzz target for xpu_wire_decode (common/wire_dec.c).
 *
 * Not only "does not crash": for every input the decoder accepts,
 *   1. every pointer it hands back lies inside the message or the pool, every frame name is
 *      a non-empty NUL-terminated string in the text pool beside its frame, and every count
 *      is within its limit;
 *   2. the encoder accepts every decoded event (the decoder takes nothing the format cannot
 *      carry), and decoding the re-encoded batch gives the same batch, field by field;
 *   3. encoding that second decode gives the same bytes again (our encoding is a fixed
 *      point: one canonical form per batch).
 * Rejections must be -EBADMSG with a reason and an offset inside the message, or -ENOSPC.
 */
#include "common/wire.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

/* Small on purpose: batches bigger than this exercise the -ENOSPC paths. The second decode
 * needs no more text than the first: it has only the names the kept events use, once each. */
#define EVENTS 64
#define POOL 1024
#define TEXT 8192

static struct xpu_cevent first[EVENTS], second[EVENTS];
static __u64 first_stack[POOL], second_stack[POOL];
static const char *first_frames[POOL], *second_frames[POOL];
/* aligned alike, so that the text's index takes the same room in both */
static _Alignas(8) char first_text[TEXT], second_text[TEXT];
static const struct xpu_wire_pool first_pool = { first_stack, POOL, first_frames, first_text,
						 TEXT };
static const struct xpu_wire_pool second_pool = { second_stack, POOL, second_frames, second_text,
						  TEXT };

static void require(bool cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "wire_fuzz: property violated: %s\n", what);
		abort();
	}
}

static bool inside(const void *p, size_t n, const void *base, size_t len)
{
	const char *c = p, *b = base;

	return c >= b && n <= len && (size_t)(c - b) <= len - n;
}

static bool same_double(double a, double b)
{
	return a == b || !memcmp(&a, &b, sizeof(a)); /* -0.0 reads back as 0; NaN bit for bit */
}

/* A frame's name, NULL for none: no frames at all and all frames nameless say the same. */
static const char *frame_name(const struct xpu_cevent *ev, __u32 i)
{
	return ev->frames ? ev->frames[i] : NULL;
}

static bool same_event(const struct xpu_cevent *a, const struct xpu_cevent *b)
{
	__u32 frames = (__u32)a->n_kernel + a->n_user, i;

	if (a->id != b->id || a->kind != b->kind || a->flags != b->flags || a->pid != b->pid ||
	    a->tid != b->tid || a->cpu != b->cpu || a->ts_ns != b->ts_ns ||
	    a->end_ns != b->end_ns || a->correlation_id != b->correlation_id ||
	    a->parent_id != b->parent_id || a->root_id != b->root_id ||
	    a->corr_type != b->corr_type || a->confidence != b->confidence ||
	    a->n_links != b->n_links || a->device != b->device || a->context != b->context ||
	    a->stream != b->stream || a->graph_id != b->graph_id ||
	    a->graph_node_id != b->graph_node_id || a->registers != b->registers ||
	    a->shared_mem != b->shared_mem || a->api_id != b->api_id ||
	    a->sub_kind != b->sub_kind || a->bytes != b->bytes || a->address != b->address ||
	    a->value != b->value || a->delta != b->delta || !same_double(a->scale, b->scale) ||
	    a->name_len != b->name_len || a->n_kernel != b->n_kernel || a->n_user != b->n_user ||
	    a->n_counters != b->n_counters || a->counter_flags != b->counter_flags ||
	    !same_double(a->ipc, b->ipc))
		return false;
	for (i = 0; i < a->n_counters; i++) {
		if (a->counters[i].name_len != b->counters[i].name_len ||
		    memcmp(a->counters[i].name, b->counters[i].name, a->counters[i].name_len) ||
		    !same_double(a->counters[i].delta, b->counters[i].delta))
			return false;
	}
	for (i = 0; i < 3; i++) {
		if (a->grid[i] != b->grid[i] || a->block[i] != b->block[i])
			return false;
	}
	for (i = 0; i < a->n_links; i++) {
		if (a->links[i].type != b->links[i].type ||
		    a->links[i].target != b->links[i].target)
			return false;
	}
	if (a->name_len && memcmp(a->name, b->name, a->name_len))
		return false;
	for (i = 0; i < frames; i++) {
		const char *na = frame_name(a, i), *nb = frame_name(b, i);

		if (!na != !nb || (na && strcmp(na, nb)))
			return false;
	}
	return !frames || !memcmp(a->stack, b->stack, 8u * frames);
}

static void check_decoded(const struct xpu_wire_batch *batch, const struct xpu_cevent *ev,
			  const void *msg, size_t len, const struct xpu_wire_pool *pool)
{
	__u32 i, j, used = 0;

	require(batch->version == XPU_WIRE_VERSION, "version is 1");
	require(batch->n_events <= EVENTS, "n_events within the caller's array");
	for (i = 0; i < batch->n_events; i++) {
		__u32 frames = (__u32)ev[i].n_kernel + ev[i].n_user;

		require(ev[i].kind >= XPU_REC_CPU_SAMPLE && ev[i].kind < XPU_REC_TYPE_MAX,
			"kind is a known event kind");
		require(ev[i].n_links <= XPU_WIRE_LINKS_MAX, "links within the limit");
		require(frames <= XPU_WIRE_STACK_MAX, "stack within the limit");
		require(ev[i].name_len <= XPU_STRING_MAX, "name within the limit");
		require(!ev[i].name_len || inside(ev[i].name, ev[i].name_len, msg, len),
			"name inside the message");
		require(!frames ||
				inside(ev[i].stack, 8u * frames, pool->stack, sizeof(__u64) * POOL),
			"stack inside the pool");
		require(!ev[i].frames ||
				(frames && ev[i].frames - (const char *const *)pool->frames ==
						   ev[i].stack - pool->stack),
			"frames beside their stack in the pool");
		for (j = 0; ev[i].frames && j < frames; j++) {
			const char *n = ev[i].frames[j];
			size_t room;

			if (!n)
				continue;
			require(inside(n, 1, pool->text, TEXT), "frame name inside the text pool");
			room = TEXT - (size_t)(n - pool->text);
			require(n[0] && memchr(n, 0, room), "frame name non-empty, NUL-terminated");
			require(strlen(n) <= XPU_WIRE_FRAME_NAME_MAX,
				"frame name within the limit");
		}
		require(ev[i].confidence >= 0.0f && ev[i].confidence <= 1.0f, "conf within 0..1");
		require(ev[i].n_counters <= XPU_WIRE_COUNTERS_MAX, "counters within the limit");
		for (j = 0; j < ev[i].n_counters; j++) {
			const struct xpu_wire_counter *c = &ev[i].counters[j];

			require(c->name_len && c->name_len <= XPU_WIRE_COUNTER_NAME_MAX &&
					inside(c->name, c->name_len, msg, len),
				"counter name within the limit, inside the message");
			require(c->delta >= 0 && c->delta <= 1.7976931348623157e308,
				"counter delta finite and not negative");
		}
		require(ev[i].ipc >= 0 && ev[i].ipc <= 1.7976931348623157e308,
			"ipc finite and not negative");
		used += frames;
	}
	require(used <= POOL, "frames within the pool");
}

/* Encode n events as (producer, seq); returns a malloc'd copy of the message. */
static void *encode(const struct xpu_wire_batch *batch, const struct xpu_cevent *ev, size_t *len)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(batch->producer);
	const void *data;
	void *copy;
	__u32 i;

	require(enc != NULL, "encoder allocated");
	require(xpu_wire_enc__begin(enc, batch->seq) == 0, "begin");
	for (i = 0; i < batch->n_events; i++)
		require(xpu_wire_enc__add(enc, &ev[i]) == 0, "encoder accepts every decoded event");
	require(xpu_wire_enc__count(enc) == batch->n_events, "count");
	require(xpu_wire_enc__finish(enc, &data, len) == 0, "finish");
	require(*len == xpu_wire_enc__size(enc), "size is the message length");
	copy = malloc(*len);
	require(copy != NULL, "copy allocated");
	memcpy(copy, data, *len);
	xpu_wire_enc__free(enc);
	return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xpu_wire_batch b1, b2;
	struct xpu_wire_error err;
	size_t len2, len3;
	void *msg2, *msg3;
	__u32 i;
	int ret;

	ret = xpu_wire_decode(data, size, NULL, &b1, first, EVENTS, &first_pool, &err);
	require(ret == 0 || ret == -EBADMSG || ret == -ENOSPC, "returns 0, -EBADMSG or -ENOSPC");
	if (ret) {
		require(err.reason != NULL, "a rejection has a reason");
		require(err.offset <= size, "the error offset is inside the message");
		return 0;
	}
	check_decoded(&b1, first, data, size, &first_pool);

	msg2 = encode(&b1, first, &len2);
	ret = xpu_wire_decode(msg2, len2, NULL, &b2, second, EVENTS, &second_pool, &err);
	if (ret)
		fprintf(stderr, "wire_fuzz: re-decode: %d %s at %zu\n", ret, err.reason,
			err.offset);
	require(ret == 0, "the re-encoded batch decodes");
	check_decoded(&b2, second, msg2, len2, &second_pool);
	require(b1.producer == b2.producer && b1.seq == b2.seq && b1.n_events == b2.n_events,
		"round trip keeps the batch header");
	for (i = 0; i < b1.n_events; i++)
		require(same_event(&first[i], &second[i]), "round trip keeps every event");

	msg3 = encode(&b2, second, &len3);
	require(len3 == len2 && !memcmp(msg2, msg3, len2), "the encoding is a fixed point");
	free(msg3);
	free(msg2);
	return 0;
}
