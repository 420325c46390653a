// SPDX-License-Identifier: MIT
/*
 * Restarts: kill -9 either side of a ring mid-stream and start a new one, as the supervisor
 * does. A new consumer must continue exactly where the dead one released (no gap; it may see
 * again only the records the dead one had read and not yet released, at most one batch); a
 * new producer must continue after the last record the dead one flushed (nothing it flushed
 * is lost). Both sides' locks must die with them so the new process attaches at once.
 */
#include "shm/ring.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

#define CAP (256u << 10)
#define N_RECORDS 3000000ull
#define BATCH 64u
#define SECOND_BASE (1ull << 40)

/* Shared between the test's processes (MAP_SHARED|MAP_ANONYMOUS before fork). */
struct shared {
	__u64 consumed; /* records seen by the current consumer */
	__u64 flushed_seq; /* one past the last seq the current producer flushed */
	__u64 first_seq[2]; /* first seq each consumer saw */
	__u64 last_seq[2]; /* last seq each consumer saw */
	__u64 bad[2];
	__u64 gaps[2];
	__u64 p1_seen, p2_seen, p2_first;
	unsigned char seen[N_RECORDS]; /* times each seq of the consumer test was delivered */
};

static struct shared *sh;
static int dirfd_;

static void wait_room(struct ring *p, __u32 size)
{
	while (!ring__fits(p, size)) {
		ring__flush(p);
		sched_yield();
	}
}

/* Write seq in [base, base + n), waiting for room (no loss), flushing every 16 records and
 * noting in shared memory how far it has flushed. */
static int produce(__u64 base, __u64 n, int end)
{
	_Alignas(8) unsigned char endrec[TR_END_SIZE];
	struct ring *p = ring__open(dirfd_, "r", RING_PRODUCER);
	__u64 seq;
	__u32 size;
	void *slot;

	if (!p)
		return 111;
	for (seq = base; seq < base + n; seq++) {
		size = tr_size_for(seq, TR_MIN_SIZE, 512);
		wait_room(p, size);
		slot = ring__reserve(p, size);
		tr_build(slot, size, seq);
		ring__commit(p);
		if (seq % 16 == 15) {
			ring__flush(p);
			__atomic_store_n(&sh->flushed_seq, seq + 1, __ATOMIC_RELEASE);
		}
	}
	if (end) {
		wait_room(p, TR_END_SIZE);
		tr_build_end(endrec);
		ring__write(p, endrec, TR_END_SIZE);
	}
	ring__close(p);
	__atomic_store_n(&sh->flushed_seq, base + n, __ATOMIC_RELEASE);
	return 0;
}

struct cons {
	int who;
	__u64 next;
	int started, done;
};

static int on_record(const void *rec, __u32 size, void *ctx)
{
	struct cons *c = ctx;
	__u64 seq;

	if (((const struct xpu_rec *)rec)->type == XPU_REC_PROC_EXIT) {
		c->done = 1;
		return 1;
	}
	if (tr_check(rec, size, &seq) || seq >= N_RECORDS) {
		sh->bad[c->who]++;
		return 0;
	}
	if (!c->started) {
		c->started = 1;
		sh->first_seq[c->who] = seq;
	} else if (seq != c->next) {
		sh->gaps[c->who]++;
	}
	c->next = seq + 1;
	sh->last_seq[c->who] = seq;
	sh->seen[seq]++;
	__atomic_store_n(&sh->consumed, sh->consumed + 1, __ATOMIC_RELEASE);
	return 0;
}

static int consume(int who)
{
	struct cons c = { .who = who };
	struct ring *r = ring__open(dirfd_, "r", RING_CONSUMER);
	int idle = 0, n;

	if (!r)
		return errno == EBUSY ? 3 : 111;
	while (!c.done && idle < 100) {
		n = ring__consume(r, on_record, &c, BATCH); /* releases each batch */
		if (n > 0)
			idle = 0;
		else if (!ring__wait(r, 100 * 1000 * 1000))
			idle++;
	}
	ring__close(r);
	return c.done ? 0 : 4;
}

