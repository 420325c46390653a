// SPDX-License-Identifier: MIT
/*
 * The ring between two threads of one process, so that ThreadSanitizer sees both sides: every
 * access to shared bytes must be ordered by the release/acquire pairs of docs/ring.md. Also a
 * small ring and a producer that outruns the consumer, so drops, LOSS records, futex sleeps
 * and wakes all happen while TSan watches.
 */
#include "shm/ring.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

struct run {
	void *mem;
	__u64 count; /* records the producer attempts */
	int wait_for_room; /* 1: never drop (ring__fits before reserve) */
	__u64 written;
	/* consumer results */
	__u64 records, loss, gaps, bad, loss_records;
	int done; /* the end marker arrived */
	struct ring_stats st;
};

static void *producer_main(void *arg)
{
	struct run *run = arg;
	struct ring *p = ring__open_mem(run->mem, XPU_RING_HDR_SIZE + 65536, RING_PRODUCER);
	__u64 seq;
	__u32 size;
	void *slot;

	if (!p)
		return NULL;
	for (seq = 0; seq < run->count; seq++) {
		size = tr_size_for(seq, TR_MIN_SIZE, 2048);
		if (run->wait_for_room)
			while (!ring__fits(p, size)) {
				ring__flush(p);
				sched_yield();
			}
		slot = ring__reserve(p, size);
		if (slot) {
			tr_build(slot, size, seq);
			ring__commit(p);
			run->written++;
		}
		if (seq % 32 == 31)
			ring__flush(p);
	}
	ring__flush(p);
	/* The last LOSS record needs room: wait for the consumer to make some. */
	while (!ring__fits(p, 8 * sizeof(struct xpu_loss)))
		sched_yield();
	ring__flush(p);
	while (!ring__fits(p, TR_END_SIZE))
		sched_yield();
	slot = ring__reserve(p, TR_END_SIZE);
	tr_build_end(slot);
	ring__commit(p);
	ring__close(p);
	return NULL;
}

static int on_record(const void *rec, __u32 size, void *ctx)
{
	struct run *run = ctx;
	const struct xpu_rec *h = rec;
	__u64 seq;

	if (h->type == XPU_REC_LOSS) {
		run->loss += ((const struct xpu_loss *)rec)->count;
		run->loss_records++;
		return 0;
	}
	if (h->type == XPU_REC_PROC_EXIT) {
		run->done = 1;
		return 1;
	}
	if (tr_check(rec, size, &seq) || seq < run->records + run->gaps) {
		run->bad++;
		return 0;
	}
	run->gaps += seq - (run->records + run->gaps);
	run->records++;
	return 0;
}

static void consume(struct run *run)
{
	struct ring *c = ring__open_mem(run->mem, XPU_RING_HDR_SIZE + 65536, RING_CONSUMER);
	int n;

	if (!c)
		tap_bail("consumer cannot open the ring");
	for (;;) {
		n = ring__consume(c, on_record, run, 256);
		if (n < 0)
			tap_bail("ring__consume: %d", n);
		if (run->done)
			break;
		if (!n)
			ring__wait(c, 10 * 1000 * 1000);
	}
	ring__stats(c, &run->st);
	ring__close(c);
}

static void one_run(const char *what, __u64 count, int wait_for_room)
{
	struct run run = { .count = count, .wait_for_room = wait_for_room };
	pthread_t t;

	run.mem = aligned_alloc(4096, XPU_RING_HDR_SIZE + 65536);
	if (!run.mem || ring__format_mem(run.mem, XPU_RING_HDR_SIZE + 65536, 65536, 0))
		tap_bail("cannot format a memory ring");
	if (pthread_create(&t, NULL, producer_main, &run))
		tap_bail("pthread_create");
	consume(&run);
	pthread_join(t, NULL);
	tap_eq_u64(run.bad, 0, "%s: no damaged or reordered record", what);
	tap_eq_u64(run.records, run.written, "%s: every accepted record arrived", what);
	tap_ok(run.gaps <= run.loss, "%s: every gap is announced by LOSS records", what);
	tap_eq_u64(run.st.lost_full, run.loss, "%s: in-band losses equal the shared counter", what);
	tap_eq_u64(run.st.produced, run.written + 1, "%s: produced counts accepted records", what);
	tap_eq_u64(run.records + run.loss, count, "%s: delivered + announced lost = attempts",
		   what);
	if (wait_for_room)
		tap_eq_u64(run.loss, 0, "%s: a producer that waits for room loses nothing", what);
	tap_diag("%s: %llu of %llu records dropped, %llu consumer sleeps, %llu wakes", what,
		 (unsigned long long)run.loss, (unsigned long long)count,
		 (unsigned long long)run.st.sleeps, (unsigned long long)run.st.wakeups);
	free(run.mem);
}

int main(void)
{
	one_run("lossless", 200000, 1);
	one_run("overrun", 200000, 0);
	return tap_done();
}
