// SPDX-License-Identifier: MIT
#include "actors/actor.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "common/topology.h"
#include "shm/ring.h"

static volatile sig_atomic_t stop_requested;

static void on_sigterm(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* A failed actor__init releases what it took, so callers just exit. */
static int fail(struct actor *a, const char *verb, const char *reason)
{
	fprintf(stderr, "%s: unable to %s: %s\n", a->prog, verb, reason);
	actor__fini(a);
	return -EINVAL;
}

int actor__init(struct actor *a, int argc, char **argv, const char *prog)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "actor", required_argument, NULL, 'a' },
		{ "slot", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL, *fd_env;
	struct sigaction sa = { .sa_handler = on_sigterm };
	char path[4200];
	unsigned long long v;
	int c;

	memset(a, 0, sizeof(*a));
	a->prog = prog;
	a->dirfd = -1;
	a->notify_fd = -1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			snprintf(a->dir, sizeof(a->dir), "%s", optarg);
			break;
		case 'a':
			name = optarg;
			break;
		case 'n':
			if (conf_parse_uint(optarg, 0, XPU_STATUS_MAX_ACTORS - 1, &v))
				return fail(a, "parse arguments", "bad --slot");
			a->slot_index = (unsigned int)v;
			break;
		default:
			return fail(
				a, "parse arguments",
				"usage: --session DIR --actor NAME --slot N (started by xpusup)");
		}
	}
	if (!a->dir[0] || !name)
		return fail(a, "parse arguments",
			    "--session and --actor are required (started by "
			    "the xpusup supervisor)");
	fd_env = getenv("XPUSUP_NOTIFY_FD");
	if (fd_env && !conf_parse_uint(fd_env, 0, 1 << 20, &v))
		a->notify_fd = (int)v;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	a->dirfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->dirfd < 0)
		return fail(a, "open session directory", strerror(errno));
	snprintf(path, sizeof(path), "%s/pipeline.conf", a->dir);
	if (conf__load(path, &a->conf, stderr))
		return fail(a, "load configuration", path);
	if (getenv("XPUSUP_CONF_DIR"))
		snprintf(a->conf->base_dir, sizeof(a->conf->base_dir), "%s",
			 getenv("XPUSUP_CONF_DIR"));
	a->self = conf__find(a->conf, name);
	if (!a->self)
		return fail(a, "find own section", name);
	a->status = status__map(a->dirfd, true);
	if (!a->status)
		return fail(a, "map status block", strerror(errno));
	a->slot = &a->status->slots[a->slot_index];
	if (strncmp(a->slot->name, name, sizeof(a->slot->name)))
		return fail(a, "map status block", "slot does not belong to this actor");
	status__set_problem(a->slot, "", xpu_now_ns()); /* the last run's problem went with it */
	a->beat_interval_ns = (__u64)a->conf->heartbeat_ms * 1000000ull;
	actor__beat(a);
	return 0;
}

int actor__ready(struct actor *a)
{
	static const char line[] = "READY\n";
	int err = 0;

	actor__beat(a);
	if (a->notify_fd < 0)
		return 0;
	if (write(a->notify_fd, line, sizeof(line) - 1) != (ssize_t)sizeof(line) - 1)
		err = -errno;
	close(a->notify_fd);
	a->notify_fd = -1;
	return err;
}

void actor__beat(struct actor *a)
{
	__u64 now = xpu_now_ns();

	if (now - a->last_beat_ns < a->beat_interval_ns / 2)
		return;
	a->last_beat_ns = now;
	status_store(&a->slot->heartbeat_ns, now);
}

bool actor__stopping(const struct actor *a)
{
	(void)a;
	return stop_requested;
}

void actor__ignore_sigterm(struct actor *a)
{
	(void)a;
	signal(SIGTERM, SIG_IGN);
}

