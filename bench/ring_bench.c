// SPDX-License-Identifier: MIT
/*
 * ring_bench - throughput of the xpusup ring between two processes, next to a minimal
 * fixed-slot SPSC ring doing the same work per record, so that what our ring adds
 * (variable-length framing, a copy-out and validation per record, loss accounting, batched
 * publishing, futex sleeps) shows as one ratio per record size.
 *
 * For each size and each repetition: a fresh ring of RING_CAPACITY data bytes in a private
 * 0700 directory under /dev/shm, this process as the producer and a forked child as the
 * consumer, each pinned to its own CPU when there are two. The producer writes count
 * records numbered 0..count-1; the consumer checks that it got every one of them, in order.
 * Rates are count over the time from the producer's first record to the consumer's last.
 *
 * Work per record, the same in both rings: the producer writes the 40-byte header of an
 * XPU_REC_STRING (type, size, ts_ns, pid, tid, id = sequence number, kind, len) in place and
 * leaves the text bytes as the ring memory holds them; the consumer copies the whole record
 * out of shared memory and reads the sequence number from its copy. Filling the text
 * (tr_build) would cost more than either ring at 1 KiB and hide the difference we measure.
 * Our consumer also runs the default validator on each copy: that is part of our ring.
 *
 * The fixed-slot ring is Rigtorp's SPSCQueue shape: slots of exactly the record size,
 * free-running head and tail on their own 128-byte pairs of cache lines, each side caching
 * the other's index, both busy-polling. By default each side stores its index every
 * FLUSH_EVERY slots (and before it waits), as our producer flushes every FLUSH_EVERY records
 * and our consumer releases once per ring__consume call; --slot-batch 1 gives the textbook
 * ring that stores per slot, which on this VM settles into either of two speeds (a full ring
 * where every slot freed costs a cache-line round trip, or not) and makes a poor yardstick.
 * Its ordering, labelled as in shm/ring.c:
 *
 *   producer                                   consumer
 *   (SF) tail = load_acquire(tail) when full   (SC) head = load_acquire(head) when empty
 *   write the slot                             copy the slot out
 *   (SA) store_release(head, head)             (SE) store_release(tail, tail)
 *        every batch slots and before waiting       every batch slots and before waiting
 *
 * (SA) pairs with (SC): the consumer sees a slot's bytes before the head that covers them.
 * (SE) pairs with (SF): the producer rewrites a slot only after the consumer's copy is done.
 */
#include "shm/ring.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "tests/ring_util.h"

#define RING_CAPACITY (1ull << 20) /* data bytes of both rings */
#define FLUSH_EVERY 64 /* records per ring__flush: a batch, as a real producer publishes */
#define CONSUME_MAX 256 /* records per ring__consume call */
#define WAIT_NS 1000000ull /* ring__wait timeout: short, the consumer also checks liveness */
#define SPINS_BEFORE_YIELD 256
#define MAX_SIZES 16
#define MAX_REPEAT 99
#define MAX_SLOT_BATCH 4096
#define SLOT_LINE 128 /* x86's adjacent-line prefetcher moves cache lines in pairs */

#define EXIT_USAGE 100
#define EXIT_SYSTEM 111

#define load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

enum ring_kind {
	KIND_XPUSUP,
	KIND_FIXED_SLOT,
};

struct options {
	__u64 count; /* 0: default_count(size) */
	__u32 sizes[MAX_SIZES];
	unsigned int n_sizes;
	unsigned int repeat;
	unsigned int slot_batch; /* fixed-slot ring: slots per index store, 1 for the textbook ring */
};

struct bench {
	struct options opt;
	char dir_path[64];
	int dirfd;
	int producer_cpu; /* -1: not pinned */
	int consumer_cpu;
};

/* What the consumer saw, checked by the producer once the child has exited. */
struct tally {
	__u64 received;
	__u64 next_seq;
	__u64 out_of_order;
	__u64 empty; /* times the consumer found nothing to read and had to wait */
};

