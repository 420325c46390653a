/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers, kept and handed out again (buffer_pool.h).
 */
#include "cupti/buffer_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int buffer_pool__init(struct buffer_pool *p, size_t bytes, unsigned int max_free)
{
	if (!bytes || bytes % 8 || !max_free)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->free = calloc(max_free, sizeof(*p->free));
	p->out = calloc(BUFFER_POOL_OUT_SLOTS, sizeof(*p->out));
	if (!p->free || !p->out) {
		free(p->free);
		free(p->out);
		p->free = NULL;
		p->out = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	p->bytes = bytes;
	p->max_free = max_free;
	return 0;
}

/* Memory the kernel gives zeroed whatever malloc's state: a calloc this size is zero without
 * clearing only while glibc still maps it apart, and glibc stops doing that once any large
 * block has been freed, in this library or anywhere in the program. */
static void *fresh(size_t bytes)
{
	void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return buf == MAP_FAILED ? NULL : buf;
}

/* The set of buffers out: open addressing with linear probing over a power of two of slots,
 * at most 3/4 full (buffer_pool__get refuses past that), so every probe ends at a NULL. All
 * under p->lock. */
#define OUT_MASK (BUFFER_POOL_OUT_SLOTS - 1)
_Static_assert((BUFFER_POOL_OUT_SLOTS & OUT_MASK) == 0, "a power of two of slots");

static unsigned int out_slot(const void *buf)
{
	/* page-aligned: the low 12 bits say nothing; a multiply mixes the rest */
	return (unsigned int)(((uintptr_t)buf >> 12) * 0x9e3779b97f4a7c15ull >> 40) & OUT_MASK;
}

static void out_add(struct buffer_pool *p, void *buf)
{
	unsigned int i = out_slot(buf);

	while (p->out[i])
		i = (i + 1) & OUT_MASK;
	p->out[i] = buf; /* its place was reserved: buffer_pool__get counted it out */
}

/* Whether buf was out; it is not any more. Backward-shift deletion, so probes stay whole. */
static bool out_remove(struct buffer_pool *p, const void *buf)
{
	unsigned int i = out_slot(buf), j, home;

	while (p->out[i] != buf) {
		if (!p->out[i])
			return false;
		i = (i + 1) & OUT_MASK;
	}
	for (j = (i + 1) & OUT_MASK; p->out[j]; j = (j + 1) & OUT_MASK) {
		home = out_slot(p->out[j]);
		/* the entry at j may move to the hole at i unless its home lies in (i, j] */
		if (((j - home) & OUT_MASK) >= ((j - i) & OUT_MASK)) {
			p->out[i] = p->out[j];
			i = j;
		}
	}
	p->out[i] = NULL;
	p->outstanding--;
	return true;
}

/* A kept buffer came back zeroed; its first bytes still zero when it leaves again, or CUPTI
 * (or someone) wrote to it after giving it back. A check of 64 bytes, not of the buffer: it
 * runs on the application's thread. */
static bool written_since(const void *buf)
{
	const uint64_t *w = buf;
	uint64_t any = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		any |= w[i];
	return any != 0;
}

void *buffer_pool__get(struct buffer_pool *p)
{
	bool dirty = false;
	void *buf = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->outstanding >= BUFFER_POOL_OUT_SLOTS / 4 * 3) {
		p->refused++;
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	p->outstanding++; /* its place in out[], reserved now: a request that maps a buffer
			   * outside the lock must not let others past the limit meanwhile */
	if (p->n_free) { /* the oldest kept (FIFO: see buffer_pool.h) */
		buf = p->free[p->head];
		p->head = (p->head + 1) % p->max_free;
		p->n_free--;
		p->reused++;
		dirty = written_since(buf);
		p->dirty += dirty;
		out_add(p, buf);
	}
	pthread_mutex_unlock(&p->lock);
	if (dirty)
		memset(buf, 0, p->bytes); /* rare: only a writer after the give-back */
	if (buf)
		return buf;
	/* Outside the lock: its pages fault in as CUPTI writes them. */
	buf = fresh(p->bytes);
	pthread_mutex_lock(&p->lock);
	if (buf) {
		p->allocated++;
		out_add(p, buf);
	} else {
		p->outstanding--; /* the reservation */
	}
	pthread_mutex_unlock(&p->lock);
	return buf;
}

void buffer_pool__put(struct buffer_pool *p, void *buf)
{
	bool kept = false, was_out;

	if (!buf)
		return;
	/* Not ours, or ours no more (given back twice): another thread may have it now, or it
	 * may be unmapped. Counted; not cleared, kept or unmapped. */
	pthread_mutex_lock(&p->lock);
	was_out = out_remove(p, buf);
	p->twice += !was_out;
	pthread_mutex_unlock(&p->lock);
	if (!was_out)
		return;
	/* All of it, not just what CUPTI said was valid: a buffer handed out must be zero
	 * wherever CUPTI may write, and clearing it here is off the application's threads.
	 * Out of the set, it is this thread's alone. */
	memset(buf, 0, p->bytes);
	pthread_mutex_lock(&p->lock);
	if (p->n_free < p->max_free) {
		p->free[(p->head + p->n_free++) % p->max_free] = buf;
		kept = true;
	} else {
		p->released++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!kept)
		munmap(buf, p->bytes);
}

void buffer_pool__drain(struct buffer_pool *p)
{
	void **bufs;
	unsigned int i, n;

	/* under the lock: rare (the end of a process), and a put meanwhile must not refill
	 * the slots being freed */
	pthread_mutex_lock(&p->lock);
	bufs = p->free;
	n = p->n_free;
	for (i = 0; i < n; i++) {
		munmap(bufs[(p->head + i) % p->max_free], p->bytes);
		bufs[(p->head + i) % p->max_free] = NULL;
	}
	p->n_free = 0;
	p->head = 0;
	pthread_mutex_unlock(&p->lock);
}

void buffer_pool__fini(struct buffer_pool *p)
{
	if (!p->free)
		return;
	buffer_pool__drain(p);
	free(p->free);
	free(p->out);
	p->free = NULL;
	p->out = NULL;
	pthread_mutex_destroy(&p->lock);
}
