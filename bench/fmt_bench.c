// SPDX-License-Identifier: MIT
/*
 * fmt_bench - the sink formats alone, on real batches: CPU ns per event of decoding a capture
 * and of handing the decoded events to each format (folded, stats, timeline, ...), without
 * nng, without the rest of the pipeline and without the other processes of a session, so the
 * figure moves little with what else the machine runs (sinks_bench.sh measures the whole
 * pipeline; this says where a sink's time goes).
 *
 * CAPTURE is what `xpusup subscribe URL --format raw -o FILE` writes: the messages of a
 * publish sink, concatenated (bench/fmt_bench.sh makes one from a synthetic session). The
 * messages are read into memory first; each format then gets every message decoded into the
 * sink driver's arrays, as sink.c does, with a tick every TICK messages (the driver ticks
 * about every 100 ms), and finish at the end. The baseline is the same loop with no format:
 * decoding alone. A format's figure is the main thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
 * over the events, the finish included, the baseline's decode subtracted; the io_uring
 * writer's kernel workers are not in it (O_DIRECT makes them small: docs/performance.md).
 * Each format runs R times (a fresh state each time); min and median are printed. A run goes
 * over the capture L times (the same events again: ids repeat, which the formats take as a
 * batch delivered twice only while they still remember it), so that the formats' bounded
 * tables are full and evicting, as in a long session, for most of the run.
 *
 * Usage: fmt_bench [-r R] [-l L] [-d DIR] [-o KEY=VALUE]... {-c CAPTURE | CAPTURE} [KIND...]
 *        (default kinds: folded stats timeline; -o: an option for every format, such as
 *        max_launches=4096 to make a small capture fill the launch maps)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "actors/sink/fmt.h"
#include "bench/bench_util.h"
#include "common/msgpack_reader.h"
#include "common/wire.h"

#define MAX_REPEAT 20
#define TICK 256 /* messages between ticks */
#define MAX_EVENTS (1u << 16)
#define POOL_FRAMES (1u << 22)
#define POOL_TEXT (64u << 20)

struct capture {
	char *buf;
	size_t len;
	size_t *off; /* n + 1 message boundaries */
	size_t n;
	__u64 events;
};

struct bench_env {
	const char *dir;
	const char *kind;
};

/* -o KEY=VALUE: options every format gets, as if in its config section (a format that
 * does not know a key refuses it, as it would in a config) */
#define MAX_OPTS 16
static char *opts[MAX_OPTS];
static unsigned int n_opts;

