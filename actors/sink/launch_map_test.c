// SPDX-License-Identifier: MIT
/*
 * The sinks' recent-launch map against a model: random puts and finds of keys from a small
 * range (so keys repeat and probe runs collide), the model a plain FIFO of the last max
 * distinct keys. Every key the model holds is found with its last value, every other one is
 * not, and evicted counts the keys that left.
 */
#include "actors/sink/launch_map.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix.h"
#include "tests/tap.h"

#define MAX 64u
#define KEYS 300u
#define BIG (1u << 16) /* 3 MiB of entries, 2 MiB of slots */

struct model {
	__u64 id[MAX];
	__u32 producer[MAX], n;
	__u64 ts[KEYS * 4];
};

static int model_find(const struct model *m, __u32 producer, __u64 id)
{
	__u32 i;

	for (i = 0; i < m->n; i++)
		if (m->id[i] == id && m->producer[i] == producer)
			return (int)i;
	return -1;
}

int main(void)
{
	struct launch_map map;
	struct model *m = calloc(1, sizeof(*m));
	__u64 seed = 17, evicted = 0, id;
	__u32 step, producer, k, bad = 0;
	struct recent_launch *l;
	const struct recent_launch *f;

	if (!m || launch_map__init(&map, MAX))
		tap_bail("out of memory");
	for (step = 0; step < 200000 && !bad; step++) {
		seed = xpu_mix64(seed + step);
		id = seed % KEYS;
		producer = (__u32)(seed >> 32) % 4;
		if (model_find(m, producer, id) < 0) {
			if (m->n == MAX) { /* the oldest goes */
				memmove(m->id, m->id + 1, (MAX - 1) * sizeof(m->id[0]));
				memmove(m->producer, m->producer + 1,
					(MAX - 1) * sizeof(m->producer[0]));
				m->n--;
				evicted++;
			}
			m->id[m->n] = id;
			m->producer[m->n++] = producer;
		}
		l = launch_map__put(&map, producer, id);
		l->ts = step;
		m->ts[id * 4 + producer] = step;
		/* every key: found exactly when the model has it, with its last value */
		for (k = 0; k < KEYS * 4 && (step % 1000 == 0 || k < 8); k++) {
			f = launch_map__find(&map, k % 4, k / 4);
			if ((model_find(m, k % 4, k / 4) >= 0) != (f != NULL) ||
			    (f && f->ts != m->ts[k])) {
				tap_diag("step %u: key %u/%u wrong", step, k / 4, k % 4);
				bad++;
				break;
			}
		}
	}
	tap_ok(!bad, "200000 random puts: the map holds exactly the model's last %u keys", MAX);
	tap_ok(map.evicted == evicted && map.n == MAX, "evicted counts the keys that left (%llu)",
	       (unsigned long long)map.evicted);
	l = launch_map__put(&map, m->producer[MAX - 1], m->id[MAX - 1]);
	tap_ok(l->ts == m->ts[m->id[MAX - 1] * 4 + m->producer[MAX - 1]] && map.evicted == evicted,
	       "a put of a key already there returns its entry and forgets nothing");
	launch_map__free(&map);

	/* A map of the size sessions use (its arrays in huge pages: common/big_alloc.c), fed as
	 * a correlator feeds it: ids one after the other from two producers, each evicting the
	 * oldest once full. The last BIG keys are there with their values, the ones before not. */
	if (launch_map__init(&map, BIG))
		tap_bail("out of memory");
	for (id = 1; id <= 3 * BIG; id++) {
		l = launch_map__put(&map, (__u32)(id & 1), id);
		l->ts = id * 7;
	}
	for (bad = 0, id = 1; id <= 3 * BIG; id++) {
		f = launch_map__find(&map, (__u32)(id & 1), id);
		if ((id > 2 * BIG) != (f != NULL) || (f && f->ts != id * 7) ||
		    launch_map__find(&map, (__u32)(~id & 1), id))
			bad++;
	}
	tap_ok(!bad && map.evicted == 2 * BIG && map.n == BIG,
	       "%u puts into a map of %u: the last %u found, every older one gone (%u wrong)",
	       3 * BIG, BIG, BIG, bad);
	launch_map__free(&map);
	free(m);
	return tap_done();
}