/* Per run, in a shared anonymous mapping: the start handshake and the consumer's results. */
struct run_ctl {
	_Alignas(SLOT_LINE) __u32 consumer_ready;
	_Alignas(SLOT_LINE) __u64 end_ns;
	struct tally tally;
};

struct slot_ring {
	_Alignas(SLOT_LINE) __u64 head; /* slots ever published; written by the producer only */
	_Alignas(SLOT_LINE) __u64 tail; /* slots ever copied out; written by the consumer only */
	/* the slots follow, from offset sizeof(struct slot_ring), a multiple of SLOT_LINE */
};

struct run_result {
	double rec_per_s;
	__u64 full; /* times the producer found no room and had to wait */
	__u64 empty; /* times the consumer found nothing to read and had to wait */
	__u64 sleeps; /* xpusup only: consumer futex sleeps and producer wake-ups */
	__u64 wakeups;
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* The side we wait for is usually a few hundred ns away: spin first, then yield so that a
 * peer sharing our CPU (fewer than two CPUs, or an overcommitted host) gets to run. */
static void backoff(unsigned int *spins)
{
	if (++*spins < SPINS_BEFORE_YIELD)
		cpu_relax();
	else
		sched_yield();
}

/* Whether the consumer child has exited; it is not reaped, so its status is still there for
 * the waitpid that follows every run. Called only on slow paths. */
static bool child_gone(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return true;
	return si.si_pid == pid;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* The per-record payload work of both producers; see the top of the file. */
static inline void tally_record(struct tally *t, const void *rec)
{
	const struct xpu_string *s = rec;

	if (s->id != t->next_seq)
		t->out_of_order++;
	t->next_seq = s->id + 1;
	t->received++;
}

/* ---- the xpusup ring ---- */

static int on_record(const void *rec, __u32 size, void *ctx)
{
	tally_record(ctx, rec);
	return 0;
}

static int xpusup_consume(struct ring *r, __u64 count, struct tally *t)
{
	int n;

	while (t->received < count) {
		n = ring__consume(r, on_record, t, CONSUME_MAX);
		if (n < 0)
			return n;
		if (!n) {
			t->empty++;
			ring__wait(r, WAIT_NS);
		}
	}
	return 0;
}

/* The bench counts records delivered, so its producer waits rather than drops: it reserves
 * with ring__try_reserve, which counts no loss, and on EAGAIN publishes what it has (the
 * consumer frees space only by reading, and it cannot read what is unpublished) and backs
 * off until the record fits. */
static int xpusup_produce(struct ring *r, __u32 size, __u64 count, pid_t consumer, __u64 *full)
{
	unsigned int spins;
	__u64 seq;
	void *p;

	for (seq = 0; seq < count; seq++) {
		p = ring__try_reserve(r, size);
		if (!p) {
			if (errno != EAGAIN)
				return -errno;
			++*full;
			ring__flush(r);
			spins = 0;
			while (!(p = ring__try_reserve(r, size))) {
				if (errno != EAGAIN)
					return -errno;
				backoff(&spins);
				if (spins % 4096 == 0 && child_gone(consumer))
					return -EPIPE;
			}
		}
		tr_build_header(p, size, seq);
		ring__commit(r);
		if ((seq + 1) % FLUSH_EVERY == 0)
			ring__flush(r);
	}
	ring__flush(r);
	return 0;
}

/* ---- the fixed-slot baseline ---- */

static size_t slot_ring_len(__u32 size)
{
	return sizeof(struct slot_ring) + RING_CAPACITY / size * size;
}

/*
 * The consumer publishes its tail every batch slots and whenever it finds the ring empty;
 * batch 1 is the textbook ring. With a batch the producer, waiting on a full ring, sees
 * room in runs of batch slots rather than one slot per cache-line transfer.
 */
static int slot_consume(struct slot_ring *sr, __u32 size, __u64 count, unsigned int batch,
			struct tally *t)
{
	unsigned char *slots = (unsigned char *)sr + sizeof(*sr);
	__u64 nslots = RING_CAPACITY / size, tail = 0, released = 0, cached_head = 0, pos = 0;
	unsigned int spins;
	void *copy;

	copy = aligned_alloc(XPU_REC_ALIGN, XPU_ROUND_UP8(size));
	if (!copy)
		return -ENOMEM;
	while (t->received < count) {
		spins = 0;
		while (tail == cached_head) {
			cached_head = load_acquire(&sr->head); /* (SC) pairs with (SA) */
			if (tail != cached_head)
				break;
			if (tail != released) {
				store_release(&sr->tail, tail); /* (SE) pairs with (SF) */
				released = tail;
			}
			t->empty += !spins;
			backoff(&spins);
		}
		memcpy(copy, slots + pos * size, size);
		/* The copy is the work being measured: keep the compiler from shrinking it to
		 * the eight bytes that tally_record reads. */
		__asm__ volatile("" : : "r"(copy) : "memory");
		tally_record(t, copy);
		if (++pos == nslots)
			pos = 0;
		if (++tail - released >= batch) {
			store_release(&sr->tail, tail); /* (SE) pairs with (SF) */
			released = tail;
		}
	}
	free(copy);
	return 0;
}

/* The producer publishes its head every batch slots, whenever it finds the ring full, and
 * at the end. */
static int slot_produce(struct slot_ring *sr, __u32 size, __u64 count, unsigned int batch,
			pid_t consumer, __u64 *full)
{
	unsigned char *slots = (unsigned char *)sr + sizeof(*sr);
	__u64 nslots = RING_CAPACITY / size, head = 0, published = 0, cached_tail = 0, pos = 0;
	unsigned int spins;
	__u64 seq;

	for (seq = 0; seq < count; seq++) {
		spins = 0;
		while (head - cached_tail == nslots) {
			cached_tail = load_acquire(&sr->tail); /* (SF) pairs with (SE) */
			if (head - cached_tail < nslots)
				break;
			if (head != published) {
				store_release(&sr->head, head); /* (SA) pairs with (SC) */
				published = head;
			}
			*full += !spins;
			backoff(&spins);
			if (spins % 4096 == 0 && child_gone(consumer))
				return -EPIPE;
		}
		tr_build_header(slots + pos * size, size, seq);
		if (++pos == nslots)
			pos = 0;
		if (++head - published >= batch) {
			store_release(&sr->head, head); /* (SA) pairs with (SC) */
			published = head;
		}
	}
	store_release(&sr->head, head); /* (SA) pairs with (SC) */
	return 0;
}

/* ---- one run: fork, consume in the child, produce here ---- */

static const char *kind_name(enum ring_kind kind)
{
	return kind == KIND_XPUSUP ? "xpusup" : "fixed-slot";
}

/* The consumer child. Never returns: its results go to ctl, its verdict to the exit code. */
static void __attribute__((noreturn))
consumer_main(const struct bench *b, enum ring_kind kind, void *slot_map, __u32 size, __u64 count,
	      struct run_ctl *ctl, pid_t parent)
{
	struct ring *r = NULL;
	struct tally t = { 0 };
	int err;

	/* A producer that dies must not leave us polling forever. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(EXIT_SYSTEM);
	err = pin_to(b->consumer_cpu);
	if (err) {
		fprintf(stderr, "ring_bench: unable to pin the consumer to CPU %d: %s\n",
			b->consumer_cpu, strerror(-err));
		_exit(EXIT_SYSTEM);
	}
	if (kind == KIND_XPUSUP) {
		r = ring__open(b->dirfd, "ring", RING_CONSUMER);
		if (!r) {
			fprintf(stderr, "ring_bench: unable to open the ring as consumer: %s\n",
				strerror(errno));
			_exit(EXIT_SYSTEM);
		}
	}
	store_release(&ctl->consumer_ready, 1); /* pairs with the load in wait_consumer() */
	if (kind == KIND_XPUSUP)
		err = xpusup_consume(r, count, &t);
	else
		err = slot_consume(slot_map, size, count, b->opt.slot_batch, &t);
	ctl->end_ns = tr_now_ns();
	ctl->tally = t;
	ring__close(r);
	if (err) {
		fprintf(stderr, "ring_bench: unable to consume from the %s ring: %s\n",
			kind_name(kind), strerror(-err));
		_exit(EXIT_SYSTEM);
	}
	_exit(0);
}

static int wait_consumer(struct run_ctl *ctl, pid_t consumer)
{
	unsigned int spins = 0;

	while (!load_acquire(&ctl->consumer_ready)) { /* pairs with the store in consumer_main() */
		backoff(&spins);
		if (spins % 4096 == 0 && child_gone(consumer))
			return -EPIPE;
	}
	return 0;
}

/* The consumer's exit and tally, checked: every record, in order, none twice. */
static int check_consumer(enum ring_kind kind, pid_t consumer, const struct run_ctl *ctl,
			  __u64 count)
{
	const struct tally *t = &ctl->tally;
	int status;

	if (waitpid(consumer, &status, 0) != consumer)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "ring_bench: unable to verify the %s run: consumer %s %d\n",
			kind_name(kind), WIFEXITED(status) ? "exited with" : "killed by signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -ECHILD;
	}
	if (t->received != count || t->next_seq != count || t->out_of_order) {
		fprintf(stderr,
			"ring_bench: unable to verify the %s run: consumer got %" PRIu64
			" of %" PRIu64 " records, last seq %" PRId64 ", %" PRIu64 " out of order\n",
			kind_name(kind), (uint64_t)t->received, (uint64_t)count,
			(int64_t)t->next_seq - 1, (uint64_t)t->out_of_order);
		return -EBADMSG;
	}
	return 0;
}

static int xpusup_check_stats(struct ring *r, __u64 count, struct run_result *res)
{
	struct ring_stats st;

	ring__stats(r, &st);
	res->sleeps = st.sleeps;
	res->wakeups = st.wakeups;
	if (st.produced != count || st.consumed != count || st.lost_full || st.lost_too_big ||
	    st.corrupt) {
		fprintf(stderr,
			"ring_bench: unable to verify the xpusup run: produced %" PRIu64
			" consumed %" PRIu64 " lost_full %" PRIu64 " lost_too_big %" PRIu64
			" corrupt %" PRIu64 "\n",
			(uint64_t)st.produced, (uint64_t)st.consumed, (uint64_t)st.lost_full,
			(uint64_t)st.lost_too_big, (uint64_t)st.corrupt);
		return -EBADMSG;
	}
	return 0;
}

static int run_once(const struct bench *b, enum ring_kind kind, __u32 size, __u64 count,
		    struct run_result *res)
{
	struct run_ctl *ctl;
	struct ring *r = NULL;
	void *slot_map = NULL;
	size_t slot_len = slot_ring_len(size);
	__u64 start_ns;
	pid_t consumer;
	int err, status;

