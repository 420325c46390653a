// SPDX-License-Identifier: MIT
#include "actors/sink/launch_map.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/big_alloc.h"
#include "common/oatab.h"

int launch_map__init(struct launch_map *m, __u32 max)
{
	__u32 slots = 16;

	memset(m, 0, sizeof(*m));
	while (slots < 4 * max)
		slots <<= 1;
	m->mask = slots - 1;
	m->max = max;
	m->slots = xpu_big_alloc(slots * sizeof(*m->slots));
	m->e = xpu_big_alloc(max * sizeof(*m->e));
	if (!m->slots || !m->e)
		return -ENOMEM;
	return 0;
}

void launch_map__free(struct launch_map *m)
{
	xpu_big_free(m->slots, ((size_t)m->mask + 1) * sizeof(*m->slots));
	xpu_big_free(m->e, (size_t)m->max * sizeof(*m->e));
	m->slots = NULL;
	m->e = NULL;
}

/* In a full map each put evicts the oldest entry: its entry and then its slot are far from
 * anything recent, two cache misses. Both are loaded ahead: the entry VICTIM_AHEAD puts before
 * its eviction, its slot's probe start (known once the entry is in) half as many before. */
#define VICTIM_AHEAD 16

static void prefetch_victims(const struct launch_map *m)
{
	__u32 far = m->head + VICTIM_AHEAD, near = m->head + VICTIM_AHEAD / 2;

	if (m->max < 2 * VICTIM_AHEAD)
		return;
	far -= far >= m->max ? m->max : 0; /* head < max: no division on this path */
	near -= near >= m->max ? m->max : 0;
	launch_map__prefetch_line(&m->e[far]);
	launch_map__prefetch_line(&m->slots[m->e[near].hash & m->mask]);
}

/* The slot of (producer, id) whose hash is h, or the empty slot that ends its probe. */
static __u32 slot_of(const struct launch_map *m, __u32 producer, __u64 id, __u32 h)
{
	__u32 i = h & m->mask;
	const struct recent_launch *l;

	for (; m->slots[i].idx1; i = (i + 1) & m->mask) {
		if (m->slots[i].hash != h)
			continue;
		l = &m->e[m->slots[i].idx1 - 1];
		if (l->id == id && l->producer == producer)
			return i;
	}
	return i;
}

/* The slot that holds entry idx, whose key's hash is h: a probe that reads slots alone. Every
 * entry in the ring has its slot, so the probe ends there. */
static __u32 slot_of_entry(const struct launch_map *m, __u32 idx, __u32 h)
{
	__u32 i = h & m->mask;

	while (m->slots[i].idx1 != idx + 1)
		i = (i + 1) & m->mask;
	return i;
}

const struct recent_launch *launch_map__find(const struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 s = m->slots[slot_of(m, producer, id, launch_map__hash(producer, id))].idx1;

	return s ? &m->e[s - 1] : NULL;
}

static bool slot_empty(const void *tab, uint32_t slot)
{
	return !((const struct launch_map *)tab)->slots[slot].idx1;
}

static uint32_t slot_home(const void *tab, uint32_t slot)
{
	return ((const struct launch_map *)tab)->slots[slot].hash;
}

/* Slots only: an entry does not know its slot. Telling it, an entry anywhere in the ring, was
 * a cache miss for every slot moved, most of a put's time in a pipeline (docs/performance.md). */
static void slot_move(void *tab, uint32_t to, uint32_t from)
{
	struct launch_map *m = tab;

	m->slots[to] = m->slots[from];
	m->slots[from].idx1 = 0;
}

static void slot_clear(void *tab, uint32_t slot)
{
	((struct launch_map *)tab)->slots[slot].idx1 = 0;
}

static const struct oatab_ops slot_ops = { .empty = slot_empty,
					   .home = slot_home,
					   .move = slot_move,
					   .clear = slot_clear };

struct recent_launch *launch_map__put(struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 h = launch_map__hash(producer, id), i = slot_of(m, producer, id, h), k;
	struct recent_launch *old;

	if (m->slots[i].idx1)
		return &m->e[m->slots[i].idx1 - 1];
	/* head and n are below max: a subtraction, not a division (a divide was 4 % of a put) */
	k = m->head + m->n;
	k -= k >= m->max ? m->max : 0; /* the entry after the newest */
	if (m->n == m->max) { /* it is the oldest: it goes, and the probe is made again */
		old = &m->e[m->head];
		oatab__delete(m, m->mask, slot_of_entry(m, m->head, old->hash), &slot_ops);
		m->head = m->head + 1 == m->max ? 0 : m->head + 1;
		m->n--;
		m->evicted++;
		prefetch_victims(m);
		i = slot_of(m, producer, id, h);
	}
	m->n++;
	m->e[k] = (struct recent_launch){ .id = id, .producer = producer, .hash = h };
	m->slots[i] = (struct launch_slot){ .idx1 = k + 1, .hash = h };
	return &m->e[k];
}
