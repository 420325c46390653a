// SPDX-License-Identifier: MIT
/*
 * A hostile or crashed producer: random bytes scribbled over the ring header and records,
 * many thousands of times, while a consumer is attached and when a new one attaches. The
 * consumer must neither crash nor read outside the ring, must never hand over a record that
 * fails validation, and must always make progress to "empty".
 *
 * Out-of-bounds reads are caught two ways: the ring lives in a heap block (AddressSanitizer
 * knows its bounds) and, in alternate rounds, in an mmap with PROT_NONE guard pages on both
 * sides (a stray read faults in any build).
 */
#include "shm/ring.h"

#include <errno.h>
#include <sys/mman.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

#define CAP 16384u
#define LEN (XPU_RING_HDR_SIZE + CAP)
#define ROUNDS 20000

static __u64 rng = 0x1234567;

static __u64 next_rand(void)
{
	rng = tr_mix(rng);
	return rng;
}

static _Alignas(8) unsigned char out[XPU_REC_MAX_SIZE];

struct tally {
	__u64 delivered, invalid, stuck, open_refused, corrupt_counted, producer_reopened;
};

static void fill(struct ring *p, __u64 *seq)
{
	__u32 size;
	void *slot;

	for (;;) {
		size = tr_size_for(*seq, TR_MIN_SIZE, 1024);
		slot = ring__reserve(p, size);
		if (!slot)
			break;
		tr_build(slot, size, (*seq)++);
		ring__commit(p);
	}
	ring__flush(p);
}

/* Read until empty; every delivered record must validate, and "empty" must come within the
 * number of reads the ring's size allows (each read consumes at least 8 bytes). */
static void drain(struct ring *c, struct tally *t)
{
	unsigned int reads;
	int n;

	for (reads = 0; reads < CAP / 8 + 2; reads++) {
		n = ring__read(c, out, sizeof(out));
		if (n == 0)
			break;
		if (n < 0 || (__u32)n > sizeof(out) || xpu_rec__validate(out, (size_t)n))
			t->invalid++;
		else
			t->delivered++;
	}
	if (reads == CAP / 8 + 2)
		t->stuck++;
	ring__release(c);
}

static void scribble(unsigned char *mem)
{
	unsigned int k, n = 1 + (unsigned int)(next_rand() % 64);
	__u64 r, off;

	for (k = 0; k < n; k++) {
		r = next_rand();
		switch (r % 4) {
		case 0: /* anywhere in the indices and counters */
			off = 128 + (r >> 8) % 384;
			break;
		case 1: /* the immutable line: magic, geometry */
			off = (r >> 8) % 128;
			break;
		default: /* record bytes */
			off = XPU_RING_HDR_SIZE + (r >> 8) % CAP;
			break;
		}
		mem[off] = (unsigned char)(r >> 40);
	}
	/* Now and then a whole index replaced by a random 64-bit value. */
	if (next_rand() % 8 == 0)
		((struct xpu_ring_hdr *)mem)->head = next_rand();
	if (next_rand() % 8 == 0)
		((struct xpu_ring_hdr *)mem)->tail = next_rand();
}

static void round_on(unsigned char *mem, struct tally *t)
{
	struct ring *p, *c, *c2;
	struct ring_stats st;
	__u64 seq = 0;

	if (ring__format_mem(mem, LEN, CAP, 0))
		tap_bail("format");
	p = ring__open_mem(mem, LEN, RING_PRODUCER);
	c = ring__open_mem(mem, LEN, RING_CONSUMER);
	fill(p, &seq);
	/* Move the consumer to a random place so the scribble meets every geometry. */
	while (next_rand() % 4 && ring__read(c, out, sizeof(out)) > 0)
		;
	ring__release(c);
	fill(p, &seq);

	scribble(mem);
	drain(c, t); /* a consumer that was attached before the damage */

	/* A producer restarting over the damage must not write outside the ring either. */
	ring__close(p);
	p = ring__open_mem(mem, LEN, RING_PRODUCER);
	if (p) {
		t->producer_reopened++;
		fill(p, &seq);
		drain(c, t);
		ring__close(p);
	}
	ring__stats(c, &st);
	t->corrupt_counted += st.corrupt ? 1 : 0;
	ring__close(c);

	/* And a consumer attaching to a damaged ring. */
	scribble(mem);
	c2 = ring__open_mem(mem, LEN, RING_CONSUMER);
	if (c2) {
		drain(c2, t);
		ring__close(c2);
	} else {
		t->open_refused++;
	}
}

int main(void)
{
	struct tally heap = { 0 }, guarded = { 0 };
	unsigned char *mem, *map;
	long page = sysconf(_SC_PAGESIZE);
	int i;

	mem = aligned_alloc(64, LEN);
	map = mmap(NULL, LEN + 2 * (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!mem || map == MAP_FAILED || mprotect(map + page, LEN, PROT_READ | PROT_WRITE))
		tap_bail("cannot allocate the rings");
	for (i = 0; i < ROUNDS; i++) {
		if (i % 2)
			round_on(map + page, &guarded);
		else
			round_on(mem, &heap);
	}
	tap_ok(1, "%d rounds of scribbling without a crash or an out-of-bounds read", ROUNDS);
	tap_eq_u64(heap.invalid + guarded.invalid, 0, "no invalid record ever handed over");
	tap_eq_u64(heap.stuck + guarded.stuck, 0, "the consumer always reached empty");
	tap_ok(heap.delivered > ROUNDS && guarded.delivered > ROUNDS,
	       "valid records still flow around the damage (%llu, %llu)",
	       (unsigned long long)heap.delivered, (unsigned long long)guarded.delivered);
	tap_ok(heap.corrupt_counted > ROUNDS / 8, "corruption is counted (%llu of %d rounds)",
	       (unsigned long long)heap.corrupt_counted, ROUNDS / 2);
	tap_ok(heap.open_refused + guarded.open_refused > 0,
	       "a damaged header is refused at attach (%llu times)",
	       (unsigned long long)(heap.open_refused + guarded.open_refused));
	tap_ok(heap.producer_reopened > 0, "producers re-attached over damage (%llu times)",
	       (unsigned long long)heap.producer_reopened);
	free(mem);
	munmap(map, LEN + 2 * (size_t)page);
	return tap_done();
}