	memset(res, 0, sizeof(*res));
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return -errno;
	if (kind == KIND_XPUSUP) {
		err = ring__create(b->dirfd, "ring", RING_CAPACITY, 0);
		if (err)
			goto unmap_ctl;
	} else {
		slot_map = mmap(NULL, slot_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				-1, 0);
		if (slot_map == MAP_FAILED) {
			err = -errno;
			goto unmap_ctl;
		}
	}

	fflush(NULL); /* or the child's exit would print our buffered output twice */
	consumer = fork();
	if (consumer < 0) {
		err = -errno;
		goto remove_ring;
	}
	if (!consumer)
		consumer_main(b, kind, slot_map, size, count, ctl, getppid());

	if (kind == KIND_XPUSUP) {
		r = ring__open(b->dirfd, "ring", RING_PRODUCER);
		if (!r) {
			err = -errno;
			goto reap_consumer;
		}
	}
	err = wait_consumer(ctl, consumer);
	if (err)
		goto reap_consumer;
	start_ns = tr_now_ns();
	if (kind == KIND_XPUSUP)
		err = xpusup_produce(r, size, count, consumer, &res->full);
	else
		err = slot_produce(slot_map, size, count, b->opt.slot_batch, consumer, &res->full);
	if (err)
		goto reap_consumer;
	err = check_consumer(kind, consumer, ctl, count);
	if (err)
		goto close_ring;
	res->rec_per_s = (double)count * 1e9 / (double)(ctl->end_ns - start_ns);
	res->empty = ctl->tally.empty;
	if (r)
		err = xpusup_check_stats(r, count, res);
	goto close_ring;

reap_consumer:
	/* A consumer that failed has said why; one still waiting for records gets no more. */
	if (!child_gone(consumer))
		kill(consumer, SIGKILL);
	if (waitpid(consumer, &status, 0) == consumer && err == -EPIPE && WIFSIGNALED(status))
		fprintf(stderr,
			"ring_bench: unable to run the %s ring: consumer killed by signal %d\n",
			kind_name(kind), WTERMSIG(status));
close_ring:
	ring__close(r);
remove_ring:
	if (slot_map)
		munmap(slot_map, slot_len);
	else
		ring__unlink(b->dirfd, "ring");
unmap_ctl:
	munmap(ctl, sizeof(*ctl));
	return err;
}

/* ---- driver ---- */

/* About 1-2 s per xpusup run on the 2-vCPU VM of docs/performance.md. */
static __u64 default_count(__u32 size)
{
	if (size <= 64)
		return 150000000;
	if (size <= 256)
		return 60000000;
	if (size <= 1024)
		return 40000000;
	return 40000000ull * 1024 / size;
}

static int bench_size(const struct bench *b, __u32 size)
{
	double ours[MAX_REPEAT], base[MAX_REPEAT], m_ours, m_base;
	__u64 count = b->opt.count ? b->opt.count : default_count(size);
	struct run_result res_ours, res_base;
	unsigned int i;
	int err;

	for (i = 0; i < b->opt.repeat; i++) {
		/* Interleaved, and alternating who goes first, so that drift in the host's load
		 * or clock lands on both rings alike. */
		if (i % 2 == 0) {
			err = run_once(b, KIND_XPUSUP, size, count, &res_ours);
			if (!err)
				err = run_once(b, KIND_FIXED_SLOT, size, count, &res_base);
		} else {
			err = run_once(b, KIND_FIXED_SLOT, size, count, &res_base);
			if (!err)
				err = run_once(b, KIND_XPUSUP, size, count, &res_ours);
		}
		if (err) {
			fprintf(stderr, "ring_bench: unable to run %u-byte records: %s\n", size,
				strerror(-err));
			return err;
		}
		ours[i] = res_ours.rec_per_s;
		base[i] = res_base.rec_per_s;
		printf("  size %u B run %u/%u: xpusup %.2f M rec/s (full %" PRIu64
		       ", empty %" PRIu64 ", sleeps %" PRIu64
		       "), fixed-slot %.2f M rec/s (full %" PRIu64 ", empty %" PRIu64 ")\n",
		       size, i + 1, b->opt.repeat, ours[i] / 1e6, (uint64_t)res_ours.full,
		       (uint64_t)res_ours.empty, (uint64_t)res_ours.sleeps, base[i] / 1e6,
		       (uint64_t)res_base.full, (uint64_t)res_base.empty);
		fflush(stdout);
	}
	m_ours = bench_median(ours, b->opt.repeat);
	m_base = bench_median(base, b->opt.repeat);
	printf("size %u B: xpusup %.2f M rec/s %.0f MB/s, fixed-slot %.2f M rec/s %.0f MB/s, "
	       "ratio %.2f\n",
	       size, m_ours / 1e6, m_ours * size / 1e6, m_base / 1e6, m_base * size / 1e6,
	       m_ours / m_base);
	fflush(stdout);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ring_bench [--count N] [--sizes S1,S2,...] [--repeat R] [--slot-batch B]\n"
		"\n"
		"Records/s and bytes/s through the xpusup ring and a minimal fixed-slot SPSC ring,\n"
		"producer and consumer in two processes, %llu-byte rings; prints one line per size\n"
		"with the ratio xpusup / fixed-slot (records/s, medians of R runs).\n"
		"\n"
		"  --count N        records per run (default: 150M for <= 64 B, 60M for <= 256 B,\n"
		"                   40M for <= 1024 B, 40M * 1024 / size above)\n"
		"  --sizes LIST     record sizes in bytes, multiples of 8 in [%u, %u]\n"
		"                   (default 64,256,1024)\n"
		"  --repeat R       runs per ring and size, interleaved; medians are reported\n"
		"                   (default 3, at most %d)\n"
		"  --slot-batch B   the fixed-slot ring stores its head and tail every B slots\n"
		"                   (default %d, as often as xpusup flushes; 1: the textbook ring)\n"
		"  --help           this text\n"
		"\n"
		"Exit status: 0, 100 for a bad option, 111 when a run fails or loses records.\n",
		RING_CAPACITY, TR_MIN_SIZE, XPU_REC_MAX_SIZE, MAX_REPEAT, FLUSH_EVERY);
}

