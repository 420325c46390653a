/* SPDX-License-Identifier: MIT */
/*
 * ns per xpu_range_push + xpu_range_pop, in one run:
 *
 *	baseline	two calls of empty non-inlined functions (the floor of any call)
 *	disabled	the library without a session (one branch per call)
 *	nested		with a session, inside an open range (records batched per thread)
 *	outermost	with a session, at depth 0 (each pop ends a top-level scope: a flush)
 *
 * The library attaches once, at load, so each case runs in a child of this program (this
 * binary again, with --child): the parent plays the inproc actor for the enabled ones (a
 * socket in a temporary 0700 directory, a memfd ring per child, a thread that drains it),
 * so the figures include a consumer running at the same time, as in a session.
 *
 * Usage: annotate_bench [-n PAIRS] [-r REPEAT]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/inproc.h"
#include "shm/ring.h"
#include "xpusup/annotate.h"

#define RING_BYTES (1u << 20) /* the inproc default, ring_kib = 1024 */

static long pairs = 2000000;
static int repeat = 5;

__attribute__((noinline)) static void empty_push(const char *name)
{
	__asm__ volatile("" : : "r"(name) : "memory");
}

__attribute__((noinline)) static void empty_pop(void)
{
	__asm__ volatile("" : : : "memory");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The child: the median over repeat runs of ns per pair, on stdout. */
static int child(const char *mode)
{
	double t[32], t0;
	bool base = !strcmp(mode, "baseline");
	int r;
	long i;

	if (!strcmp(mode, "nested"))
		xpu_range_push("outer");
	for (r = 0; r < repeat && r < 32; r++) {
		t0 = now_s();
		if (base) {
			for (i = 0; i < pairs; i++) {
				empty_push("step");
				empty_pop();
			}
		} else {
			for (i = 0; i < pairs; i++) {
				xpu_range_push("step");
				xpu_range_pop();
			}
		}
		t[r] = (now_s() - t0) * 1e9 / (double)pairs;
	}
	qsort(t, (size_t)r, sizeof(t[0]), cmp_double);
	printf("%.2f %d %llu\n", t[r / 2], xpu_annotate_enabled(),
	       (unsigned long long)xpu_annotate_dropped());
	return 0;
}

struct server {
	int listen_fd;
	atomic_bool stop;
	atomic_ullong consumed;
};

static int count_record(const void *rec, __u32 size, void *ctx)
{
	(void)rec, (void)size, (void)ctx;
	return 0;
}

/* One client at a time: hello, ring, drain until EOF. Just enough of xpusup-inproc. */
static void *serve(void *arg)
{
	struct server *s = arg;
	struct xpu_inproc_hello hello;
	struct xpu_inproc_reply reply = { .magic = XPU_INPROC_MAGIC,
					  .version = XPU_INPROC_VERSION,
					  .capacity = RING_BYTES };
	struct ring *r;
	int sock, fd, n;
	char byte;

	while (!atomic_load(&s->stop)) {
		sock = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (sock < 0)
			continue;
		fd = inproc__create_ring(RING_BYTES, 0);
		r = fd >= 0 && recv(sock, &hello, sizeof(hello), 0) == sizeof(hello) ?
			    ring__open_fd(fd, RING_CONSUMER) :
			    NULL;
		if (r && !inproc__send_reply(sock, &reply, fd)) {
			for (;;) {
				n = ring__consume(r, count_record, NULL, 4096);
				if (n > 0)
					atomic_fetch_add(&s->consumed, (unsigned long long)n);
				if (n == 0 && recv(sock, &byte, 1, MSG_DONTWAIT) == 0)
					break; /* EOF: the child is gone and its ring is empty */
				if (n == 0)
					ring__wait(r, 1000000);
			}
		}
		ring__close(r);
		if (fd >= 0)
			close(fd);
		close(sock);
	}
	return NULL;
}

static int run_child(const char *self, const char *mode, const char *dir, double *ns, int *enabled,
		     unsigned long long *dropped)
{
	char cmd[8192], line[256];
	FILE *f;
	int ok;

	snprintf(cmd, sizeof(cmd), "%s%s%s '%s' --child %s -n %ld -r %d 2>/dev/null",
		 dir ? "XPUSUP_SESSION_DIR=" : "env -u XPUSUP_SESSION_DIR", dir ? dir : "",
		 dir ? "" : "", self, mode, pairs, repeat);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	ok = fgets(line, sizeof(line), f) && sscanf(line, "%lf %d %llu", ns, enabled, dropped) == 3;
	if (pclose(f) || !ok)
		return -EIO;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "baseline", "disabled", "nested", "outermost" };
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct server s = { .listen_fd = -1 };
	char dir[] = "/tmp/xpusup-annbench-XXXXXX", self[4096];
	const char *mode = NULL;
	unsigned long long dropped;
	pthread_t thread;
	int i, enabled, code = 111;
	ssize_t len;
	double ns;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--child") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			pairs = atol(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: annotate_bench [-n PAIRS] [-r REPEAT]\n");
			return 100;
		}
	}
	if (pairs < 1 || repeat < 1 || repeat > 32) {
		fprintf(stderr, "annotate_bench: -n >= 1, -r in 1..32\n");
		return 100;
	}
	if (mode)
		return child(mode);

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0 || !mkdtemp(dir))
		return 111;
	self[len] = '\0';
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, XPU_INPROC_SOCK);
	s.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s.listen_fd < 0 || bind(s.listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(s.listen_fd, 8) || pthread_create(&thread, NULL, serve, &s)) {
		fprintf(stderr, "annotate_bench: unable to listen: %s\n", strerror(errno));
		goto out;
	}
	printf("annotate_bench: %ld push+pop pairs, median of %d runs\n", pairs, repeat);
	printf("%-10s %12s %8s %12s\n", "case", "ns/pair", "enabled", "dropped");
	for (i = 0; i < 4; i++) {
		if (run_child(self, modes[i], i >= 2 ? dir : NULL, &ns, &enabled, &dropped)) {
			fprintf(stderr, "annotate_bench: the %s run failed\n", modes[i]);
			goto out;
		}
		printf("%-10s %12.2f %8d %12llu\n", modes[i], ns, enabled, dropped);
	}
	printf("records consumed by the stand-in actor: %llu\n",
	       (unsigned long long)atomic_load(&s.consumed));
	code = 0;
out:
	atomic_store(&s.stop, true);
	if (s.listen_fd >= 0) {
		shutdown(s.listen_fd, SHUT_RDWR);
		close(s.listen_fd);
	}
	unlink(addr.sun_path);
	rmdir(dir);
	return code;
}
