// SPDX-License-Identifier: MIT
#include "common/big_alloc.h"

#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20) /* x86-64's and arm64's (4 KiB granule) PMD size */
#define HUGE_FROM (1u << 20) /* smaller tables: one huge page would be mostly waste */

/* The mapping's length: whole huge pages from HUGE_FROM up, so the tail is one too. */
static size_t map_len(size_t len)
{
	return len < HUGE_FROM ? len : (len + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
}

void *xpu_big_alloc(size_t len)
{
	size_t n = map_len(len), extra = len < HUGE_FROM ? 0 : HUGE_PAGE;
	char *p, *start;

	if (!len || n < len)
		return NULL;
	/* extra: room to start on a 2 MiB boundary, the rest unmapped below */
	p = mmap(NULL, n + extra, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!extra)
		return p;
	start = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (start > p)
		munmap(p, (size_t)(start - p));
	if (start + n < p + n + extra)
		munmap(start + n, (size_t)(p + n + extra - (start + n)));
	/* advice only: a kernel without THP, or with it off, says EINVAL and keeps small pages */
	(void)madvise(start, n, MADV_HUGEPAGE);
	return start;
}

void xpu_big_free(void *p, size_t len)
{
	if (p)
		munmap(p, map_len(len));
}