static int parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_sizes(const char *arg, struct options *opt)
{
	char buf[256], *tok, *next;
	__u64 v;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "ring_bench: unable to parse --sizes: list too long\n");
		return -EINVAL;
	}
	strcpy(buf, arg);
	opt->n_sizes = 0;
	/* strsep, not strtok: "64,,256" is a typo to report, not a list of two. */
	for (next = buf; (tok = strsep(&next, ","));) {
		if (opt->n_sizes == MAX_SIZES) {
			fprintf(stderr, "ring_bench: unable to parse --sizes: more than %d sizes\n",
				MAX_SIZES);
			return -EINVAL;
		}
		if (parse_u64(tok, TR_MIN_SIZE, XPU_REC_MAX_SIZE, &v) || v % XPU_REC_ALIGN) {
			fprintf(stderr,
				"ring_bench: unable to parse --sizes: '%s' is not a multiple of 8 "
				"in [%u, %u]\n",
				tok, TR_MIN_SIZE, XPU_REC_MAX_SIZE);
			return -EINVAL;
		}
		opt->sizes[opt->n_sizes++] = (__u32)v;
	}
	return 0;
}

/* Returns 0, 1 after --help, or -EINVAL after printing why. */
static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "sizes", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "slot-batch", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	__u64 v;
	int c;

	opt->count = 0;
	opt->sizes[0] = 64;
	opt->sizes[1] = 256;
	opt->sizes[2] = 1024;
	opt->n_sizes = 3;
	opt->repeat = 3;
	opt->slot_batch = FLUSH_EVERY;
	opterr = 0; /* our messages, in our format */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_u64(optarg, 1, UINT64_MAX / 2, &v)) {
				fprintf(stderr,
					"ring_bench: unable to parse --count: '%s' is not a "
					"positive integer\n",
					optarg);
				return -EINVAL;
			}
			opt->count = v;
			break;
		case 's':
			if (parse_sizes(optarg, opt))
				return -EINVAL;
			break;
		case 'r':
			if (parse_u64(optarg, 1, MAX_REPEAT, &v)) {
				fprintf(stderr,
					"ring_bench: unable to parse --repeat: '%s' is not an "
					"integer in [1, %d]\n",
					optarg, MAX_REPEAT);
				return -EINVAL;
			}
			opt->repeat = (unsigned int)v;
			break;
		case 'b':
			if (parse_u64(optarg, 1, MAX_SLOT_BATCH, &v)) {
				fprintf(stderr,
					"ring_bench: unable to parse --slot-batch: '%s' is not an "
					"integer in [1, %d]\n",
					optarg, MAX_SLOT_BATCH);
				return -EINVAL;
			}
			opt->slot_batch = (unsigned int)v;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "ring_bench: unable to parse %s: missing value\n",
				argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr,
				"ring_bench: unable to parse options: unknown option '%s'\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ring_bench: unable to parse options: unexpected argument '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* The first two CPUs we may run on: the producer's and the consumer's, or -1 for both
 * when there is only one (then they share it, and the yields in backoff() matter). */
