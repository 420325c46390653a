// SPDX-License-Identifier: MIT
/* Ring unit tests, one process: file handling, wrap-around, exact fit, too-big records,
 * full-ring accounting, LOSS records, side locks and re-attach. */
#include "shm/ring.h"

#include <errno.h>
#include <sys/stat.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

#define CAP 4096u

static char dir_path[64];
static int dirfd_;
static _Alignas(8) unsigned char rec[XPU_REC_MAX_SIZE];
static _Alignas(8) unsigned char out[XPU_REC_MAX_SIZE];

struct drained {
	__u64 records;
	__u64 next_seq;
	__u64 bad;
	__u64 loss[XPU_LOSS_CAUSE_MAX];
	__u64 gaps; /* seqs skipped, which LOSS records must explain */
};

/* Read everything readable; test records must arrive in seq order, gaps only after LOSS. */
static void drain(struct ring *c, struct drained *d)
{
	__u64 seq;
	int n;

	while ((n = ring__read(c, out, sizeof(out))) > 0) {
		const struct xpu_rec *h = (const void *)out;

		if (h->type == XPU_REC_LOSS) {
			const struct xpu_loss *l = (const void *)out;

			d->loss[l->cause] += l->count;
			continue;
		}
		if (tr_check(out, (__u32)n, &seq) || seq < d->next_seq) {
			d->bad++;
			continue;
		}
		d->gaps += seq - d->next_seq;
		d->next_seq = seq + 1;
		d->records++;
	}
	ring__release(c);
}

static void test_files(void)
{
	struct stat st;
	struct ring *p, *p2, *c;
	char open_dir[80];
	int fd, od;

	tap_ok(ring__create(dirfd_, "r0", CAP, 0) == 0, "create a ring in a 0700 directory");
	tap_ok(fstatat(dirfd_, "r0", &st, 0) == 0 && (st.st_mode & 0777) == 0600,
	       "ring file is 0600");
	tap_eq_u64(st.st_size, XPU_RING_HDR_SIZE + CAP, "file is header plus capacity");
	tap_ok(ring__create(dirfd_, "r0", CAP, 0) == -EEXIST, "second create is EEXIST");
	tap_ok(ring__create(dirfd_, "bad", 3000, 0) == -EINVAL, "capacity not a power of two");
	tap_ok(ring__create(dirfd_, "bad", CAP, CAP) == -EINVAL, "max_record over a quarter");

	snprintf(open_dir, sizeof(open_dir), "%s/open", dir_path);
	mkdir(open_dir, 0755);
	chmod(open_dir, 0755);
	od = open(open_dir, O_RDONLY | O_DIRECTORY);
	tap_ok(ring__create(od, "r", CAP, 0) == -EPERM, "a world-readable directory is refused");
	close(od);
	rmdir(open_dir);

	fd = openat(dirfd_, "junk", O_CREAT | O_RDWR, 0600);
	tap_ok(ftruncate(fd, XPU_RING_HDR_SIZE + CAP) == 0, "junk file");
	close(fd);
	errno = 0;
	tap_ok(!ring__open(dirfd_, "junk", RING_CONSUMER) && errno == EBADMSG,
	       "a file without a ring header is EBADMSG");

	p = ring__open(dirfd_, "r0", RING_PRODUCER);
	tap_ok(p != NULL, "producer attaches");
	errno = 0;
	p2 = ring__open(dirfd_, "r0", RING_PRODUCER);
	tap_ok(!p2 && errno == EBUSY, "a second producer is EBUSY");
	c = ring__open(dirfd_, "r0", RING_CONSUMER);
	tap_ok(c != NULL, "consumer attaches beside the producer");
	ring__close(p);
	p2 = ring__open(dirfd_, "r0", RING_PRODUCER);
	tap_ok(p2 != NULL, "after close a new producer attaches");
	ring__close(p2);
	ring__close(c);
	tap_ok(ring__unlink(dirfd_, "r0") == 0, "unlink");
}

