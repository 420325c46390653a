// SPDX-License-Identifier: MIT
/*
 * Per-(pid, device, stream) state (docs/correlator.md, Streams): the last STREAM_K activities
 * of each stream by start time, for same_stream_prev links and overlap checks. Tables, all
 * allocated in streams__init:
 *
 *   members[]   per stream, a free list through `next` (slots below hw have been used)
 *   idx         open-addressed (linear probing, deletion through common/oatab.h) on
 *               (pid, device, stream) -> member index
 *   idle_q      one item per stream, due idle_ns after it was (re)queued: a stream touched
 *               meanwhile is requeued, so one goes between one and two idle periods after
 *               its last activity, at a cost of what is due
 *   pids        pid set: processes that may have streams, so an exit scans only for them
 *
 * A stream goes idle_ns after its last activity, or once its process's exit grace has
 * passed (streams__drop_pid).
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_K 4

struct stream {
	__u32 pid, device, stream, gen; /* pid 0: free; gen tells a reused slot from the old */
	__u64 touched_ns; /* shard time of its last activity */
	__u32 n; /* activities held, sorted by start */
	__u32 next; /* free list */
	__u64 start[STREAM_K], end[STREAM_K], id[STREAM_K];
};

static __u32 stream_hash(__u32 pid, __u32 device, __u32 stream)
{
	return (__u32)xpu_mix64(((__u64)pid << 32 | stream) ^
				(__u64)device * 0x9e3779b97f4a7c15ull);
}

static uint32_t stream_slot_home(const void *tab, uint32_t slot)
{
	const struct streams *s = container_of(tab, const struct streams, idx);
	const struct stream *st = &s->members[idx_slots__at(&s->idx, slot)];

	return stream_hash(st->pid, st->device, st->stream);
}

static const struct oatab_ops stream_ops = {
	.empty = idx_slots__empty,
	.home = stream_slot_home,
	.move = idx_slots__move,
	.clear = idx_slots__clear,
};

static __u32 stream_find(const struct streams *s, __u32 pid, __u32 device, __u32 stream,
			 __u32 *slot)
{
	__u32 i = stream_hash(pid, device, stream) & s->idx.mask, e;

	for (;; i = (i + 1) & s->idx.mask) {
		e = idx_slots__at(&s->idx, i);
		if (e == NIL || (s->members[e].pid == pid && s->members[e].stream == stream &&
				 s->members[e].device == device)) {
			*slot = i;
			return e;
		}
	}
}

/* A stream slot is in use when its pid is set; gen tells a reused slot from the old one. */
static bool stream_live(const void *owner, const struct qitem *it)
{
	const struct streams *s = owner;

	return s->members[it->entry].pid && s->members[it->entry].gen == it->gen;
}

/* Member e goes back to the free list (its index slot is the caller's to delete). */
static void stream_forget(struct streams *s, __u32 e)
{
	struct stream *st = &s->members[e];

	st->pid = 0;
	st->gen++;
	st->next = s->free;
	s->free = e;
	s->env->st.streams--;
	s->env->st.streams_dropped++;
}

static struct stream *stream_get(struct streams *s, __u32 pid, __u32 device, __u32 stream)
{
	__u32 slot, e = stream_find(s, pid, device, stream, &slot);
	struct stream *st;

	if (e != NIL)
		return &s->members[e];
	e = s->free;
	if (e != NIL)
		s->free = s->members[e].next;
	else if (s->hw < s->max)
		e = s->hw++;
	else
		return NULL;
	st = &s->members[e];
	*st = (struct stream){ .pid = pid, .device = device, .stream = stream, .gen = st->gen };
	s->idx.slot[slot] = e + 1;
	pidset__add(s->pids, pid);
	s->env->st.streams++;
	fifo_push(&s->idle_q, s->env->now_ns + s->idle_ns, e, st->gen);
	return st;
}

/*
 * Link a kernel, copy or memset to the activity before it on its stream. Activities run in
 * order on a stream but CUPTI delivers them in buffers, not in order: the window of the
 * last STREAM_K by start time absorbs that. One that arrives after a later one on its
 * stream (whose link has gone out already skipping it), or older than the whole window, is
 * counted in stream_unordered; one that starts before the previous one ended (or ends after
 * the next one started) in stream_overlaps, which a stream never does.
 */
