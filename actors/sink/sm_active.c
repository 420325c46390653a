// SPDX-License-Identifier: MIT
/*
 * SM-active windows; see sm_active.h. Entities get a dense index at first sight (a small
 * hash table maps the key to it), so an open window holds one merged interval list per
 * entity index, and closing it walks those lists in one pass.
 */
#include "actors/sink/sm_active.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix.h"

#define HASH_SLOTS (2 * SM_ENTITIES_MAX) /* a power of two; at most half full */

struct open_window {
	__u64 start;
	struct busy *by_entity; /* indexed by entity index; n_by of them */
	__u32 n_by;
};

struct sm_active {
	__u64 window_ns, lateness_ns;
	__u64 watermark; /* the latest kernel end seen */
	__u64 hint; /* the start of the last window a kernel ended in */
	__u64 closed_until; /* every window that starts before this is closed */
	struct open_window open[SM_OPEN_MAX]; /* sorted by start */
	__u32 n_open;
	struct sm_total *tot; /* by entity index: the order entities were first seen */
	__u32 *order; /* entity indexes sorted by key */
	__u32 *slots; /* key hash -> entity index + 1; 0 is empty */
	__u32 n_tot;
	struct sm_window kept[SM_WINDOWS_KEPT]; /* ring: oldest at kept_head */
	__u32 kept_head, n_kept;
	__u64 windows_closed, forced, late, late_ns, untracked, skipped, nomem, filled_ns;
};

/* ---- merged intervals ---------------------------------------------------------------- */

/* Fold the earliest half of the intervals into settled_ns: memory stays bounded, and while
 * kernels come in time order nothing is lost (the folded ones end before anything new). */
static void fold(struct busy *b)
{
	__u32 h = b->n / 2, k;

	for (k = 0; k < h; k++)
		b->settled_ns += b->iv[k][1] - b->iv[k][0];
	b->floor = b->iv[h - 1][1];
	memmove(b->iv, b->iv + h, (b->n - h) * sizeof(*b->iv));
	b->n -= h;
}

