// SPDX-License-Identifier: MIT
/* common/oatab.h against a model: a table of keys at high load under random inserts,
 * deletions and delete_if passes, with every key that should be present found by a plain
 * linear probe and every deleted key gone. Keys are chosen to collide in long runs (few home
 * slots) and to wrap around the end of the array, where a wrong cyclic comparison shows. */
#include "common/oatab.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "tests/tap.h"

#define BITS 10
#define SLOTS (1u << BITS)
#define MASK (SLOTS - 1)

struct tab {
	uint32_t key[SLOTS]; /* 0: empty */
	uint32_t home_bits; /* homes use only this many bits: forces long runs */
};

static uint32_t home_of(const struct tab *t, uint32_t key)
{
	/* homes cluster near the top of the array so runs wrap to slot 0 */
	return (uint32_t)(MASK - (xpu_mix64(key) & ((1u << t->home_bits) - 1)));
}

static bool t_empty(const void *tab, uint32_t slot)
{
	return !((const struct tab *)tab)->key[slot];
}

static uint32_t t_home(const void *tab, uint32_t slot)
{
	const struct tab *t = tab;

	return home_of(t, t->key[slot]);
}

static void t_move(void *tab, uint32_t to, uint32_t from)
{
	struct tab *t = tab;

	t->key[to] = t->key[from];
}

static void t_clear(void *tab, uint32_t slot)
{
	((struct tab *)tab)->key[slot] = 0;
}

static const struct oatab_ops ops = { t_empty, t_home, t_move, t_clear };

/* NIL-free linear probe: the slot holding key, or the empty slot where it would go. */
static uint32_t probe(const struct tab *t, uint32_t key)
{
	uint32_t i = home_of(t, key) & MASK;

	while (t->key[i] && t->key[i] != key)
		i = (i + 1) & MASK;
	return i;
}

static bool drop_odd(void *tab, uint32_t slot, void *ctx)
{
	(*(unsigned *)ctx)++;
	return ((struct tab *)tab)->key[slot] & 1;
}

static uint64_t rng = 42;

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(xpu_mix64(rng++) % n);
}

/* Every model key present, no other key present, count matches. */
static int check(const struct tab *t, const unsigned char *in, uint32_t universe)
{
	uint32_t k, n = 0, i;

	for (i = 0; i < SLOTS; i++)
		n += !!t->key[i];
	for (k = 1; k <= universe; k++) {
		bool found = t->key[probe(t, k)] == k;

		if (found != !!in[k])
			return -1;
		n -= found;
	}
	return n == 0 ? 0 : -1;
}

static void run(uint32_t home_bits, uint32_t load_pct)
{
	static struct tab t;
	static unsigned char in[4 * SLOTS + 1];
	uint32_t universe = 4 * SLOTS, target = SLOTS * load_pct / 100, n = 0, step, k, slot;
	unsigned calls = 0, before;
	int bad = 0;

	memset(&t, 0, sizeof(t));
	memset(in, 0, sizeof(in));
	t.home_bits = home_bits;
	for (step = 0; step < 200000 && !bad; step++) {
		k = 1 + rnd(universe);
		slot = probe(&t, k);
		if (in[k]) {
			oatab__delete(&t, MASK, slot, &ops);
			in[k] = 0;
			n--;
		} else if (n < target) {
			t.key[slot] = k;
			in[k] = 1;
			n++;
		}
		if (step % 5000 == 4999) {
			before = calls;
			n -= oatab__delete_if(&t, MASK, &ops, drop_odd, &calls);
			for (k = 1; k <= universe; k += 2)
				in[k] = 0;
			/* drop() is asked once per member; a member shifted into a slot the
			 * pass is looking at is asked when it arrives there */
			bad |= calls - before > SLOTS;
		}
		if (step % 997 == 0 || bad)
			bad |= check(&t, in, universe) != 0;
	}
	bad |= check(&t, in, universe) != 0;
	tap_ok(!bad,
	       "home bits %u, load %u%%: 200000 random inserts/deletes and delete_if passes "
	       "agree with the model",
	       home_bits, load_pct);
}

int main(void)
{
	static struct tab t;
	static const unsigned char none[4 * SLOTS + 1];
	unsigned calls = 0;

	run(BITS, 90); /* uniform homes, high load */
	run(BITS, 50);
	run(4, 60); /* 16 home slots at the top of the array: runs of hundreds, all wrapping */
	run(1, 30); /* two homes: one run around the whole array end */

	/* a full-ish delete_if that drops everything leaves an empty table */
	memset(&t, 0, sizeof(t));
	t.home_bits = 3;
	for (uint32_t k = 1; k < SLOTS / 2; k += 2)
		t.key[probe(&t, k)] = k;
	tap_eq_u64(oatab__delete_if(&t, MASK, &ops, drop_odd, &calls), SLOTS / 4,
		   "delete_if drops every matching member");
	tap_ok(check(&t, none, 4 * SLOTS) == 0, "and the table is empty afterwards");
	return tap_done();
}
