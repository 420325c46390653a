// SPDX-License-Identifier: MIT
/*
 * pipeline_bench - events/s end to end through a real session: the synthetic source flat
 * out -> shared-memory rings -> C correlator shards (exact join, wire encoding) -> nng ->
 * a counting sink (kind test, which decodes every batch), under the real supervisor, with 1
 * and then 2 shards in the same run.
 *
 * The rate is the events the sink received over the time from the source's start to the
 * last event received, read from the status block; the baseline line is the 1-shard run.
 *
 * Then, with 2 shards, paced runs: one at 80 % of the 2-shard maximum just measured, for
 * about 3 s, which must lose nothing (every record the source wrote reaches the sink as an
 * event, no source drop, no ring loss), and one at about 1 M events/s for the source-to-sink
 * latency the sink measures.
 *
 * -p LAUNCHES_PER_S runs only a paced run at that fixed rate (about 3 s, 2 shards) with the
 * same loss check: flat out, the maximum moves by 10 % and more between runs on a VM, so
 * comparing two builds at one offered rate, in turn, says which sustains more.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "bench/bench_util.h"
#include "common/status.h"
#include "common/topology.h"
#include "shm/ring.h"

static __u64 counter(const struct xpu_actor_slot *slot, const char *name)
{
	__u32 n = __atomic_load_n(&slot->n_counters, __ATOMIC_ACQUIRE), i;

	for (i = 0; i < n && i < XPU_STATUS_MAX_COUNTERS; i++)
		if (!strncmp(slot->counters[i].name, name, sizeof(slot->counters[i].name)))
			return status_load(&slot->counters[i].value);
	return 0;
}

struct result {
	double seconds;
	__u64 records, launches, matched, lost, p50_us, p99_us;
	/* Read once the session has gone quiet (see settle()), for the loss check: what the
	 * source wrote into its rings, what reached the sink, what the rings lost. */
	__u64 produced, sink_events, ring_lost;
};

/* Records the source's rings refused or could not deliver, over all shards: their own
 * counters, opened read-only as `xpusup status` does. -errno when a ring cannot be opened. */
static int ring_losses(int dirfd, const char *source, unsigned int shards, __u64 *lost)
{
	struct ring_stats st;
	struct ring *r;
	char name[128];
	unsigned int k;

	*lost = 0;
	for (k = 0; k < shards; k++) {
		snprintf(name, sizeof(name), XPU_RING_NAME_FMT, source, k);
		r = ring__open(dirfd, name, RING_OBSERVER);
		if (!r)
			return -errno;
		ring__stats(r, &st);
		ring__close(r);
		*lost += st.lost_full + st.lost_too_big + st.corrupt;
	}
	return 0;
}

/*
 * The main loop stops as soon as the sink has caught up with what the source had published,
 * but the source publishes its last records (the reorder buffer, the process exits) after the
 * launch count is reached, and shards send partial batches on a timer. For an exact count,
 * wait until no counter has moved for QUIET_NS (or give up at the deadline and report what
 * there is: the check then fails, which is the point).
 */
#define QUIET_NS 500000000ull

static void settle(const struct xpu_status_block *b, unsigned int syn, unsigned int sink,
		   __u64 deadline, struct result *res)
{
	__u64 out, got, in, prev_out = 0, prev_got = 0, prev_in = 0, quiet_since = xpu_now_ns();
	unsigned int i;

	for (;;) {
		out = counter(&b->slots[syn], "records_out");
		got = counter(&b->slots[sink], "events_in");
		in = 0;
		for (i = 0; i < b->hdr.n_actors; i++)
			if (b->slots[i].role == CONF_ROLE_CORRELATOR)
				in += counter(&b->slots[i], "in");
		if (out != prev_out || got != prev_got || in != prev_in)
			quiet_since = xpu_now_ns();
		else if (xpu_now_ns() - quiet_since >= QUIET_NS)
			break;
		if (xpu_now_ns() > deadline)
			break;
		prev_out = out;
		prev_got = got;
		prev_in = in;
		usleep(10000);
	}
	res->produced = out;
	res->sink_events = got;
}

/* The zero-loss check of a paced run: every record the source wrote reached the sink. */
static bool lost_nothing(const struct result *z)
{
	return z->sink_events == z->produced && z->lost == 0 && z->ring_lost == 0;
}

