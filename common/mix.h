/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_COMMON_MIX_H
#define XPUSUP_COMMON_MIX_H

#include <linux/types.h>

/* splitmix64's finaliser: cheap, and every input bit reaches every output bit. For
 * pseudo-random streams (x = counter) and hash-based choices that every process must make
 * alike (which launches a source's `sample` keeps). Header-only: the ring tests use it
 * without the common library. */
static inline __u64 xpu_mix64(__u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif /* XPUSUP_COMMON_MIX_H */