static int pick_cpus(struct bench *b)
{
	cpu_set_t set;
	int cpu, found = 0;

	b->producer_cpu = b->consumer_cpu = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (found++ == 0)
			b->producer_cpu = cpu;
		else
			b->consumer_cpu = cpu;
	}
	if (b->consumer_cpu < 0)
		b->producer_cpu = -1;
	return pin_to(b->producer_cpu);
}

/* A private 0700 directory on tmpfs, as a session directory would be. */
static int make_dir(struct bench *b)
{
	snprintf(b->dir_path, sizeof(b->dir_path), "/dev/shm/xpusup-bench-XXXXXX");
	if (!mkdtemp(b->dir_path))
		return -errno;
	b->dirfd = open(b->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->dirfd < 0) {
		rmdir(b->dir_path);
		return -errno;
	}
	return 0;
}

/* A bench record must be one the default validator accepts, or ours would skip them all. */
static int check_record_format(const struct options *opt)
{
	_Alignas(8) unsigned char rec[XPU_REC_MAX_SIZE];
	unsigned int i;

	for (i = 0; i < opt->n_sizes; i++) {
		memset(rec, 0, opt->sizes[i]);
		tr_build_header(rec, opt->sizes[i], 1);
		if (xpu_rec__validate(rec, opt->sizes[i]))
			return -EBADMSG;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b;
	unsigned int i;
	int err;

	memset(&b, 0, sizeof(b));
	err = parse_options(argc, argv, &b.opt);
	if (err)
		return err > 0 ? 0 : EXIT_USAGE;
	err = check_record_format(&b.opt);
	if (err) {
		fprintf(stderr, "ring_bench: unable to build a valid record: %s\n", strerror(-err));
		return EXIT_SYSTEM;
	}
	err = pick_cpus(&b);
	if (err) {
		fprintf(stderr, "ring_bench: unable to pin the producer: %s\n", strerror(-err));
		return EXIT_SYSTEM;
	}
	err = make_dir(&b);
	if (err) {
		fprintf(stderr, "ring_bench: unable to create a directory in /dev/shm: %s\n",
			strerror(-err));
		return EXIT_SYSTEM;
	}

	printf("ring_bench: %llu-byte rings, ", RING_CAPACITY);
	if (b.consumer_cpu >= 0)
		printf("producer pinned to CPU %d, consumer to CPU %d, ", b.producer_cpu,
		       b.consumer_cpu);
	else
		printf("not pinned (fewer than 2 CPUs), ");
	printf("%u run%s per ring and size, interleaved; medians below\n", b.opt.repeat,
	       b.opt.repeat == 1 ? "" : "s");
	for (i = 0; i < b.opt.n_sizes && !err; i++)
		err = bench_size(&b, b.opt.sizes[i]);

	tr_remove_dir(b.dir_path, b.dirfd); /* closes dirfd */
	return err ? EXIT_SYSTEM : 0;
}
