/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers, kept and handed out again (docs/cupti.md, "Activity buffers").
 *
 * CUPTI 13 asks for a buffer per thread that makes records, and gives a buffer back each
 * time it has something complete for it: on an H200 running a PyTorch loop (tests/cuda/
 * torch_loop.py) two to four buffers were asked for per kernel. It asks on the
 * thread that makes the record, the application's, inside its CUDA call, and unless told
 * the buffer comes zeroed it clears the whole buffer there. A fresh 1 MiB buffer, cleared on
 * the launching thread and faulted in page by page, took 39 us a request (the median): the
 * loop ran 5.7 times slower than without profiling.
 *
 * So the buffers come from here: a request takes a buffer that is already zero (one held
 * back, or a fresh anonymous mapping, which the kernel gives zeroed), and a buffer
 * given back is cleared on the thread that gives it back (CUPTI's worker or our flusher,
 * never the application's) and kept for the next request. At most max_free are kept; the
 * rest are unmapped. Every buffer handed out is in a set (open addressing, BUFFER_POOL_OUT_SLOTS): a
 * buffer given back that is not in it (given back twice, or never ours) is counted and left
 * alone, neither cleared nor kept nor unmapped, for it may be unmapped memory, or kept. Kept
 * buffers go out again oldest first (FIFO), so a buffer given back rests while the others
 * kept go out: a duplicate give-back then finds it resting, not out again, where it could
 * not be told from the new holder's own. Every call is thread-safe; none blocks on more than
 * a short mutex.
 */
#ifndef XPUSUP_CUPTI_BUFFER_POOL_H
#define XPUSUP_CUPTI_BUFFER_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Buffers out at once at most: CUPTI holds one per thread that makes records, and those given
 * back and not yet converted. More than 3/4 of the slots: a request gets none (counted). */
#define BUFFER_POOL_OUT_SLOTS 8192

struct buffer_pool {
	pthread_mutex_t lock; /* free[], n_free, out[], and the counters */
	size_t bytes; /* each buffer's size */
	unsigned int max_free;
	unsigned int n_free;
	unsigned int head; /* free[head] is the oldest kept; they run on, modulo max_free */
	void **free; /* zeroed buffers kept for the next request, a FIFO */
	uint64_t allocated; /* buffers made (mmap) */
	uint64_t reused; /* requests answered from free[] */
	uint64_t released; /* buffers given back and unmapped (free[] was full) */
	uint64_t twice; /* buffers given back that were not out (twice, or never ours) */
	uint64_t outstanding; /* handed out and not yet given back */
	uint64_t refused; /* requests refused: BUFFER_POOL_OUT_SLOTS * 3/4 out already */
	uint64_t dirty; /* kept buffers found written after they came back (and cleared) */
	void **out; /* BUFFER_POOL_OUT_SLOTS: the buffers handed out; NULL, a free slot */
};

/* Buffers of bytes (a multiple of 8, more than 0), keeping at most max_free (more than 0). */
int buffer_pool__init(struct buffer_pool *p, size_t bytes, unsigned int max_free);

/* A zeroed buffer of p->bytes, page-aligned; NULL when memory is short or too many are out. */
void *buffer_pool__get(struct buffer_pool *p);

/* Give back buf (from buffer_pool__get; NULL: nothing): it is zeroed here and kept, or
 * unmapped when max_free are kept already. A buf that is not out is counted (twice) and not
 * touched. */
void buffer_pool__put(struct buffer_pool *p, void *buf);

/* Free every buffer kept; the pool can be used again. Buffers still out stay out. */
void buffer_pool__drain(struct buffer_pool *p);

/* Drain, and free what init allocated. */
void buffer_pool__fini(struct buffer_pool *p);

#endif /* XPUSUP_CUPTI_BUFFER_POOL_H */
