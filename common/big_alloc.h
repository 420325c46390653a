/* SPDX-License-Identifier: MIT */
/*
 * Big tables: zeroed memory, asked for in transparent huge pages.
 *
 * The sinks' launch maps are megabytes of slots and entries looked up at random, once or
 * twice an event. In 4 KiB pages nearly every lookup also misses the TLB: a page walk on top
 * of the cache miss, which a software prefetch may not start. In 2 MiB pages the whole table
 * is a few TLB entries. Debian's kernels run transparent huge pages in "madvise" mode, so a
 * mapping gets them only when it asks (MADV_HUGEPAGE) and is aligned to 2 MiB; where the
 * kernel has none to give, the mapping stays in small pages and works the same.
 */
#ifndef XPUSUP_COMMON_BIG_ALLOC_H
#define XPUSUP_COMMON_BIG_ALLOC_H

#include <stddef.h>

/* len zeroed bytes (more than 0), given by the kernel as they are touched: for 1 MiB and more,
 * aligned to 2 MiB and advised as huge pages. NULL when the memory is not there. */
void *xpu_big_alloc(size_t len);

/* Give back what xpu_big_alloc(len) returned (NULL: nothing). */
void xpu_big_free(void *p, size_t len);

#endif /* XPUSUP_COMMON_BIG_ALLOC_H */
