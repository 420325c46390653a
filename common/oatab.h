/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_COMMON_OATAB_H
#define XPUSUP_COMMON_OATAB_H
/*
 * Deletion for open-addressed hash tables with linear probing over a power-of-two array of
 * slots: the one copy of the backward shift every table in the project uses.
 *
 * Why backward shift: a lookup stops at the first empty slot, so emptying a slot in the middle
 * of a probe run would hide the members after it. Tombstones would fix that but pile up in a
 * table that churns for days (a correlator shard inserts and deletes per launch). Instead, after
 * a slot is emptied, each later member of the same run that may legally sit in the hole (its
 * home slot lies cyclically at or before the hole) moves back into it, and the hole moves on
 * to where that member was, until the run ends (Knuth, TAOCP vol. 3, 6.4, Algorithm R).
 *
 * The slot layout stays the table's own (slots holding indices into an entry array, or slots
 * holding the records themselves): the caller passes its operations on its slots. The functions
 * are static inline and the ops are meant to be a `static const` table, so the compiler turns
 * the calls into direct code.
 */
#include <stdbool.h>
#include <stdint.h>

struct oatab_ops {
	/* true when slot `slot` holds no member */
	bool (*empty)(const void *tab, uint32_t slot);
	/* the home slot of the member in `slot`: its hash, masked or not (only the low bits
	 * count) */
	uint32_t (*home)(const void *tab, uint32_t slot);
	/* slot `to` (empty) takes the member of slot `from`; `from` is cleared afterwards */
	void (*move)(void *tab, uint32_t to, uint32_t from);
	/* make `slot` empty (the member's own resources are the caller's to free first) */
	void (*clear)(void *tab, uint32_t slot);
};

/* Delete the member in `slot` of a table of mask + 1 slots (a power of two) and close the gap.
 * Members after it in its probe run may move to lower slots: a caller iterating over the
 * table must look at `slot` again after a deletion (oatab__delete_if does). */
static inline void oatab__delete(void *tab, uint32_t mask, uint32_t slot,
				 const struct oatab_ops *ops)
{
	uint32_t i = slot, k;

	for (;;) {
		ops->clear(tab, i);
		for (k = (i + 1) & mask;; k = (k + 1) & mask) {
			if (ops->empty(tab, k))
				return;
			/* May the member in k move to the hole i? Only if i lies cyclically in
			 * [home, k): then it stays reachable from its home. */
			if (((k - ops->home(tab, k)) & mask) >= ((k - i) & mask))
				break;
		}
		ops->move(tab, i, k);
		i = k;
	}
}

/* Delete every member for which drop(tab, slot, ctx) is true, in one pass over the table
 * (an exited process's names, streams, counters). The pass starts just after an empty slot
 * and wraps around to it: no probe run crosses an empty slot, so a backward shift only moves
 * members that the pass has not looked at yet into the slot it is looking at. drop() may free
 * the member's resources; it is called once per member. Returns how many were deleted. A full
 * table (no empty slot) is not supported: every table here keeps its load below 1. */
static inline uint32_t oatab__delete_if(void *tab, uint32_t mask, const struct oatab_ops *ops,
					bool (*drop)(void *tab, uint32_t slot, void *ctx),
					void *ctx)
{
	uint32_t start = 0, n, i, deleted = 0;

	while (start <= mask && !ops->empty(tab, start))
		start++;
	if (start > mask)
		return 0;
	for (n = 0; n < mask; n++) {
		i = (start + 1 + n) & mask;
		while (!ops->empty(tab, i) && drop(tab, i, ctx)) {
			oatab__delete(tab, mask, i, ops);
			deleted++;
		}
	}
	return deleted;
}

#endif /* XPUSUP_COMMON_OATAB_H */
