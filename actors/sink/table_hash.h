/* SPDX-License-Identifier: MIT */
/*
 * The hash of the sinks' in-memory tables (folded's stacks, the stats format's kernel and
 * function names): 8 bytes a step. These hashes never leave the process (nothing stores,
 * sends or compares them elsewhere), so they need not be common/hash.h's FNV-1a, which is
 * stable across processes but takes a byte a step: over a GPU record's kernel name and launch
 * stack (40 to hundreds of bytes) it cost a sink more than everything else it did with the
 * event. Each step is a bijection of h (xor, then an odd multiplier); the last word of a key
 * of 8 bytes or more overlaps the one before it (one load, where copying the rest byte by
 * byte was an eighth of the timeline's event-head lookup), shorter keys are one word, and the
 * length goes in last. The caller spreads the result over the bits its table's mask keeps
 * (xpu_mix64).
 */
#ifndef XPUSUP_ACTORS_SINK_TABLE_HASH_H
#define XPUSUP_ACTORS_SINK_TABLE_HASH_H

#include <stddef.h>
#include <string.h>

#include <linux/types.h>

/* sink_hash_words - h with n bytes of data (NULL when n is 0) mixed in; not finalised. */
static inline __u64 sink_hash_words(__u64 h, const void *data, size_t n)
{
	const unsigned char *b = data; /* NULL when n is 0: never read then */
	size_t len = n;
	__u64 w = 0;

	if (n >= 8) {
		for (; n > 8; b += 8, n -= 8) {
			memcpy(&w, b, 8);
			h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		}
		memcpy(&w, b + n - 8, 8); /* 1 to 8 bytes left: the last 8 of the key */
	} else {
		while (n--)
			w = w << 8 | *b++;
	}
	return (h ^ w ^ len) * 0x9e3779b97f4a7c15ull;
}

#endif /* XPUSUP_ACTORS_SINK_TABLE_HASH_H */
