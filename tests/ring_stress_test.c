// SPDX-License-Identifier: MIT
/*
 * Two processes, one ring file, hundreds of MB of records of random sizes, every byte
 * checked. First a producer that waits for room (nothing may be lost), then one that does
 * not (losses are expected, and every gap in the sequence must be announced in-band by LOSS
 * records whose counts add up to the ring's counters exactly).
 */
#include "shm/ring.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

#define CAP (1u << 20)
#define PHASE_BYTES (512ull << 20) /* per phase; two phases */
#define MAX_SIZE 4096u

struct producer_report {
	__u64 attempts;
	__u64 written;
	__u64 end_seq;
};

static _Alignas(8) unsigned char end_rec[TR_END_SIZE];

static int produce(int dirfd, int report_fd)
{
	struct producer_report rep = { 0 };
	struct ring *p = ring__open(dirfd, "stress", RING_PRODUCER);
	__u64 bytes, seq = 0;
	int phase;
	__u32 size;
	void *slot;

	if (!p)
		return 111;
	for (phase = 0; phase < 2; phase++) {
		for (bytes = 0; bytes < PHASE_BYTES; seq++) {
			size = tr_size_for(seq, TR_MIN_SIZE, MAX_SIZE);
			bytes += size;
			if (phase == 0)
				while (!ring__fits(p, size)) {
					ring__flush(p);
					sched_yield();
				}
			rep.attempts++;
			slot = ring__reserve(p, size);
			if (!slot)
				continue;
			tr_build(slot, size, seq);
			ring__commit(p);
			rep.written++;
			if (seq % 16 == 15)
				ring__flush(p);
		}
		ring__flush(p);
	}
	/* Wait for room for the last LOSS records and the end marker. */
	while (!ring__fits(p, TR_END_SIZE)) {
		ring__flush(p);
		sched_yield();
	}
	tr_build_end(end_rec);
	ring__write(p, end_rec, TR_END_SIZE);
	ring__close(p);
	rep.end_seq = seq;
	return write(report_fd, &rep, sizeof(rep)) == sizeof(rep) ? 0 : 111;
}

struct consumer_state {
	__u64 next_seq, records, bytes, bad, gaps, loss;
	int done;
};

static int on_record(const void *rec, __u32 size, void *ctx)
{
	struct consumer_state *s = ctx;
	const struct xpu_rec *h = rec;
	__u64 seq;

	if (h->type == XPU_REC_LOSS) {
		s->loss += ((const struct xpu_loss *)rec)->count;
		return 0;
	}
	if (h->type == XPU_REC_PROC_EXIT) {
		s->done = 1;
		return 1;
	}
	if (tr_check(rec, size, &seq) || seq < s->next_seq) {
		s->bad++;
		return 0;
	}
	s->gaps += seq - s->next_seq;
	s->next_seq = seq + 1;
	s->records++;
	s->bytes += size;
	return 0;
}

int main(void)
{
	struct consumer_state s = { 0 };
	struct producer_report rep = { 0 };
	struct ring_stats st;
	char path[64];
	int dirfd, pipefd[2], status;
	struct ring *c;
	__u64 t0, idle = 0;
	pid_t pid;
	int n;

	dirfd = tr_make_dir(path);
	if (dirfd < 0 || pipe(pipefd))
		tap_bail("cannot make a session directory");
	if (ring__create(dirfd, "stress", CAP, MAX_SIZE))
		tap_bail("ring__create");
	c = ring__open(dirfd, "stress", RING_CONSUMER);
	if (!c)
		tap_bail("consumer attach");
	t0 = tr_now_ns();
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		_exit(produce(dirfd, pipefd[1]));
	}
	close(pipefd[1]);
	while (!s.done) {
		n = ring__consume(c, on_record, &s, 512);
		if (n < 0)
			tap_bail("ring__consume: %d", n);
		if (n)
			idle = 0;
		else if (ring__wait(c, 100 * 1000 * 1000) == 0 && ++idle > 100)
			break; /* 10 s without a record: the producer is gone */
	}
	ring__stats(c, &st);
	ring__close(c);
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer process exited cleanly");
	tap_ok(read(pipefd[0], &rep, sizeof(rep)) == sizeof(rep), "producer reported its counts");
	tap_ok(s.done, "the end marker arrived");
	tap_diag("%.0f MB checked in %.2f s; %llu of %llu records lost while overrunning",
		 (double)s.bytes / 1e6, (double)(tr_now_ns() - t0) / 1e9,
		 (unsigned long long)s.loss, (unsigned long long)rep.attempts);
	tap_ok(s.bytes >= PHASE_BYTES, "at least %llu MB delivered and checked byte for byte",
	       PHASE_BYTES >> 20);
	tap_eq_u64(s.bad, 0, "no damaged, reordered or duplicated record");
	tap_eq_u64(s.records, rep.written, "every accepted record arrived");
	tap_eq_u64(rep.end_seq, rep.attempts, "producer attempted every sequence number once");
	tap_eq_u64(s.gaps + (rep.end_seq - s.next_seq), s.loss,
		   "every gap (and drop at the end) is announced by in-band LOSS records");
	tap_eq_u64(s.records + s.loss, rep.attempts, "delivered + announced lost = attempts");
	tap_eq_u64(st.lost_full, s.loss, "LOSS records add up to the ring's lost_full");
	tap_eq_u64(st.produced, rep.written + 1, "produced = accepted records (and the marker)");
	tap_eq_u64(st.produced + st.lost_full + st.lost_too_big, rep.attempts + 1,
		   "produced + lost = attempts, exactly");
	tap_eq_u64(st.consumed - st.loss_records, st.produced, "consumed = produced");
	tap_eq_u64(st.corrupt, 0, "no corruption counted");
	tr_remove_dir(path, dirfd);
	return tap_done();
}