int busy__add(struct busy *b, __u64 start, __u64 end)
{
	__u32 lo = 0, hi = b->n, mid;

	if (end <= start)
		return 0;
	if (!b->n && !b->floor)
		b->first = start;
	if (start < b->floor) {
		/* a piece before what was folded: counted, said in filled, but never more than
		 * the folded span holds (a long kernel over many folded short ones would count
		 * their time twice, and a window could pass 100 %) */
		__u64 piece = (end < b->floor ? end : b->floor) - start, room;

		if (start < b->first)
			b->first = start;
		room = b->floor - b->first - b->settled_ns;
		piece = piece < room ? piece : room;
		b->settled_ns += piece;
		b->filled_ns += piece;
		start = b->floor;
		if (end <= start)
			return 0;
	}
	if (start < b->first)
		b->first = start;
	/* the first interval that ends at or after start: it touches or follows [start, end).
	 * Kernels come nearly in time order, so most start within or after the last interval:
	 * that is the answer then, without the search (a third of what an add cost). */
	if (hi && start >= b->iv[hi - 1][0])
		lo = b->iv[hi - 1][1] < start ? hi : hi - 1;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (b->iv[mid][1] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (hi = lo; hi < b->n && b->iv[hi][0] <= end; hi++)
		;
	if (hi > lo) {
		if (b->iv[lo][0] < start)
			start = b->iv[lo][0];
		if (b->iv[hi - 1][1] > end)
			end = b->iv[hi - 1][1];
		b->iv[lo][0] = start;
		b->iv[lo][1] = end;
		memmove(b->iv + lo + 1, b->iv + hi, (b->n - hi) * sizeof(*b->iv));
		b->n -= hi - lo - 1;
		return 0;
	}
	if (b->n == b->cap) {
		__u32 cap = b->cap ? b->cap * 2 : 8;
		__u64(*iv)[2];

		if (cap > SM_INTERVALS_MAX + 1)
			cap = SM_INTERVALS_MAX + 1;
		iv = realloc(b->iv, cap * sizeof(*iv));
		if (!iv)
			return -ENOMEM;
		b->iv = iv;
		b->cap = cap;
	}
	memmove(b->iv + lo + 1, b->iv + lo, (b->n - lo) * sizeof(*b->iv));
	b->iv[lo][0] = start;
	b->iv[lo][1] = end;
	b->n++;
	if (b->n > SM_INTERVALS_MAX)
		fold(b);
	return 0;
}

__u64 busy__ns(const struct busy *b)
{
	__u64 ns = b->settled_ns;
	__u32 k;

	for (k = 0; k < b->n; k++)
		ns += b->iv[k][1] - b->iv[k][0];
	return ns;
}

void busy__free(struct busy *b)
{
	free(b->iv);
	memset(b, 0, sizeof(*b));
}

/* ---- entities ------------------------------------------------------------------------ */

/* The entity index of key, made on first sight; -ENOSPC when the table is full. */
static long entity(struct sm_active *a, __u64 key)
{
	__u32 i = (__u32)xpu_mix64(key) & (HASH_SLOTS - 1), idx, k;

	for (;; i = (i + 1) & (HASH_SLOTS - 1)) {
		if (!a->slots[i])
			break;
		if (a->tot[a->slots[i] - 1].key == key)
			return a->slots[i] - 1;
	}
	if (a->n_tot == SM_ENTITIES_MAX)
		return -ENOSPC;
	idx = a->n_tot++;
	a->slots[i] = idx + 1;
	a->tot[idx] = (struct sm_total){ .key = key };
	/* insertion into the sorted order: entities are few and come once */
	for (k = idx; k > 0 && a->tot[a->order[k - 1]].key > key; k--)
		a->order[k] = a->order[k - 1];
	a->order[k] = idx;
	return idx;
}

/* ---- windows ------------------------------------------------------------------------- */

static int entry_cmp(const void *x, const void *y)
{
	const struct sm_entity_busy *p = x, *q = y;

	return p->key < q->key ? -1 : p->key > q->key;
}

/* Close the open window at index i: its entities' busy times go to their totals and to a
 * kept window (the oldest kept one goes when the ring is full). */
static void close_window(struct sm_active *a, __u32 i)
{
	struct open_window *ow = &a->open[i];
	struct sm_window *w;
	__u32 k, n = 0;

	if (a->n_kept == SM_WINDOWS_KEPT) {
		free(a->kept[a->kept_head].e);
		a->kept_head = (a->kept_head + 1) % SM_WINDOWS_KEPT;
		a->n_kept--;
	}
	w = &a->kept[(a->kept_head + a->n_kept++) % SM_WINDOWS_KEPT];
	*w = (struct sm_window){ .ordinal = a->windows_closed++, .start_ns = ow->start };
	for (k = 0; k < ow->n_by; k++)
		n += ow->by_entity[k].n > 0;
	/* without memory the window keeps no entries; the totals below are still right */
	w->e = n ? calloc(n, sizeof(*w->e)) : NULL;
	if (n && !w->e)
		a->nomem++;
	for (k = 0; k < ow->n_by; k++) {
		struct busy *b = &ow->by_entity[k];
		struct sm_total *t = &a->tot[k];
		__u64 ns;

		if (!b->n)
			continue;
		ns = busy__ns(b);
		t->busy_ns += ns;
		t->filled_ns += b->filled_ns;
		a->filled_ns += b->filled_ns;
		t->windows++;
		if (ns > t->peak_busy_ns) {
			t->peak_busy_ns = ns;
			t->peak_start_ns = ow->start;
		}
		if (w->e)
			w->e[w->n++] = (struct sm_entity_busy){ t->key, ns, b->filled_ns };
		busy__free(b);
	}
	if (w->e)
		qsort(w->e, w->n, sizeof(*w->e), entry_cmp);
	free(ow->by_entity);
	if (ow->start + a->window_ns > a->closed_until)
		a->closed_until = ow->start + a->window_ns;
	memmove(ow, ow + 1, (--a->n_open - i) * sizeof(*ow));
}

/* The open window starting at start, made if needed; NULL when it is already closed. */
static struct open_window *open_window(struct sm_active *a, __u64 start)
{
	__u32 i;

	/* the first that does not start before start, from the latest back: a kernel is
	 * nearly always in one of the last windows, and lateness keeps many open before them
	 * (20 with the defaults) */
	for (i = a->n_open; i && a->open[i - 1].start >= start; i--)
		;
	if (i < a->n_open && a->open[i].start == start)
		return &a->open[i];
	if (a->n_open == SM_OPEN_MAX) {
		a->forced++;
		close_window(a, 0);
		if (i)
			i--;
	}
	if (start < a->closed_until)
		return NULL;
	memmove(&a->open[i + 1], &a->open[i], (a->n_open - i) * sizeof(a->open[0]));
	a->open[i] = (struct open_window){ .start = start };
	a->n_open++;
	return &a->open[i];
}

static struct busy *busy_of(struct sm_active *a, struct open_window *ow, __u32 idx)
{
	if (idx >= ow->n_by) {
		__u32 n = a->n_tot; /* room for every entity known so far */
		struct busy *by = realloc(ow->by_entity, n * sizeof(*by));

		if (!by)
			return NULL;
		memset(by + ow->n_by, 0, (n - ow->n_by) * sizeof(*by));
		ow->by_entity = by;
		ow->n_by = n;
	}
	return &ow->by_entity[idx];
}

int sm_active__add(struct sm_active *a, __u64 key, __u64 start, __u64 end)
{
	__u64 w, first, last, s, e, k, n;
	struct open_window *ow;
	struct sm_total *t;
	struct busy *b;
	bool late = false;
	long idx;
	int err = 0;

	if (end <= start)
		goto skip;
	if (start >= a->hint && end - a->hint <= a->window_ns) {
		/* the usual: within the window of the kernel before, and no division (the three
		 * below, for each of a kernel's two entities, cost more than the rest of this
		 * function) */
		first = last = a->hint;
		n = 1;
	} else {
		first = start / a->window_ns;
		last = (end - 1) / a->window_ns;
		if (last - first >= SM_SPAN_WINDOWS_MAX)
			goto skip;
		n = last - first + 1;
		first *= a->window_ns;
		last *= a->window_ns;
		a->hint = last;
	}
	idx = entity(a, key);
	if (idx < 0) {
		a->untracked++;
		return (int)idx;
	}
	t = &a->tot[idx];
	/* counted, not "w <= last": w + window_ns wraps past the last window below 2^64 */
	for (k = 0, w = first; k < n; k++, w += a->window_ns) {
		s = start > w ? start : w;
		e = end - w < a->window_ns ? end : w + a->window_ns;
		ow = w < a->closed_until ? NULL : open_window(a, w);
		if (!ow) {
			late = true;
			t->late_ns += e - s;
			a->late_ns += e - s;
			continue;
		}
		b = busy_of(a, ow, (__u32)idx);
		if (!b || busy__add(b, s, e)) {
			a->nomem++;
			err = -ENOMEM;
		}
	}
	t->late += late;
	a->late += late;
	if (end > a->watermark)
		a->watermark = end;
	return err;
skip:
	a->skipped++;
	return -EINVAL;
}

void sm_active__close(struct sm_active *a, bool all)
{
	__u64 limit;

	if (all) {
		while (a->n_open)
			close_window(a, 0);
		return;
	}
	if (a->watermark < a->lateness_ns)
		return;
	limit = a->watermark - a->lateness_ns;
	while (a->n_open && a->open[0].start + a->window_ns <= limit)
		close_window(a, 0);
	/* windows that never opened are closed too: a kernel for one of them is late, as it
	 * would be had its window held other kernels */
	/* closed_until is a window's start: only a limit a window past it moves it (the test
	 * spares a division a kernel) */
	if (limit >= a->closed_until + a->window_ns)
		a->closed_until = limit / a->window_ns * a->window_ns;
}

/* ---- life and results ---------------------------------------------------------------- */

struct sm_active *sm_active__new(__u64 window_ns, __u64 lateness_ns)
{
	struct sm_active *a;

	if (!window_ns) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->window_ns = window_ns;
	a->lateness_ns = lateness_ns;
	a->tot = calloc(SM_ENTITIES_MAX, sizeof(*a->tot));
	a->order = calloc(SM_ENTITIES_MAX, sizeof(*a->order));
	a->slots = calloc(HASH_SLOTS, sizeof(*a->slots));
	if (!a->tot || !a->order || !a->slots) {
		sm_active__free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void sm_active__free(struct sm_active *a)
{
	__u32 i, k;

	if (!a)
		return;
	for (i = 0; i < a->n_open; i++) {
		for (k = 0; k < a->open[i].n_by; k++)
			busy__free(&a->open[i].by_entity[k]);
		free(a->open[i].by_entity);
	}
	for (i = 0; i < a->n_kept; i++)
		free(a->kept[(a->kept_head + i) % SM_WINDOWS_KEPT].e);
	free(a->tot);
	free(a->order);
	free(a->slots);
	free(a);
}

__u32 sm_active__n_totals(const struct sm_active *a)
{
	return a->n_tot;
}

const struct sm_total *sm_active__total(const struct sm_active *a, __u32 i)
{
	return &a->tot[a->order[i]];
}

__u64 sm_active__open_busy_ns(const struct sm_active *a, __u32 i)
{
	__u32 idx = a->order[i], k;
	__u64 ns = 0;

	for (k = 0; k < a->n_open; k++)
		if (idx < a->open[k].n_by)
			ns += busy__ns(&a->open[k].by_entity[idx]);
	return ns;
}

__u32 sm_active__windows_kept(const struct sm_active *a)
{
	return a->n_kept;
}

const struct sm_window *sm_active__window(const struct sm_active *a, __u32 i)
{
	return &a->kept[(a->kept_head + i) % SM_WINDOWS_KEPT];
}

void sm_active__counts(const struct sm_active *a, struct sm_counts *c)
{
	*c = (struct sm_counts){
		.windows_closed = a->windows_closed,
		.open = a->n_open,
		.forced = a->forced,
		.late = a->late,
		.late_ns = a->late_ns,
		.untracked = a->untracked,
		.skipped = a->skipped,
		.nomem = a->nomem,
		.filled_ns = a->filled_ns,
		.watermark_ns = a->watermark,
		.closed_until = a->closed_until,
	};
}
