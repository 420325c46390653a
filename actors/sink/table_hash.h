/* SPDX-License-Identifier: MIT */
/*
 * The hash of the sinks' in-memory tables (folded's stacks, the stats format's kernel and
 * function names): 8 bytes a step. These hashes never leave the process (nothing stores,
 * sends or compares them elsewhere), so they need not be common/hash.h's FNV-1a, which is
 * stable across processes but takes a byte a step: over a GPU record's kernel name and launch
 * stack (40 to hundreds of bytes) it cost a sink more than everything else it did with the
 * event. Each step is a bijection of h (xor, then an odd multiplier), so keys of one length
 * that differ in one word differ in h; the caller spreads the result over the bits its
 * table's mask keeps (xpu_mix64).
 */
#ifndef XPUSUP_ACTORS_SINK_TABLE_HASH_H
#define XPUSUP_ACTORS_SINK_TABLE_HASH_H

#include <stddef.h>
#include <string.h>

#include <linux/types.h>

/* sink_hash_words - h with n bytes of data (NULL when n is 0) mixed in; not finalised. */
static inline __u64 sink_hash_words(__u64 h, const void *data, size_t n)
{
	const unsigned char *b = data;
	__u64 w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	}
	w = 0;
	if (n) /* b may be NULL: memcpy must not get it */
		memcpy(&w, b, n);
	return (h ^ w ^ n) * 0x9e3779b97f4a7c15ull;
}

#endif /* XPUSUP_ACTORS_SINK_TABLE_HASH_H */