static void test_wrap(void)
{
	struct ring *p, *c;
	struct ring_stats st;
	struct drained d = { 0 };
	__u64 seq = 0, laps;
	__u32 size;
	int ok = 1;

	ring__create(dirfd_, "wrap", CAP, 0);
	p = ring__open(dirfd_, "wrap", RING_PRODUCER);
	c = ring__open(dirfd_, "wrap", RING_CONSUMER);

	/* Odd sizes walk the write position across every offset, so some records land
	 * exactly at the end and others need a PAD before the wrap. */
	for (laps = 0; laps < 200; laps++) {
		size = tr_size_for(seq, TR_MIN_SIZE, 1000);
		tr_build(rec, size, seq);
		if (ring__write(p, rec, size)) {
			ok = 0;
			break;
		}
		seq++;
		ring__flush(p);
		drain(c, &d);
	}
	tap_ok(ok, "200 records of mixed sizes written one at a time");
	tap_eq_u64(d.records, seq, "every record read back in order");
	tap_eq_u64(d.bad, 0, "no record read back damaged");
	ring__stats(c, &st);
	tap_ok(st.head > 10 * CAP, "the ring wrapped many times (head %llu)",
	       (unsigned long long)st.head);
	tap_eq_u64(st.corrupt, 0, "no corruption counted");

	ring__close(p);
	ring__close(c);
	ring__unlink(dirfd_, "wrap");
}

static void test_exact_fit(void)
{
	struct ring *p, *c;
	struct ring_stats st;
	struct drained d = { 0 };
	__u64 seq = 0;
	__u32 left;

	/* A new ring starts at a lap boundary: records summing to capacity fill it exactly. */
	ring__create(dirfd_, "exact", CAP, 0);
	p = ring__open(dirfd_, "exact", RING_PRODUCER);
	c = ring__open(dirfd_, "exact", RING_CONSUMER);
	for (left = CAP; left; left -= CAP / 8) {
		tr_build(rec, CAP / 8, seq);
		if (ring__write(p, rec, CAP / 8))
			break;
		seq++;
	}
	tap_eq_u64(left, 0, "eight records of capacity/8 fill the ring exactly");
	tr_build(rec, TR_MIN_SIZE, seq++);
	tap_ok(ring__write(p, rec, TR_MIN_SIZE) == -ENOBUFS,
	       "one more record does not fit: ENOBUFS");
	ring__flush(p);
	ring__stats(c, &st);
	tap_ok(st.lost_full == 1 && st.reported == 0,
	       "the flush of a full ring shows the loss, not yet reported (lost %llu, reported %llu)",
	       (unsigned long long)st.lost_full, (unsigned long long)st.reported);
	drain(c, &d);
	tap_eq_u64(d.records, 8, "the full ring drains completely");
	ring__flush(p); /* room again: the LOSS record goes out */
	drain(c, &d);
	tap_eq_u64(d.loss[XPU_LOSS_RING_FULL], 1, "then one LOSS ring_full record arrives");
	ring__stats(c, &st);
	tap_eq_u64(st.head, CAP + 48, "head counts the full lap and the LOSS record");
	tap_eq_u64(st.tail, st.head, "and the consumer has read everything");
	tap_eq_u64(st.reported, 1, "the loss is reported");
	ring__close(p);
	ring__close(c);
	ring__unlink(dirfd_, "exact");
}

static void test_too_big(void)
{
	struct ring *p, *c;
	struct ring_stats st;
	struct drained d = { 0 };
	__u32 max = ring__default_max_record(CAP);

	ring__create(dirfd_, "big", CAP, 0);
	p = ring__open(dirfd_, "big", RING_PRODUCER);
	c = ring__open(dirfd_, "big", RING_CONSUMER);
	tap_eq_u64(max, CAP / 4, "default max_record is a quarter of a small ring");
	tr_build(rec, max, 0);
	tap_ok(ring__write(p, rec, max) == 0, "a record of exactly max_record fits");
	tr_build(rec, max + 8, 1);
	tap_ok(ring__write(p, rec, max + 8) == -E2BIG, "max_record + 8 is E2BIG");
	tap_ok(ring__write(p, rec, 20) == -EINVAL, "a size that is not a multiple of 8 is EINVAL");
	tr_build(rec, TR_MIN_SIZE, 2);
	tap_ok(ring__write(p, rec, TR_MIN_SIZE) == 0, "the next record is written");
	ring__flush(p);
	drain(c, &d);
	tap_eq_u64(d.records, 2, "two records arrive");
	tap_eq_u64(d.loss[XPU_LOSS_TOO_BIG], 1, "one in-band LOSS too_big");
	tap_eq_u64(d.gaps, 1, "the gap is the too-big record");
	ring__stats(p, &st);
	tap_eq_u64(st.lost_too_big, 1, "lost_too_big counted in shared memory");
	tap_eq_u64(st.lost_full, 0, "nothing counted as full");
	ring__close(p);
	ring__close(c);
	ring__unlink(dirfd_, "big");
}