void streams__link(struct streams *s, struct xpu_cevent *ev)
{
	struct join_stats *js = &s->env->st;
	struct stream *st;
	__u32 i;

	if (ev->kind == XPU_REC_GPU_SYNC)
		return;
	st = stream_get(s, ev->pid, ev->device, ev->stream);
	if (!st) {
		js->streams_full++;
		return;
	}
	st->touched_ns = s->env->now_ns;
	for (i = 0; i < st->n && st->start[i] <= ev->ts_ns; i++)
		;
	if (i < st->n)
		js->stream_unordered++;
	if (!i && st->n == STREAM_K)
		return; /* older than everything we hold */
	if (i) {
		add_link(ev, XPU_LINK_SAME_STREAM_PREV, st->id[i - 1]);
		if (ev->ts_ns < st->end[i - 1])
			js->stream_overlaps++;
	}
	if (i < st->n && ev->end_ns > st->start[i])
		js->stream_overlaps++;
	if (st->n == STREAM_K) { /* full: the oldest goes */
		memmove(st->start, st->start + 1, --i * sizeof(st->start[0]));
		memmove(st->end, st->end + 1, i * sizeof(st->end[0]));
		memmove(st->id, st->id + 1, i * sizeof(st->id[0]));
	} else {
		memmove(st->start + i + 1, st->start + i, (st->n - i) * sizeof(st->start[0]));
		memmove(st->end + i + 1, st->end + i, (st->n - i) * sizeof(st->end[0]));
		memmove(st->id + i + 1, st->id + i, (st->n - i) * sizeof(st->id[0]));
		st->n++;
	}
	st->start[i] = ev->ts_ns;
	st->end[i] = ev->end_ns;
	st->id[i] = ev->id;
}

static bool stream_of_pid(void *tab, uint32_t slot, void *ctx)
{
	struct streams *s = container_of(tab, struct streams, idx);
	__u32 e = idx_slots__at(&s->idx, slot);

	if (s->members[e].pid != *(const __u32 *)ctx)
		return false;
	stream_forget(s, e);
	return true;
}

/* Drop every stream of pid: a scan of the table, only for a process that may have any. */
void streams__drop_pid(void *streams, __u32 pid)
{
	struct streams *s = streams;

	if (!pidset__may_have(s->pids, pid) || !s->env->st.streams)
		return;
	oatab__delete_if(&s->idx, s->idx.mask, &stream_ops, stream_of_pid, &pid);
}

void streams__expire(struct streams *s, __u64 now_ns)
{
	struct qitem *it;

	while ((it = fifo_peek(&s->idle_q)) && it->deadline <= now_ns) {
		struct qitem item = *it;
		struct stream *st = &s->members[item.entry];
		__u32 slot;

		fifo_pop(&s->idle_q);
		if (!stream_live(s, &item))
			continue;
		if (now_ns != ~0ull && st->touched_ns + s->idle_ns > now_ns) {
			/* active since it was queued: due again one idle period from now */
			fifo_push(&s->idle_q, now_ns + s->idle_ns, item.entry, item.gen);
			continue;
		}
		stream_find(s, st->pid, st->device, st->stream, &slot);
		stream_forget(s, item.entry);
		oatab__delete(&s->idx, s->idx.mask, slot, &stream_ops);
	}
}

int streams__init(struct streams *s, struct join_env *env, __u32 max, __u64 idle_ns)
{
	s->env = env;
	s->max = max;
	s->idle_ns = idle_ns;
	/* the free list starts empty and members are first taken in order (hw): nothing is
	 * touched up front */
	s->free = NIL;
	s->idx.mask = pow2_at_least(2ull * max) - 1;
	s->members = calloc(max, sizeof(*s->members));
	s->idx.slot = calloc((size_t)s->idx.mask + 1, sizeof(*s->idx.slot));
	s->idle_q = (struct fifo){ .items = calloc(2ull * max, sizeof(struct qitem)),
				   .cap = 2 * max,
				   .live = stream_live,
				   .owner = s };
	s->pids = calloc(PIDSET_WORDS, sizeof(*s->pids));
	if (!s->members || !s->idx.slot || !s->idle_q.items || !s->pids)
		return -ENOMEM;
	return 0;
}

void streams__fini(struct streams *s)
{
	free(s->members);
	free(s->idx.slot);
	free(s->idle_q.items);
	free(s->pids);
}
