/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers, kept and handed out again (buffer_pool.h).
 */
#include "cupti/buffer_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int buffer_pool__init(struct buffer_pool *p, size_t bytes, unsigned int max_free)
{
	if (!bytes || bytes % 8 || !max_free)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->free = calloc(max_free, sizeof(*p->free));
	if (!p->free)
		return -ENOMEM;
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

void *buffer_pool__get(struct buffer_pool *p)
{
	void *buf = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->n_free) {
		buf = p->free[--p->n_free];
		p->reused++;
		p->outstanding++;
	}
	pthread_mutex_unlock(&p->lock);
	if (buf)
		return buf;
	/* Outside the lock: its pages fault in as CUPTI writes them. */
	buf = fresh(p->bytes);
	if (!buf)
		return NULL;
	pthread_mutex_lock(&p->lock);
	p->allocated++;
	p->outstanding++;
	pthread_mutex_unlock(&p->lock);
	return buf;
}

void buffer_pool__put(struct buffer_pool *p, void *buf)
{
	bool kept = false, twice = false;
	unsigned int i;

	if (!buf)
		return;
	/* All of it, not just what CUPTI said was valid: a buffer handed out must be zero
	 * wherever CUPTI may write, and clearing it here is off the application's threads. */
	memset(buf, 0, p->bytes);
	pthread_mutex_lock(&p->lock);
	/* A buffer given back twice must not be kept twice, or two threads would get it.
	 * Only a CUPTI bug does it; the scan of at most max_free pointers is cheap. */
	for (i = 0; i < p->n_free && !twice; i++)
		twice = p->free[i] == buf;
	if (twice) {
		p->twice++;
	} else {
		p->outstanding--;
		if (p->n_free < p->max_free) {
			p->free[p->n_free++] = buf;
			kept = true;
		} else {
			p->released++;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (!kept && !twice)
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
	p->n_free = 0;
	for (i = 0; i < n; i++) {
		munmap(bufs[i], p->bytes);
		bufs[i] = NULL;
	}
	pthread_mutex_unlock(&p->lock);
}

void buffer_pool__fini(struct buffer_pool *p)
{
	if (!p->free)
		return;
	buffer_pool__drain(p);
	free(p->free);
	p->free = NULL;
	pthread_mutex_destroy(&p->lock);
}