static void test_full_accounting(void)
{
	struct ring *p, *c;
	struct ring_stats st;
	struct drained d = { 0 };
	__u64 seq, attempts = 20000, written = 0;
	__u32 size;

	ring__create(dirfd_, "full", CAP * 4, 0);
	p = ring__open(dirfd_, "full", RING_PRODUCER);
	c = ring__open(dirfd_, "full", RING_CONSUMER);
	/* Bursts larger than the ring with drains in between: drops in every burst. */
	for (seq = 0; seq < attempts; seq++) {
		size = tr_size_for(seq, TR_MIN_SIZE, 512);
		tr_build(rec, size, seq);
		if (ring__write(p, rec, size) == 0)
			written++;
		if (seq % 97 == 96) {
			ring__flush(p);
			drain(c, &d);
		}
	}
	ring__flush(p);
	drain(c, &d);
	ring__flush(p); /* space is back: the last LOSS record goes out */
	drain(c, &d);
	ring__stats(c, &st);
	tap_ok(st.lost_full > 0, "bursts overflowed the ring (%llu lost)",
	       (unsigned long long)st.lost_full);
	tap_eq_u64(st.produced, written, "produced counts accepted records");
	tap_eq_u64(st.produced + st.lost_full + st.lost_too_big, attempts,
		   "produced + lost = attempts");
	tap_eq_u64(st.consumed - st.loss_records, st.produced,
		   "consumed = produced (LOSS records aside)");
	tap_eq_u64(d.records, written, "every accepted record read");
	tap_eq_u64(d.loss[XPU_LOSS_RING_FULL], st.lost_full,
		   "in-band LOSS counts sum to lost_full");
	tap_eq_u64(d.gaps, st.lost_full, "sequence gaps equal the losses");
	tap_eq_u64(d.bad, 0, "no damaged record");
	ring__close(p);
	ring__close(c);
	ring__unlink(dirfd_, "full");
}

static void test_reattach(void)
{
	struct ring *p, *c;
	struct drained d = { 0 };
	__u64 seq;

	ring__create(dirfd_, "re", CAP, 0);
	p = ring__open(dirfd_, "re", RING_PRODUCER);
	c = ring__open(dirfd_, "re", RING_CONSUMER);
	for (seq = 0; seq < 10; seq++) {
		tr_build(rec, 64, seq);
		ring__write(p, rec, 64);
	}
	ring__flush(p);
	tr_build(rec, 64, seq);
	ring__write(p, rec, 64); /* committed but never flushed: dies with the producer */
	tap_ok(ring__read(c, out, sizeof(out)) == 64, "consumer reads one record");
	ring__release(c);
	tap_ok(ring__read(c, out, sizeof(out)) == 64, "and a second, not released");
	ring__close(c); /* releases */
	c = ring__open(dirfd_, "re", RING_CONSUMER);
	d.next_seq = 2;
	drain(c, &d);
	tap_eq_u64(d.records, 8, "a new consumer continues after what the old one released");
	tap_eq_u64(d.gaps, 0, "without a gap");
	ring__close(c);
	ring__close(p); /* close flushes seq 10 */
	p = ring__open(dirfd_, "re", RING_PRODUCER);
	for (seq = 11; seq < 20; seq++) {
		tr_build(rec, 64, seq);
		ring__write(p, rec, 64);
	}
	ring__flush(p);
	c = ring__open(dirfd_, "re", RING_CONSUMER);
	drain(c, &d);
	tap_eq_u64(d.next_seq, 20, "a new producer continues where the old one published");
	tap_eq_u64(d.gaps + d.bad, 0, "nothing lost or damaged across both restarts");
	ring__close(c);
	ring__close(p);
	ring__unlink(dirfd_, "re");
}