static const char *env_get(void *ctx, const char *key)
{
	unsigned int i;
	size_t n = strlen(key);

	(void)ctx;
	for (i = 0; i < n_opts; i++)
		if (!strncmp(opts[i], key, n) && opts[i][n] == '=')
			return opts[i] + n + 1;
	/* every format's main output; the timeline keeps its default mode */
	if (!strcmp(key, "path"))
		return "out";
	if (!strcmp(key, "snapshot_s"))
		return "0"; /* folded: no periodic rewrite, as in a long run between snapshots */
	return NULL;
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	const struct bench_env *e = ctx;
	int n;

	if (strcmp(key, "path"))
		return -ENOENT;
	n = snprintf(buf, size, "%s/%s.out", e->dir, e->kind);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The messages of a capture: each one a MessagePack map, stepped over whole. */
static int capture__load(struct capture *c, const char *path)
{
	struct mp_reader r;
	size_t cap = 1024;
	FILE *f = fopen(path, "rb");
	struct stat st;

	if (!f || fstat(fileno(f), &st))
		return -errno;
	c->len = st.st_size;
	c->buf = malloc(c->len ? c->len : 1);
	c->off = malloc(cap * sizeof(*c->off));
	if (!c->buf || !c->off || fread(c->buf, 1, c->len, f) != c->len) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	mp_reader__init(&r, c->buf, c->len, 8);
	c->off[0] = 0;
	while (mp_reader__left(&r)) {
		if (mp_reader__skip(&r, 1))
			return -EBADMSG;
		if (c->n + 2 > cap) {
			size_t *o = realloc(c->off, 2 * cap * sizeof(*o));

			if (!o)
				return -ENOMEM;
			c->off = o;
			cap *= 2;
		}
		c->off[++c->n] = c->len - mp_reader__left(&r);
	}
	return 0;
}

/* One pass over the capture into ops (NULL: decode only). CPU ns of the main thread. */
static unsigned int loops = 1;

static int run(const struct capture *c, const struct fmt_ops *ops, struct bench_env *be,
	       struct xpu_cevent *events, const struct xpu_wire_pool *pool, double *ns,
	       __u64 *n_events)
{
	struct fmt_env env = { .ctx = be, .get = env_get, .path = env_path };
	struct xpu_wire_error werr = { 0 };
	struct xpu_wire_batch b;
	unsigned long bad = 0;
	char why[512] = "";
	void *st = NULL;
	double t0;
	size_t i;
	int err;

	if (ops && ops->open(&st, &env, why, sizeof(why))) {
		fprintf(stderr, "fmt_bench: %s: %s\n", ops->kind, why);
		return -EINVAL;
	}
	*n_events = 0;
	t0 = thread_cpu_ns();
	for (i = 0; i < c->n * loops; i++) {
		size_t m = i % c->n;

		if (xpu_wire_decode(c->buf + c->off[m], c->off[m + 1] - c->off[m],
				    &xpu_wire_default_limits, &b, events, MAX_EVENTS, pool,
				    &werr)) {
			if (!bad++)
				fprintf(stderr, "fmt_bench: message %zu: %s\n", m, werr.reason);
			continue;
		}
		*n_events += b.n_events;
		if (!ops)
			continue;
		ops->batch(st, &b, events);
		if (i % TICK == TICK - 1 && ops->tick)
			ops->tick(st, bench_now_ns(), why, sizeof(why));
	}
	err = ops ? ops->finish(st, why, sizeof(why)) : 0;
	*ns = thread_cpu_ns() - t0;
	if (ops)
		ops->free(st);
	if (err)
		fprintf(stderr, "fmt_bench: %s: finish: %s\n", ops->kind, why);
	return err;
}

int main(int argc, char **argv)
{
	static const char *const default_kinds[] = { "folded", "stats", "timeline" };
	struct bench_env be = { .dir = "/tmp" };
	const char *const *kinds = default_kinds, *capture = NULL;
	unsigned int n_kinds = 3, repeat = 3, k, i;
	struct xpu_wire_pool pool = { 0 };
	struct capture c = { 0 };
	struct xpu_cevent *events;
	double dec[MAX_REPEAT], v[MAX_REPEAT], base, med;
	__u64 n;
	int opt, err;

	while ((opt = getopt(argc, argv, "r:l:d:c:o:h")) != -1) {
		switch (opt) {
		case 'o':
			if (n_opts == MAX_OPTS || !strchr(optarg, '=')) {
				fprintf(stderr,
					"fmt_bench: -o takes KEY=VALUE, at most %d of them\n",
					MAX_OPTS);
				return EXIT_USAGE;
			}
			opts[n_opts++] = optarg;
			break;
		case 'c':
			capture = optarg;
			break;
		case 'l':
			loops = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			repeat = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			be.dir = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: fmt_bench [-r R] [-l L] [-d DIR] [-o KEY=VALUE]... CAPTURE "
				"[KIND...]\n");
			return opt == 'h' ? 0 : EXIT_USAGE;
		}
	}
	if ((!capture && optind >= argc) || repeat < 1 || repeat > MAX_REPEAT || loops < 1 ||
	    loops > 100) {
		fprintf(stderr,
			"usage: fmt_bench [-r 1..%d] [-l 1..100] [-d DIR] [-o KEY=VALUE]... "
			"{-c CAPTURE | CAPTURE} [KIND...]\n",
			MAX_REPEAT);
		return EXIT_USAGE;
	}
	if (!capture)
		capture = argv[optind++];
	err = capture__load(&c, capture);
	if (err) {
		fprintf(stderr, "fmt_bench: %s: %s\n", capture, strerror(-err));
		return EXIT_SYSTEM;
	}
	if (optind < argc) {
		kinds = (const char *const *)argv + optind;
		n_kinds = argc - optind;
	}
	events = calloc(MAX_EVENTS, sizeof(*events));
	if (!events || xpu_wire_pool__init(&pool, POOL_FRAMES, POOL_TEXT))
		return EXIT_SYSTEM;

	for (i = 0; i < repeat; i++)
		if (run(&c, NULL, &be, events, &pool, &dec[i], &n))
			return EXIT_SYSTEM;
	c.events = n;
	base = bench_median(dec, repeat) / (n ? n : 1);
	printf("fmt_bench: %zu messages, %llu events, %u runs each; CPU ns/event of the main "
	       "thread\n",
	       c.n, (unsigned long long)n, repeat);
	printf("%-10s: min %6.1f median %6.1f (decode alone)\n", "decode", dec[0] / (n ? n : 1),
	       base);
	for (k = 0; k < n_kinds; k++) {
		const struct fmt_ops *ops = fmt__find(kinds[k]);

		if (!ops || !ops->batch) {
			fprintf(stderr, "fmt_bench: no format '%s' with batches\n", kinds[k]);
			return EXIT_USAGE;
		}
		be.kind = kinds[k];
		for (i = 0; i < repeat; i++)
			if (run(&c, ops, &be, events, &pool, &v[i], &n))
				return EXIT_SYSTEM;
		for (i = 0; i < repeat; i++)
			v[i] = v[i] / (n ? n : 1) - base;
		med = bench_median(v, repeat); /* sorts: v[0] is the min after */
		printf("%-10s: min %6.1f median %6.1f (over decode)\n", kinds[k], v[0], med);
	}
	xpu_wire_pool__fini(&pool);
	free(events);
	free(c.off);
	free(c.buf);
	return 0;
}
