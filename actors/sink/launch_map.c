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
	m->fifo = calloc(max, sizeof(*m->fifo));
	if (!m->slots || !m->fifo)
		return -ENOMEM;
	m->mask = slots - 1;
	m->max = max;
	return 0;
}

void launch_map__free(struct launch_map *m)
{
	free(m->slots);
	free(m->fifo);
	m->slots = NULL;
	m->fifo = NULL;
}

static __u32 slot_of(const struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 i = launch_home(producer, id) & m->mask;

	for (; m->slots[i].used; i = (i + 1) & m->mask)
		if (m->slots[i].id == id && m->slots[i].producer == producer)
			return i;
	return i; /* the empty slot that ends the probe */
}

const struct recent_launch *launch_map__find(const struct launch_map *m, __u32 producer, __u64 id)
{
	const struct recent_launch *s = &m->slots[slot_of(m, producer, id)];

	return s->used ? s : NULL;
}

static bool slot_empty(const void *tab, uint32_t slot)
{
	return !((const struct recent_launch *)tab)[slot].used;
}

static uint32_t slot_home(const void *tab, uint32_t slot)
{
	const struct recent_launch *s = &((const struct recent_launch *)tab)[slot];

	return launch_home(s->producer, s->id);
}

static void slot_move(void *tab, uint32_t to, uint32_t from)
{
	struct recent_launch *s = tab;

	s[to] = s[from];
	s[from].used = 0;
}

static void slot_clear(void *tab, uint32_t slot)
{
	((struct recent_launch *)tab)[slot].used = 0;
}

static const struct oatab_ops slot_ops = { .empty = slot_empty,
					   .home = slot_home,
					   .move = slot_move,
					   .clear = slot_clear };

struct recent_launch *launch_map__put(struct launch_map *m, __u32 producer, __u64 id)
{
	__u32 i = slot_of(m, producer, id);
	struct launch_key old;

	if (m->slots[i].used)
		return &m->slots[i];
	if (m->n == m->max) { /* the oldest goes; the probe is made again after the shift */
		old = m->fifo[m->head];
		m->head = (m->head + 1) % m->max;
		m->n--;
		m->evicted++;
		oatab__delete(m->slots, m->mask, slot_of(m, old.producer, old.id), &slot_ops);
		i = slot_of(m, producer, id);
	}
	m->fifo[(m->head + m->n++) % m->max] = (struct launch_key){ id, producer };
	m->slots[i] = (struct recent_launch){ .id = id, .producer = producer, .used = 1 };
	return &m->slots[i];
}