/* Hold mode: nothing goes back to the producer until the consumer says so, whatever it
 * reads, waits on or closes; a consumer that dies holding re-reads from its last release. */
static void test_hold(void)
{
	struct ring *p, *c;
	struct drained d = { 0 };
	__u64 seq, pos;
	int n = 0;

	ring__create(dirfd_, "h", CAP, 0);
	p = ring__open(dirfd_, "h", RING_PRODUCER);
	c = ring__open(dirfd_, "h", RING_CONSUMER);
	ring__hold(c, true);
	for (seq = 0; seq < CAP / 64; seq++) {
		tr_build(rec, 64, seq);
		ring__write(p, rec, 64);
	}
	ring__flush(p);
	while (ring__read(c, out, sizeof(out)) == 64)
		n++;
	tap_eq_u64((__u64)n, CAP / 64, "a held consumer reads the whole ring");
	tap_eq_u64(ring__unreleased(c), CAP, "and has released none of it");
	tap_eq_u64(ring__read_pos(c), CAP, "its read position is where the last record ends");
	tap_ok(ring__wait(c, 0) == 0 && ring__unreleased(c) == CAP, "waiting releases nothing");
	tap_ok(ring__write(p, rec, 64) == -ENOBUFS, "so the producer finds no room");
	ring__close(c); /* dies holding */
	c = ring__open(dirfd_, "h", RING_CONSUMER);
	ring__hold(c, true);
	pos = ring__read_pos(c);
	drain(c, &d); /* releases */
	tap_ok(pos == 0 && d.records == CAP / 64 && d.gaps == 0,
	       "a new consumer re-reads everything the held one had read");
	tap_eq_u64(ring__unreleased(c), 0, "an explicit release gives the space back");
	tap_ok(ring__write(p, rec, 64) == 0, "and the producer writes again");
	ring__close(c);
	ring__close(p);
	ring__unlink(dirfd_, "h");
}

static void test_wait_and_observer(void)
{
	struct ring *p, *c, *o;
	struct ring_stats st;
	__u64 t0;
	int r;

	ring__create(dirfd_, "w", CAP, 0);
	p = ring__open(dirfd_, "w", RING_PRODUCER);
	c = ring__open(dirfd_, "w", RING_CONSUMER);
	o = ring__open(dirfd_, "w", RING_OBSERVER);
	t0 = tr_now_ns();
	r = ring__wait(c, 20 * 1000 * 1000);
	tap_ok(r == 0 && tr_now_ns() - t0 >= 15 * 1000 * 1000, "wait on empty times out");
	tr_build(rec, 64, 0);
	ring__write(p, rec, 64);
	tap_ok(ring__wait(c, 1000000000ull) == 0, "an unflushed record does not wake");
	ring__flush(p);
	tap_ok(ring__wait(c, 1000000000ull) == 1, "a flushed record is readable");
	tap_ok(ring__read(c, out, 63) == -EMSGSIZE, "a small buffer is EMSGSIZE, nothing lost");
	tap_ok(ring__read(c, out, sizeof(out)) == 64, "then it reads");
	ring__release(c);
	tap_ok(o != NULL, "an observer attaches without taking a side");
	ring__stats(o, &st);
	tap_eq_u64(st.produced, 1, "observer sees produced");
	tap_eq_u64(st.consumed, 1, "observer sees consumed");
	tap_ok(st.sleeps >= 2, "consumer sleeps are counted");
	ring__close(o);
	ring__close(c);
	ring__close(p);
	ring__unlink(dirfd_, "w");
}

int main(void)
{
	dirfd_ = tr_make_dir(dir_path);
	if (dirfd_ < 0)
		tap_bail("cannot make a temporary directory");
	test_files();
	test_wrap();
	test_exact_fit();
	test_too_big();
	test_full_accounting();
	test_reattach();
	test_wait_and_observer();
	test_hold();
	tr_remove_dir(dir_path, dirfd_);
	return tap_done();
}