int actor__counter(struct actor *a, const char *name)
{
	__u32 n = status_load(&a->slot->n_counters);
	struct xpu_status_counter *c;

	if (n >= XPU_STATUS_MAX_COUNTERS)
		return -ENOSPC;
	c = &a->slot->counters[n];
	snprintf(c->name, sizeof(c->name), "%s", name);
	status_store(&c->value, 0);
	/* Release: a reader that sees the new count sees the name written before it. */
	__atomic_store_n(&a->slot->n_counters, n + 1, __ATOMIC_RELEASE);
	return (int)n;
}

void actor__count(struct actor *a, int index, __u64 value)
{
	if (index >= 0 && index < XPU_STATUS_MAX_COUNTERS)
		status_store(&a->slot->counters[index].value, value);
}

int actor__fail(struct actor *a, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", a->prog, msg);
	status__set_problem(a->slot, msg, xpu_now_ns());
	return ACTOR_EXIT_PERMANENT;
}

void actor__problem(struct actor *a, const char *fmt, ...)
{
	char text[XPU_STATUS_PROBLEM_LEN], old[XPU_STATUS_PROBLEM_LEN];
	va_list ap;

	text[0] = 0;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(text, sizeof(text), fmt, ap);
		va_end(ap);
	}
	status__get_problem(a->slot, old, sizeof(old));
	if (!strcmp(old, text))
		return;
	if (text[0])
		fprintf(stderr, "%s: %s\n", a->prog, text);
	else if (old[0])
		fprintf(stderr, "%s: resolved: %s\n", a->prog, old);
	status__set_problem(a->slot, text, xpu_now_ns());
}

void actor__sleep_ms(struct actor *a, unsigned int ms)
{
	__u64 end = xpu_now_ns() + (__u64)ms * 1000000ull;
	__u64 step = a->beat_interval_ns / 2 ? a->beat_interval_ns / 2 : 1000000ull;
	struct timespec ts;
	__u64 now, left;

	while (!actor__stopping(a) && (now = xpu_now_ns()) < end) {
		left = end - now < step ? end - now : step;
		ts.tv_sec = (time_t)(left / 1000000000ull);
		ts.tv_nsec = (long)(left % 1000000000ull);
		nanosleep(&ts, NULL);
		actor__beat(a);
	}
}

void actor__wait_room(struct actor *a, unsigned int *step)
{
	/* sched_yield was tried first: CFS gives the CPU back to the yielding task at once
	 * unless another one waits on the same CPU, so a flat-out synthetic source spent 30 % of
	 * a 2-CPU machine in sched_yield while its sink had half a CPU (perf, 2026-11-27). 1 ms
	 * at most: a ring of the default size holds far more than 1 ms of records at the rates
	 * a pipeline reaches. */
	struct timespec ts = { 0, 50000L << (*step < 5 ? *step : 5) };

	if (ts.tv_nsec > 1000000L)
		ts.tv_nsec = 1000000L;
	actor__beat(a);
	nanosleep(&ts, NULL);
	(*step)++;
}

void actor__fini(struct actor *a)
{
	if (a->notify_fd >= 0)
		close(a->notify_fd);
	status__unmap(a->status);
	conf__free(a->conf);
	if (a->dirfd >= 0)
		close(a->dirfd);
	a->notify_fd = a->dirfd = -1;
	a->status = NULL;
	a->slot = NULL;
	a->conf = NULL;
	a->self = NULL;
}

int actor__open_rings(struct actor *a, struct ring **rings)
{
	char name[128];
	unsigned int i;
	int err;

	if (!a->conf->shards) {
		fprintf(stderr, "%s: unable to start: no [correlator] to send records to\n",
			a->prog);
		return -ENOTCONN;
	}
	for (i = 0; i < a->conf->shards; i++) {
		snprintf(name, sizeof(name), XPU_RING_NAME_FMT, a->self->name, i);
		rings[i] = ring__open(a->dirfd, name, RING_PRODUCER);
		if (!rings[i]) {
			err = -errno;
			fprintf(stderr, "%s: unable to open ring %s: %s\n", a->prog, name,
				strerror(-err));
			return err;
		}
	}
	return 0;
}
