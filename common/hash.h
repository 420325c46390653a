/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_COMMON_HASH_H
#define XPUSUP_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/mix.h"

/* The project's one byte-string hash: 64-bit FNV-1a. Chosen for being short, stable across
 * processes and restarts (pmu's STRING ids, the CUPTI library's name ids are derived from it
 * and must come out the same every time) and good enough for the open-addressed tables of
 * common/oatab.h once its value is masked. Integers hash with xpu_mix64 (common/mix.h).
 *
 * Incremental: start from XPU_FNV1A64_BASIS and feed pieces; the result of feeding "ab" equals
 * feeding "a" then "b". */
#define XPU_FNV1A64_BASIS 0xcbf29ce484222325ull

static inline uint64_t xpu_fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/* The hash of one byte string from the basis. */
static inline uint64_t xpu_hash_bytes(const void *data, size_t n)
{
	return xpu_fnv1a64(XPU_FNV1A64_BASIS, data, n);
}

#endif /* XPUSUP_COMMON_HASH_H */
