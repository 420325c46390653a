/* SPDX-License-Identifier: MIT */
/*
 * buffer_pool_test: CUPTI's activity buffers (buffer_pool.h). What CUPTI is promised, that
 * every buffer handed out is zero wherever it may write, checked after each buffer has been
 * filled with garbage and given back; that kept buffers are reused and the rest freed; and
 * the same from four threads at once, counted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cupti/buffer_pool.h"
#include "tests/tap.h"

#define BYTES 4096
#define THREADS 4
#define ROUNDS 5000

static bool all_zero(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

struct worker {
	struct buffer_pool *pool;
	unsigned int seed;
	unsigned int not_zero; /* buffers handed out with a byte not zero */
	unsigned int failed; /* NULL answers */
	unsigned int asked; /* buffer_pool__get calls */
};

/* As CUPTI's threads use the pool: take one or two, write over them (all of it, or a
 * record's worth), give them back in either order. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned int i;

	for (i = 0; i < ROUNDS; i++) {
		void *a = buffer_pool__get(w->pool), *b = NULL;
		unsigned int r = w->seed = w->seed * 1103515245u + 12345u;

		w->asked++;
		if (!a) {
			w->failed++;
			continue;
		}
		if (r & 1) {
			b = buffer_pool__get(w->pool);
			w->asked++;
		}
		w->not_zero += !all_zero(a, BYTES) + (b && !all_zero(b, BYTES));
		memset(a, 0xa5, r & 2 ? BYTES : 64);
		if (b)
			memset((char *)b + BYTES - 8, (int)(r >> 8) | 1, 8);
		if (r & 4) {
			buffer_pool__put(w->pool, b);
			buffer_pool__put(w->pool, a);
		} else {
			buffer_pool__put(w->pool, a);
			buffer_pool__put(w->pool, b);
		}
	}
	return NULL;
}

int main(void)
{
	struct buffer_pool pool;
	struct worker workers[THREADS];
	pthread_t threads[THREADS];
	void *bufs[8];
	void *first;
	unsigned int i, not_zero = 0, failed = 0, asked_total = 0;
	uint64_t asked;

	tap_eq_u64(buffer_pool__init(&pool, 0, 4), -EINVAL, "no size is refused");
	tap_eq_u64(buffer_pool__init(&pool, 100, 4), -EINVAL,
		   "a size not a multiple of 8 is refused");
	tap_eq_u64(buffer_pool__init(&pool, BYTES, 0), -EINVAL, "keeping none is refused");
	if (!tap_eq_u64(buffer_pool__init(&pool, BYTES, 4), 0, "a pool of 4 KiB buffers, 4 kept"))
		return tap_done();

	/* one buffer: made zero, dirtied, given back, handed out again zero (the only one kept) */
	first = buffer_pool__get(&pool);
	tap_ok(first && all_zero(first, BYTES), "a new buffer is zero");
	tap_ok(((uintptr_t)first & 7) == 0, "and 8-byte aligned");
	memset(first, 0xff, BYTES);
	buffer_pool__put(&pool, first);
	bufs[0] = buffer_pool__get(&pool);
	tap_ok(bufs[0] == first, "a buffer given back is the next one handed out");
	tap_ok(all_zero(bufs[0], BYTES), "zero again, to its last byte");
	tap_eq_u64(pool.allocated, 1, "one made");
	tap_eq_u64(pool.reused, 1, "one reused");
	buffer_pool__put(&pool, bufs[0]);

	/* more out at once than are kept: the surplus is freed when it comes back */
	for (i = 0; i < 7; i++)
		bufs[i] = buffer_pool__get(&pool);
	tap_eq_u64(pool.outstanding, 7, "seven out");
	for (i = 0; i < 7; i++)
		buffer_pool__put(&pool, bufs[i]);
	tap_eq_u64(pool.n_free, 4, "four kept");
	tap_eq_u64(pool.released, 3, "three freed past the four kept");
	tap_eq_u64(pool.outstanding, 0, "none out");
	buffer_pool__put(&pool, NULL);
	tap_eq_u64(pool.n_free, 4, "giving back NULL changes nothing");

	/* given back twice (a CUPTI bug): kept once, so it is never handed out twice */
	bufs[0] = buffer_pool__get(&pool);
	buffer_pool__put(&pool, bufs[0]);
	asked = pool.n_free;
	buffer_pool__put(&pool, bufs[0]);
	tap_eq_u64(pool.twice, 1, "a buffer given back twice is counted");
	tap_eq_u64(pool.n_free, asked, "and kept once");
	tap_eq_u64(pool.outstanding, 0, "and the second time is not a buffer back");

	/* A buffer given back rests while the other kept ones go out (FIFO): the next request
	 * does not get it, so a duplicate give-back soon after finds it resting, where it is
	 * counted and changes nothing; with the last-in-first-out order of before, the next
	 * thread had it, and the duplicate cleared its records and put it where a third got it. */
	bufs[0] = buffer_pool__get(&pool);
	buffer_pool__put(&pool, bufs[0]);
	bufs[1] = buffer_pool__get(&pool); /* another thread's request */
	tap_ok(bufs[1] != bufs[0], "a buffer given back is not the next one out (%u kept)",
	       pool.n_free + 1);
	memset(bufs[1], 0x5a, 64);
	buffer_pool__put(&pool, bufs[0]); /* the late duplicate */
	tap_eq_u64(pool.twice, 2, "a duplicate give-back soon after is counted");
	tap_ok(((unsigned char *)bufs[1])[63] == 0x5a, "and clears nobody's records");
	for (i = 0; i < 4; i++) /* every kept one, and a fresh one: all different */
		bufs[2 + i] = buffer_pool__get(&pool);
	tap_ok(bufs[2] != bufs[3] && bufs[2] != bufs[4] && bufs[2] != bufs[5] &&
		       bufs[3] != bufs[4] && bufs[3] != bufs[5] && bufs[4] != bufs[5] &&
		       bufs[1] != bufs[2] && bufs[1] != bufs[3] && bufs[1] != bufs[4] &&
		       bufs[1] != bufs[5],
	       "nor is the buffer handed out twice");
	tap_eq_u64(pool.outstanding, 5, "five out");
	for (i = 1; i < 6; i++)
		buffer_pool__put(&pool, bufs[i]);

	/* given back twice after it was unmapped (more came back than are kept): not touched */
	for (i = 0; i < 5; i++)
		bufs[i] = buffer_pool__get(&pool);
	for (i = 0; i < 5; i++)
		buffer_pool__put(&pool, bufs[i]);
	tap_eq_u64(pool.n_free, 4, "four kept, the fifth unmapped");
	buffer_pool__put(&pool, bufs[4]); /* would fault on a clear of unmapped memory */
	tap_eq_u64(pool.twice, 3, "a duplicate give-back of an unmapped buffer is counted");
	tap_eq_u64(pool.n_free, 4, "and not kept");
	{
		static _Alignas(4096) unsigned char stranger[BYTES];

		memset(stranger, 0x77, sizeof(stranger));
		buffer_pool__put(&pool, stranger);
		tap_ok(pool.twice == 4 && stranger[0] == 0x77 && pool.n_free == 4,
		       "memory never handed out is counted, neither cleared nor kept");
	}

	/* written after it came back (a late writer): found at its next hand-out, cleared */
	bufs[0] = buffer_pool__get(&pool);
	buffer_pool__put(&pool, bufs[0]);
	memset(bufs[0], 0x33, 16);
	for (i = 0; i < 4; i++) /* the four kept, bufs[0] the last of them */
		bufs[1 + i] = buffer_pool__get(&pool);
	tap_ok(bufs[4] == bufs[0] && all_zero(bufs[4], BYTES) && pool.dirty == 1,
	       "a kept buffer written since it came back is counted and handed out zero");
	for (i = 1; i < 5; i++)
		buffer_pool__put(&pool, bufs[i]);

	/* many out at once: the set of buffers out holds them, and refuses past 3/4 */
	{
		enum { MANY = BUFFER_POOL_OUT_SLOTS / 4 * 3 };
		static void *many[MANY];
		unsigned int got = 0, back;

		for (i = 0; i < MANY; i++)
			got += !!(many[i] = buffer_pool__get(&pool));
		tap_eq_u64(got, MANY, "%u buffers out at once", (unsigned int)MANY);
		tap_ok(!buffer_pool__get(&pool) && pool.refused == 1,
		       "one more is refused, and counted");
		asked = pool.twice;
		for (i = 0; i < MANY; i += 2) /* every other, then the rest: holes in the probes */
			buffer_pool__put(&pool, many[i]);
		for (i = 1; i < MANY; i += 2)
			buffer_pool__put(&pool, many[i]);
		back = (unsigned int)(pool.twice - asked);
		tap_ok(back == 0 && pool.outstanding == 0,
		       "all came back, none taken for a duplicate (%u)", back);
	}

	/* drained: the next buffer is a new one */
	buffer_pool__drain(&pool);
	tap_eq_u64(pool.n_free, 0, "drained: none kept");
	asked = pool.allocated;
	bufs[0] = buffer_pool__get(&pool);
	tap_ok(bufs[0] && all_zero(bufs[0], BYTES), "after a drain a buffer is made, zero");
	tap_eq_u64(pool.allocated, asked + 1, "and counted as made");
	buffer_pool__put(&pool, bufs[0]);

	/* four threads at once */
	asked = pool.allocated + pool.reused;
	for (i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){ .pool = &pool, .seed = 7919u * (i + 1) };
		pthread_create(&threads[i], NULL, worker_main, &workers[i]);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		not_zero += workers[i].not_zero;
		failed += workers[i].failed;
		asked_total += workers[i].asked;
	}
	tap_eq_u64(failed, 0, "four threads: every request answered");
	tap_eq_u64(not_zero, 0, "four threads: every buffer handed out was zero");
	tap_eq_u64(pool.outstanding, 0, "four threads: every buffer came back");
	tap_eq_u64(pool.allocated + pool.reused - asked, asked_total,
		   "four threads: every request counted");
	/* every buffer made is kept, or was freed past the four kept, or by the drain (4) */
	tap_eq_u64(pool.allocated, pool.n_free + pool.released + 4,
		   "four threads: every buffer made is accounted for");
	tap_ok(pool.reused > pool.allocated,
	       "four threads: most requests reused one (%llu made, %llu reused)",
	       (unsigned long long)pool.allocated, (unsigned long long)pool.reused);
	buffer_pool__fini(&pool);
	return tap_done();
}
