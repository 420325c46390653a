// SPDX-License-Identifier: MIT
#include "actors/sink/launch_map.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix.h"
#include "common/oatab.h"

static __u32 launch_home(__u32 producer, __u64 id)
{
	return (__u32)xpu_mix64(id ^ ((__u64)producer << 48));
}

int launch_map__init(struct launch_map *m, __u32 max)
{
	__u32 slots = 16;

	memset(m, 0, sizeof(*m));
	while (slots < 2 * max)
		slots <<= 1;
	m->slots = calloc(slots, sizeof(*m->slots));
	m->e = calloc(max, sizeof(*m->e));
	if (!m->slots || !m->e)
		return -ENOMEM;
	m->mask = slots - 1;
	m->max = max;
	return 0;
}

void launch_map__free(struct launch_map *m)
{
	free(m->slots);
	free(m->e);
	m->slots = NULL;
	m->e = NULL;
}

/* The slot of (producer, id), or the empty slot that ends its probe. */
static __u32 slot_of(const struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 i = launch_home(producer, id) & m->mask;
	const struct recent_launch *l;

	for (; m->slots[i]; i = (i + 1) & m->mask) {
		l = &m->e[m->slots[i] - 1];
		if (l->id == id && l->producer == producer)
			return i;
	}
	return i;
}

const struct recent_launch *launch_map__find(const struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 s = m->slots[slot_of(m, producer, id)];

	return s ? &m->e[s - 1] : NULL;
}

static bool slot_empty(const void *tab, uint32_t slot)
{
	return !((const struct launch_map *)tab)->slots[slot];
}

static uint32_t slot_home(const void *tab, uint32_t slot)
{
	const struct launch_map *m = tab;
	const struct recent_launch *l = &m->e[m->slots[slot] - 1];

	return launch_home(l->producer, l->id);
}

static void slot_move(void *tab, uint32_t to, uint32_t from)
{
	struct launch_map *m = tab;

	m->slots[to] = m->slots[from];
	m->slots[from] = 0;
}

static void slot_clear(void *tab, uint32_t slot)
{
	((struct launch_map *)tab)->slots[slot] = 0;
}

static const struct oatab_ops slot_ops = { .empty = slot_empty,
					   .home = slot_home,
					   .move = slot_move,
					   .clear = slot_clear };

struct recent_launch *launch_map__put(struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 i = slot_of(m, producer, id), k;
	struct recent_launch *old;

	if (m->slots[i])
		return &m->e[m->slots[i] - 1];
	k = (m->head + m->n) % m->max; /* the entry after the newest */
	if (m->n == m->max) { /* it is the oldest: it goes, and the probe is made again */
		old = &m->e[m->head];
		oatab__delete(m, m->mask, slot_of(m, old->producer, old->id), &slot_ops);
		m->head = (m->head + 1) % m->max;
		m->n--;
		m->evicted++;
		i = slot_of(m, producer, id);
	}
	m->n++;
	m->e[k] = (struct recent_launch){ .id = id, .producer = producer };
	m->slots[i] = k + 1;
	return &m->e[k];
}