static pid_t spawn(int (*fn)(int), int arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

static int producer_main(int arg)
{
	(void)arg;
	return produce(0, N_RECORDS, 1);
}

static int exit_code(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_consumer_kill(void)
{
	pid_t prod, c1, c2;
	__u64 i, missing = 0, dup = 0, over = 0, dup_lo = ~0ull, dup_hi = 0;

	ring__create(dirfd_, "r", CAP, 0);
	prod = spawn(producer_main, 0);
	c1 = spawn(consume, 0);
	while (__atomic_load_n(&sh->consumed, __ATOMIC_ACQUIRE) < N_RECORDS / 3)
		sched_yield();
	kill(c1, SIGKILL);
	tap_eq_u64(exit_code(c1), 128 + SIGKILL, "first consumer killed with SIGKILL mid-stream");
	c2 = spawn(consume, 1);
	tap_eq_u64(exit_code(c2), 0, "second consumer attached at once and read to the end");
	tap_eq_u64(exit_code(prod), 0, "producer finished");

	for (i = 0; i < N_RECORDS; i++) {
		if (!sh->seen[i])
			missing++;
		else if (sh->seen[i] == 2) {
			dup++;
			dup_lo = i < dup_lo ? i : dup_lo;
			dup_hi = i > dup_hi ? i : dup_hi;
		} else if (sh->seen[i] > 2)
			over++;
	}
	tap_diag("killed after %llu records; second consumer started at %llu; %llu seen twice",
		 (unsigned long long)sh->last_seq[0] + 1, (unsigned long long)sh->first_seq[1],
		 (unsigned long long)dup);
	tap_eq_u64(missing, 0, "no record lost across the consumer restart");
	tap_eq_u64(sh->bad[0] + sh->bad[1], 0, "no damaged record");
	tap_eq_u64(sh->gaps[0] + sh->gaps[1], 0, "each consumer saw a contiguous stream");
	tap_ok(sh->first_seq[1] <= sh->last_seq[0] + 1, "the second consumer starts with no gap");
	tap_ok(dup <= BATCH && over == 0,
	       "only the unreleased last batch is delivered twice (%llu <= %u)",
	       (unsigned long long)dup, BATCH);
	tap_ok(!dup || (dup_lo == sh->first_seq[1] && dup_hi - dup_lo + 1 == dup),
	       "and those are exactly the records between the release point and the kill");
	ring__unlink(dirfd_, "r");
}

static int p1_main(int arg)
{
	(void)arg;
	return produce(0, N_RECORDS * 4, 0); /* killed long before the end */
}

static int p2_main(int arg)
{
	(void)arg;
	return produce(SECOND_BASE, 100000, 1);
}

static int on_record_p(const void *rec, __u32 size, void *ctx)
{
	struct cons *c = ctx;
	__u64 seq;

	if (((const struct xpu_rec *)rec)->type == XPU_REC_PROC_EXIT) {
		c->done = 1;
		return 1;
	}
	if (tr_check(rec, size, &seq)) {
		sh->bad[0]++;
		return 0;
	}
	if (seq >= SECOND_BASE) {
		if (!sh->p2_seen++)
			sh->p2_first = seq;
	} else {
		if (seq != sh->p1_seen || sh->p2_seen)
			sh->gaps[0]++;
		sh->p1_seen++;
	}
	__atomic_store_n(&sh->consumed, sh->consumed + 1, __ATOMIC_RELEASE);
	return 0;
}

static void test_producer_kill(void)
{
	struct cons c = { 0 };
	struct ring *r;
	__u64 flushed;
	pid_t p1, p2;
	int n, idle = 0;

	memset(sh, 0, offsetof(struct shared, seen));
	ring__create(dirfd_, "r", CAP, 0);
	r = ring__open(dirfd_, "r", RING_CONSUMER);
	p1 = spawn(p1_main, 0);
	while (__atomic_load_n(&sh->consumed, __ATOMIC_ACQUIRE) < N_RECORDS / 3) {
		n = ring__consume(r, on_record_p, &c, BATCH);
		if (n <= 0)
			ring__wait(r, 10 * 1000 * 1000);
	}
	kill(p1, SIGKILL);
	tap_eq_u64(exit_code(p1), 128 + SIGKILL, "first producer killed with SIGKILL mid-stream");
	flushed = __atomic_load_n(&sh->flushed_seq, __ATOMIC_ACQUIRE);
	p2 = spawn(p2_main, 0);
	while (!c.done && idle < 100) {
		n = ring__consume(r, on_record_p, &c, BATCH);
		if (n > 0)
			idle = 0;
		else if (!ring__wait(r, 100 * 1000 * 1000))
			idle++;
	}
	tap_eq_u64(exit_code(p2), 0, "second producer attached at once and finished");
	ring__close(r);
	tap_ok(c.done, "the second producer's end marker arrived");
	tap_ok(sh->p1_seen >= flushed,
	       "every record the dead producer flushed arrived (%llu >= %llu)",
	       (unsigned long long)sh->p1_seen, (unsigned long long)flushed);
	tap_eq_u64(sh->gaps[0], 0,
		   "the dead producer's records arrived in order, before the new ones");
	tap_eq_u64(sh->p2_seen, 100000, "all of the new producer's records arrived");
	tap_eq_u64(sh->p2_first, SECOND_BASE, "starting with its first");
	tap_eq_u64(sh->bad[0], 0, "no damaged record around the restart");
	ring__unlink(dirfd_, "r");
}

int main(void)
{
	char path[64];

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	dirfd_ = tr_make_dir(path);
	if (sh == MAP_FAILED || dirfd_ < 0)
		tap_bail("cannot set up shared memory and a session directory");
	test_consumer_kill();
	test_producer_kill();
	tr_remove_dir(path, dirfd_);
	return tap_done();
}
