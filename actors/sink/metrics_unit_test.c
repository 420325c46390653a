// SPDX-License-Identifier: MIT
/*
 * The metrics format without a session: `listen` parsing, label spelling, the actor counters'
 * family mapping, and hand-made events through the format to a page fetched over loopback
 * (exact lines, one HELP and TYPE per family before its samples, the top_kernels bound).
 * tests/metrics_test.sh runs it in a session against the real Prometheus.
 */
#include "actors/sink/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/sink/fmt.h"
#include "tests/tap.h"

static char listen_text[64];

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	if (!strcmp(key, "listen"))
		return listen_text;
	return strcmp(key, "top_kernels") ? NULL : "2";
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	(void)key;
	(void)buf;
	(void)size;
	return -ENOENT;
}

static void listen_cases(void)
{
	static const struct {
		const char *text;
		int ok;
		bool loopback;
	} cases[] = {
		{ "127.0.0.1:9464", 1, true },
		{ "127.1.2.3:1", 1, true },
		{ "0.0.0.0:9464", 1, false },
		{ "10.0.0.1:65535", 1, false },
		{ "[::1]:9464", 1, true },
		{ "[::]:9464", 1, false },
		{ "localhost:9464", 0, false },
		{ "127.0.0.1", 0, false },
		{ "127.0.0.1:0", 0, false },
		{ "127.0.0.1:65536", 0, false },
		{ "127.0.0.1:94x", 0, false },
		{ "::1:9464", 0, false },
		{ "[127.0.0.1]:9464", 0, false },
		{ "[::1]9464", 0, false },
		{ ":9464", 0, false },
		{ "", 0, false },
	};
	struct metrics_listen l;
	unsigned int i;
	int err;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&l, 0, sizeof(l));
		err = metrics_listen__parse(cases[i].text, &l);
		tap_ok(cases[i].ok ? !err && l.loopback == cases[i].loopback &&
					     !strcmp(l.text, cases[i].text) :
				     err == -EINVAL,
		       "listen '%s': %s", cases[i].text,
		       cases[i].ok ? (cases[i].loopback ? "loopback" : "not loopback") : "refused");
	}
}

static void label_cases(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "void k<float>(float*, int)", "void k<float>(float*, int)" },
		{ "a\"b\\c\nd", "a\\\"b\\\\c\\nd" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" }, /* well-formed UTF-8 as is */
		{ "x\xff", "x\xc3\xbf" }, /* a byte outside UTF-8: U+00FF, as stats.json */
		{ "\xe2\x82", "\xc3\xa2\xc2\x82" }, /* a sequence cut short: byte by byte */
		{ "tab\there", "tab\there" },
	};
	struct text t = { 0 };
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t.len = 0;
		metrics__label(&t, cases[i].in, strlen(cases[i].in));
		tap_ok(t.len == strlen(cases[i].out) && !memcmp(t.p, cases[i].out, t.len),
		       "label %u: %.*s", i, (int)t.len, t.p);
	}
	text__free(&t);
}

static void family_cases(void)
{
	static const struct {
		const char *counter, *family;
		double scale;
		bool gauge;
	} cases[] = {
		{ "events_in", "xpusup_actor_events_in_total", 1, false },
		{ "records_dropped", "xpusup_actor_records_dropped_total", 1, false },
		{ "latency_p99_us", "xpusup_actor_latency_p99_seconds", 1e-6, true },
		{ "unwind_ns_per_stack", "xpusup_actor_unwind_seconds_per_stack", 1e-9, true },
		{ "cfi_kib", "xpusup_actor_cfi_bytes", 1024, true },
		{ "late_ns", "xpusup_actor_late_seconds_total", 1e-9, false },
		{ "subscribers", "xpusup_actor_subscribers", 1, true },
		{ "grand_total", "xpusup_actor_grand_total", 1, false },
		{ "odd-name.x", "xpusup_actor_odd_name_x_total", 1, false },
		{ "up", "xpusup_actor_up_total", 1, false }, /* not the family xpusup_actor_up */
		{ "abcdefghijklmnopqrstuvwx", "xpusup_actor_abcdefghijklmnopqrstuvwx_total", 1,
		  false },
	};
	struct metrics_family f;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		metrics__family(cases[i].counter, strlen(cases[i].counter), &f);
		tap_ok(!strcmp(f.name, cases[i].family) && f.scale == cases[i].scale &&
			       f.gauge == cases[i].gauge,
		       "counter %s: %s (%s, x %g)", cases[i].counter, f.name,
		       f.gauge ? "gauge" : "counter", f.scale);
	}
}