static void print_paced(const char *what, unsigned long long rate, unsigned long long count,
			const struct result *z)
{
	double per_launch = (double)z->sink_events / (double)count;

	printf("2 shards at %s: offered %llu launches/s x %.3f = %.2f M events/s for %.1f s "
	       "(sink done after %.2f s); %llu events at the sink of %llu produced, source drops "
	       "%llu, ring losses %llu; zero loss: %s\n",
	       what, rate, per_launch, (double)rate * per_launch / 1e6,
	       (double)count / (double)rate, z->seconds, (unsigned long long)z->sink_events,
	       (unsigned long long)z->produced, (unsigned long long)z->lost,
	       (unsigned long long)z->ring_lost, lost_nothing(z) ? "yes" : "no");
}

static int one_run(const char *xpusup, unsigned int shards, unsigned long long launches,
		   unsigned long long rate, struct result *res)
{
	char conf[] = "/tmp/xpusup-pipeline-bench-XXXXXX", session[64], dir[4200];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct xpu_status_block *b = NULL;
	__u64 t0, in, out, deadline;
	unsigned int i, syn = 0, sink = 0;
	__u64 got;
	int fd, dirfd = -1, err = -EIO;
	FILE *f;

	fd = mkstemp(conf);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -errno;
	fprintf(f,
		"[sink out]\nkind = test\n[correlator]\nshards = %u\n[source syn]\nkind = synthetic\n"
		"processes = 64\nthreads = 4\nlaunches_per_s = %llu\ncount = %llu\n",
		shards, rate, launches);
	fclose(f);
	snprintf(session, sizeof(session), "pipeline-bench-%d-%u", (int)getpid(), shards);
	snprintf(dir, sizeof(dir), "%s/%s", geteuid() == 0 ? "/run/xpusup" : "", session);
	if (geteuid() != 0)
		snprintf(dir, sizeof(dir), "%s/xpusup/%s", xdg ? xdg : "/nonexistent", session);
	{
		char *start[] = { (char *)xpusup,      (char *)"start", conf,
				  (char *)"--session", session,		NULL };

		t0 = xpu_now_ns();
		if (bench_run(start, 1)) {
			fprintf(stderr, "pipeline_bench: unable to start a session with %s\n",
				xpusup);
			goto out_conf;
		}
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	b = dirfd >= 0 ? status__map(dirfd, false) : NULL;
	if (!b)
		goto out_stop;
	for (i = 0; i < b->hdr.n_actors; i++)
		if (!strcmp(b->slots[i].kind, "synthetic"))
			syn = i;
		else if (b->slots[i].role == CONF_ROLE_SINK)
			sink = i;
	/* The source starts producing as soon as it is ready, before `start` returns: measure
	 * from its start, which the status block records. */
	t0 = status_load(&b->slots[syn].started_ns);
	deadline = xpu_now_ns() + 300000000000ull;
	for (;;) {
		out = counter(&b->slots[syn], "records_out");
		in = 0;
		for (i = 0; i < b->hdr.n_actors; i++)
			if (b->slots[i].role == CONF_ROLE_CORRELATOR)
				in += counter(&b->slots[i], "in");
		got = counter(&b->slots[sink], "events_in");
		if (counter(&b->slots[syn], "launches") == launches && in >= out && out &&
		    got >= in)
			break;
		if (xpu_now_ns() > deadline)
			goto out_stop;
		usleep(200);
	}
	res->seconds = (double)(xpu_now_ns() - t0) / 1e9;
	res->records = got;
	res->launches = launches;
	res->matched = 0;
	for (i = 0; i < b->hdr.n_actors; i++)
		if (b->slots[i].role == CONF_ROLE_CORRELATOR)
			res->matched += counter(&b->slots[i], "matched");
	res->p50_us = counter(&b->slots[sink], "latency_p50_us");
	res->p99_us = counter(&b->slots[sink], "latency_p99_us");
	settle(b, syn, sink, deadline, res);
	res->lost = counter(&b->slots[syn], "records_dropped");
	err = ring_losses(dirfd, b->slots[syn].name, shards, &res->ring_lost);
	if (err)
		fprintf(stderr, "pipeline_bench: unable to read the rings' counters: %s\n",
			strerror(-err));
out_stop : {
	char *stop[] = { (char *)xpusup, (char *)"stop", (char *)"--session", session, NULL };

	status__unmap(b);
	if (dirfd >= 0)
		close(dirfd);
	bench_run(stop, 1);
}
out_conf:
	unlink(conf);
	return err;
}

int main(int argc, char **argv)
{
	const char *xpusup = NULL;
	unsigned long long launches = 3000000;
	unsigned long long rate, count, paced = 0;
	struct result r[2], z;
	double max_eps, per_launch;
	char what[64];
	unsigned int s;
	int c;

	while ((c = getopt(argc, argv, "x:n:p:h")) != -1) {
		if (c == 'x')
			xpusup = optarg;
		else if (c == 'n' && !conf_parse_uint(optarg, 1000, 1000000000, &launches))
			continue;
		else if (c == 'p' && !conf_parse_uint(optarg, 1000, 100000000, &paced))
			continue;
		else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: pipeline_bench -x XPUSUP [-n LAUNCHES] [-p LAUNCHES_PER_S]\n"
				"  -n  launches of the flat-out runs (default 3000000; about 3 "
				"records each)\n"
				"  -p  only a paced run at this rate, about 3 s, 2 shards: does it "
				"lose nothing?\n");
			return c == 'h' ? 0 : EXIT_USAGE;
		}
	}
	if (!xpusup) {
		fprintf(stderr, "pipeline_bench: unable to run: -x XPUSUP is required\n");
		return EXIT_USAGE;
	}
	if (paced) {
		if (one_run(xpusup, 2, 3 * paced, paced, &z)) {
			fprintf(stderr, "pipeline_bench: the paced run failed\n");
			return EXIT_SYSTEM;
		}
		print_paced("a fixed rate", paced, 3 * paced, &z);
		return lost_nothing(&z) ? 0 : 1;
	}
	printf("pipeline_bench: synthetic source flat out -> rings -> correlator shards -> nng -> "
	       "counting sink, %llu launches, %ld CPUs\n",
	       launches, sysconf(_SC_NPROCESSORS_ONLN));
	for (s = 1; s <= 2; s++) {
		if (one_run(xpusup, s, launches, 0, &r[s - 1])) {
			fprintf(stderr, "pipeline_bench: the %u-shard run failed\n", s);
			return EXIT_SYSTEM;
		}
		printf("%u shard%s: %.2f M events/s (%llu events at the sink in %.2f s), matched %llu, "
		       "source drops %llu\n",
		       s, s > 1 ? "s" : " ", (double)r[s - 1].records / r[s - 1].seconds / 1e6,
		       (unsigned long long)r[s - 1].records, r[s - 1].seconds,
		       (unsigned long long)r[s - 1].matched, (unsigned long long)r[s - 1].lost);
	}
	printf("ratio 2 shards / 1 shard: %.2f\n",
	       ((double)r[1].records / r[1].seconds) / ((double)r[0].records / r[0].seconds));
	/* Zero loss at 80 % of the maximum: the source is paced in launches/s, so the 2-shard
	 * rate in events/s is converted with the events per launch of that same run. The
	 * paced source drops (and its ring counts the loss) when a ring is full, instead of
	 * waiting as flat out does: this run is where losses would show. */
	max_eps = (double)r[1].records / r[1].seconds;
	per_launch = (double)r[1].records / (double)r[1].launches;
	rate = (unsigned long long)(0.8 * max_eps / per_launch);
	count = 3 * rate;
	if (one_run(xpusup, 2, count, rate, &z)) {
		fprintf(stderr, "pipeline_bench: the 80 %% run failed\n");
		return EXIT_SYSTEM;
	}
	snprintf(what, sizeof(what), "80 %% of %.2f M events/s", max_eps / 1e6);
	print_paced(what, rate, count, &z);
	/* Latency at a fixed load: 320 000 launches/s is about 1 M events/s. */
	if (one_run(xpusup, 2, 960000, 320000, &r[0])) {
		fprintf(stderr, "pipeline_bench: the latency run failed\n");
		return EXIT_SYSTEM;
	}
	printf("2 shards at %.2f M events/s for 3 s: source-to-sink latency p50 %.1f ms, p99 %.1f "
	       "ms (CUDA_API records, quarter-octave buckets: at most 25 %% high), source drops "
	       "%llu\n",
	       (double)r[0].records / r[0].seconds / 1e6, (double)r[0].p50_us / 1e3,
	       (double)r[0].p99_us / 1e3, (unsigned long long)r[0].lost);
	return 0;
}
