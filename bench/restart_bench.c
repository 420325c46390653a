// SPDX-License-Identifier: MIT
/*
 * restart_bench - crash-to-ready latency of a supervised actor: kill -9 an actor N times and
 * measure, for each kill, the time from the kill to the replacement's readiness line (as the
 * supervisor records it in the status block, CLOCK_MONOTONIC on both ends).
 *
 * Baseline in the same run: fork + exec + wait of /bin/true, the floor of any process
 * restart on this machine. The ratio says how much the supervisor adds on top of it (the
 * wake-up on the pidfd, the restart decision, the actor's own start and readiness).
 *
 * The session uses intensity 1000/100ms and kills 150 ms apart, so every restart is a first
 * restart (no backoff): that is the latency a crash costs; backoff is policy, on top.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "bench/bench_util.h"
#include "common/status.h"

static void sleep_ns(__u64 ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static __u64 pct(const __u64 *sorted, unsigned int n, unsigned int p)
{
	unsigned int i = (unsigned int)(((__u64)n * p + 99) / 100);

	return sorted[i ? i - 1 : 0];
}

static void report(const char *what, __u64 *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%-34s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (n=%u)\n", what,
	       (double)pct(v, n, 50) / 1e6, (double)pct(v, n, 99) / 1e6, (double)v[n - 1] / 1e6, n);
}

static const char usage[] =
	"usage: restart_bench --xpusup PATH [--kills N]\n"
	"Kill -9 a supervised test actor N times (default 100) and report crash-to-ready\n"
	"latency p50/p99 next to fork+exec+wait of /bin/true measured in the same run.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "xpusup", required_argument, NULL, 'x' },
		{ "kills", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char conf_path[] = "/tmp/xpusup-restart-bench-XXXXXX", dir[4200], session[64];
	const char *xpusup = NULL, *xdg = getenv("XDG_RUNTIME_DIR");
	unsigned long long kills = 100;
	__u64 *crash, *spawn, *base, t0, deadline;
	struct xpu_status_block *b;
	struct xpu_actor_slot *slot;
	unsigned int i;
	int c, fd, dirfd, code = EXIT_SYSTEM;
	FILE *f;
	__u32 old;

	while ((c = getopt_long(argc, argv, "x:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'x':
			xpusup = optarg;
			break;
		case 'k':
			if (conf_parse_uint(optarg, 2, 100000, &kills)) {
				fprintf(stderr, "restart_bench: unable to parse --kills: %s\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!xpusup) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	crash = calloc(kills, sizeof(*crash));
	spawn = calloc(kills, sizeof(*spawn));
	base = calloc(kills, sizeof(*base));
	fd = mkstemp(conf_path);
	if (!crash || !spawn || !base || fd < 0 || !(f = fdopen(fd, "w"))) {
		fprintf(stderr, "restart_bench: unable to set up: %s\n", strerror(errno));
		return EXIT_SYSTEM;
	}
	fprintf(f, "[supervisor]\nintensity = 1000/100ms\nheartbeat_ms = 100\n"
		   "[sink bystander]\nkind = test\n[source victim]\nkind = test\n");
	fclose(f);
	snprintf(session, sizeof(session), "restart-bench-%d", (int)getpid());
	if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/run/xpusup/%s", session);
	else
		snprintf(dir, sizeof(dir), "%s/xpusup/%s", xdg ? xdg : "/nonexistent", session);

	{
		char *start[] = { (char *)xpusup,      (char *)"start", conf_path,
				  (char *)"--session", session,		NULL };

		if (bench_run(start, 0)) {
			fprintf(stderr, "restart_bench: unable to start a session with %s\n",
				xpusup);
			goto out_conf;
		}
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	b = dirfd >= 0 ? status__map(dirfd, false) : NULL;
	if (!b) {
		fprintf(stderr, "restart_bench: unable to map %s/status: %s\n", dir,
			strerror(errno));
		goto out_stop;
	}
	slot = &b->slots[1]; /* start order: the sink, then the victim */
	printf("restart_bench: %llu kills of a supervised test actor, %ld CPUs\n", kills,
	       sysconf(_SC_NPROCESSORS_ONLN));
	for (i = 0; i < kills; i++) {
		sleep_ns(150 * 1000000ull); /* past the intensity period: no backoff */
		old = status_load(&slot->pid);
		if (status_load(&slot->state) != XPU_ACTOR_RUNNING || !old) {
			fprintf(stderr, "restart_bench: the victim is not running (state %s)\n",
				xpu_actor_state__name(status_load(&slot->state)));
			goto out_unmap;
		}
		t0 = xpu_now_ns();
		kill((pid_t)old, SIGKILL);
		deadline = t0 + 5000000000ull;
		while (status_load(&slot->pid) == old ||
		       status_load(&slot->state) != XPU_ACTOR_RUNNING ||
		       status_load(&slot->ready_ns) < t0) {
			if (xpu_now_ns() > deadline) {
				fprintf(stderr, "restart_bench: no restart within 5 s\n");
				goto out_unmap;
			}
			sleep_ns(20000);
		}
		crash[i] = status_load(&slot->ready_ns) - t0;
		spawn[i] = status_load(&slot->ready_ns) - status_load(&slot->started_ns);
	}
	for (i = 0; i < kills; i++) {
		char *argv_true[] = { (char *)"/bin/true", NULL };

		t0 = xpu_now_ns();
		bench_run(argv_true, 0);
		base[i] = xpu_now_ns() - t0;
	}
	report("crash to ready (kill -9 -> READY)", crash, (unsigned int)kills);
	report("  of which fork -> READY", spawn, (unsigned int)kills);
	report("baseline: fork+exec+wait /bin/true", base, (unsigned int)kills);
	printf("ratio crash-to-ready / baseline: p50 %.2f, p99 %.2f\n",
	       (double)pct(crash, (unsigned int)kills, 50) /
		       (double)pct(base, (unsigned int)kills, 50),
	       (double)pct(crash, (unsigned int)kills, 99) /
		       (double)pct(base, (unsigned int)kills, 99));
	code = 0;
out_unmap:
	status__unmap(b);
out_stop : {
	char *stop[] = { (char *)xpusup, (char *)"stop", (char *)"--session", session, NULL };

	bench_run(stop, 0);
}
out_conf:
	unlink(conf_path);
	free(crash);
	free(spawn);
	free(base);
	return code;
}