/* A port free on 127.0.0.1 now (nothing else binds here between this and the format). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* GET /metrics: the whole reply (the caller frees it), or NULL. */
static char *fetch(int port, const char *request)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap + 1);
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || !buf || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    send(fd, request, strlen(request), MSG_NOSIGNAL) != (ssize_t)strlen(request))
		goto fail;
	while (len < cap && (n = recv(fd, buf + len, cap - len, 0)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(fd);
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* Every line a comment or NAME{LABELS} VALUE, and each family's HELP and TYPE once, before its
 * samples: what Prometheus's parser insists on. Returns the first bad line's number, or 0. */
static unsigned int page_ok(const char *body)
{
	char families[256][96], name[96];
	unsigned int n_fam = 0, line = 0, i;
	const char *p = body, *nl;
	bool seen;

	for (; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		line++;
		if (!nl)
			return line;
		if (!strncmp(p, "# HELP ", 7) || !strncmp(p, "# TYPE ", 7)) {
			if (sscanf(p + 7, "%95s", name) != 1)
				return line;
			for (i = 0, seen = false; i < n_fam; i++)
				seen |= !strcmp(families[i], name);
			if (!strncmp(p, "# HELP ", 7)) {
				if (seen || n_fam == 256)
					return line; /* a family twice */
				snprintf(families[n_fam++], sizeof(families[0]), "%s", name);
			} else if (!seen || strcmp(families[n_fam - 1], name)) {
				return line; /* TYPE of another family than the last HELP */
			}
			continue;
		}
		for (i = 0; i < sizeof(name) - 1 && p + i < nl && p[i] != '{' && p[i] != ' '; i++)
			name[i] = p[i];
		name[i] = 0;
		/* a sample: of the last family (a counter's name is its family's) */
		if (!n_fam || strcmp(families[n_fam - 1], name) ||
		    !memchr(p, ' ', (size_t)(nl - p)))
			return line;
	}
	return 0;
}

#define STRESS_ROUNDS 200

struct scraper {
	int port;
	unsigned int whole; /* replies that were a 200 with the body Content-Length said */
};

static void *scrape_loop(void *arg)
{
	struct scraper *sc = arg;
	unsigned int i;
	char *r, *body, *cl;
	size_t len;

	for (i = 0; i < STRESS_ROUNDS; i++) {
		r = fetch(sc->port, "GET /metrics HTTP/1.0\r\n\r\n");
		body = r ? strstr(r, "\r\n\r\n") : NULL;
		cl = r ? strstr(r, "Content-Length: ") : NULL;
		if (body && cl && sscanf(cl, "Content-Length: %zu", &len) == 1 &&
		    strlen(body + 4) == len && !strncmp(r, "HTTP/1.1 200", 12))
			sc->whole++;
		free(r);
	}
	return NULL;
}

/* Scrapes from another thread while the format takes events and publishes pages: each reply a
 * whole page (for ThreadSanitizer too: the page's hand-over and the counters). */
static void stress(void *st, int port, const struct xpu_wire_batch *b, const struct xpu_cevent *e)
{
	struct scraper sc = { .port = port };
	char why[512];
	pthread_t t;
	unsigned int i;

	if (pthread_create(&t, NULL, scrape_loop, &sc)) {
		tap_ok(0, "stress: no thread");
		return;
	}
	for (i = 0; i < STRESS_ROUNDS; i++) {
		fmt_metrics.batch(st, b, e);
		fmt_metrics.tick(st, i, why, sizeof(why));
	}
	pthread_join(t, NULL);
	tap_ok(sc.whole == STRESS_ROUNDS,
	       "stress: %u of %u scrapes whole while %u pages were published", sc.whole,
	       STRESS_ROUNDS, STRESS_ROUNDS);
}

static void format_case(void)
{
	static const char awkward[] = "k\"\n\xff";
	struct xpu_cevent e[6] = {
		{ .kind = XPU_REC_GPU_KERNEL,
		  .pid = 7,
		  .ts_ns = 1000,
		  .end_ns = 3000,
		  .name = "alpha",
		  .name_len = 5 },
		{ .kind = XPU_REC_GPU_KERNEL,
		  .pid = 7,
		  .ts_ns = 2000,
		  .end_ns = 4000,
		  .name = awkward,
		  .name_len = sizeof(awkward) - 1 },
		{ .kind = XPU_REC_GPU_KERNEL,
		  .pid = 8,
		  .ts_ns = 5000,
		  .end_ns = 5500,
		  .name = "gamma",
		  .name_len = 5 },
		{ .kind = XPU_REC_GPU_KERNEL,
		  .pid = 8,
		  .ts_ns = 6000,
		  .end_ns = 6250,
		  .name = "alpha",
		  .name_len = 5 },
		{ .kind = XPU_REC_GPU_MEMCPY,
		  .pid = 7,
		  .ts_ns = 7000,
		  .end_ns = 8000,
		  .sub_kind = 1,
		  .bytes = 4096 },
		{ .kind = XPU_REC_CPU_SAMPLE,
		  .pid = 7,
		  .tid = 7,
		  .ts_ns = 9000,
		  .value = 1000000,
		  .name = "proc7",
		  .name_len = 5 },
	};
	static const char *const want[] = {
		"xpusup_gpu_kernels_total{kernel=\"alpha\"} 2\n",
		"xpusup_gpu_kernels_total{kernel=\"k\\\"\\n\xc3\xbf\"} 1\n",
		"xpusup_gpu_kernels_total{kernel=\"[other kernels]\"} 1\n",
		"xpusup_gpu_kernel_seconds_total{kernel=\"alpha\"} 0.000002250\n",
		"xpusup_gpu_kernel_seconds_total{kernel=\"[other kernels]\"} 0.000000500\n",
		"xpusup_gpu_memcpy_bytes_total{kind=\"HtoD\"} 4096\n",
		"xpusup_cpu_samples_total{pid=\"7\"} 1\n",
		"xpusup_cpu_sampled_seconds_total{pid=\"7\"} 0.001000000\n",
		"xpusup_process_info{pid=\"7\",comm=\"proc7\"} 1\n",
		/* device 0: [1000, 4000) and [5000, 5500) and [6000, 6250) of [1000, 9000) */
		"xpusup_gpu_sm_busy_seconds_total{device=\"0\"} 0.000003750\n",
		"xpusup_gpu_sm_active_ratio{device=\"0\"} 0.468750000\n",
		"xpusup_process_sm_busy_seconds_total{pid=\"8\"} 0.000000750\n",
		"xpusup_events_total{kind=\"gpu_kernel\"} 4\n",
	};
	struct fmt_env env = { .get = env_get, .path = env_path };
	struct xpu_wire_batch b = { .version = 1, .n_events = 6 };
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	char why[512], *reply, *body;
	unsigned int i, n, bad;
	void *st = NULL;
	int port = free_port(), err;

	snprintf(listen_text, sizeof(listen_text), "127.0.0.1:%d", port);
	err = fmt_metrics.open(&st, &env, why, sizeof(why));
	if (!tap_ok(port > 0 && err == 0, "open on %s: %s", listen_text, err ? why : "ok"))
		return;
	{ /* the same port again: refused, and said why */
		void *st2 = NULL;

		err = fmt_metrics.open(&st2, &env, why, sizeof(why));
		tap_ok(err == -EADDRINUSE && strstr(why, listen_text) && strstr(why, "in use"),
		       "a second open on %s: %s", listen_text, err ? why : "opened");
		if (!err)
			fmt_metrics.free(st2);
	}
	fmt_metrics.batch(st, &b, e);
	fmt_metrics.tick(st, 1, why, sizeof(why));
	reply = fetch(port, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
	body = reply ? strstr(reply, "\r\n\r\n") : NULL;
	tap_ok(body && !strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) &&
		       strstr(reply, "Content-Type: " METRICS_CONTENT_TYPE "\r\n"),
	       "GET /metrics: 200, text format 0.0.4");
	if (body) {
		body += 4;
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			tap_ok(strstr(body, want[i]) != NULL, "the page has %.*s",
			       (int)strlen(want[i]) - 1, want[i]);
		tap_ok(!strstr(body, "kernel=\"gamma\""),
		       "gamma, the third name, is in [other kernels]");
		bad = page_ok(body);
		tap_ok(!bad, "every line a sample of the family its HELP and TYPE opened (bad: %u)",
		       bad);
	}
	free(reply);
	reply = fetch(port, "PUT /metrics HTTP/1.1\r\n\r\n");
	tap_ok(reply && !strncmp(reply, "HTTP/1.1 405 ", 13), "PUT: 405");
	free(reply);
	n = fmt_metrics.counters(st, names, values, FMT_COUNTERS_MAX);
	for (i = 0; i < n; i++)
		if (!strcmp(names[i], "scrapes") || !strcmp(names[i], "bad_methods") ||
		    !strcmp(names[i], "kernels_folded"))
			tap_ok(values[i] == 1, "counter %s: %llu", names[i],
			       (unsigned long long)values[i]);
	stress(st, port, &b, e);
	err = fmt_metrics.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish");
	fmt_metrics.free(st);
}

int main(void)
{
	listen_cases();
	label_cases();
	family_cases();
	format_case();
	return tap_done();
}
