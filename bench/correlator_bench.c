// SPDX-License-Identifier: MIT
/*
 * correlator_bench - the exact join of one shard (actors/correlator/join.h) in isolation:
 * records/s and joins/s for LAUNCH + CUDA_API + GPU_KERNEL triples over many processes, in
 * launch-first order (what CUPTI usually delivers) and with the kernel first (the join waits),
 * and the bytes of state per pending key.
 *
 * Baseline in the same run: one pass over the same records that only reads each header and
 * calls the same emit callback, i.e. what any consumer pays to look at the records. The
 * ratio says what joining costs on top of that.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/correlator/join.h"
#include "common/config.h"
#include "common/status.h"

struct counter {
	__u64 events, linked;
};

static void count_event(const struct xpu_cevent *ev, void *ctx)
{
	struct counter *c = ctx;

	c->events++;
	c->linked += ev->n_links;
}

/* All records back to back, 8-byte aligned. */
struct stream {
	unsigned char *buf;
	size_t len;
};

static void stream_add(struct stream *s, const void *rec)
{
	__u32 size = ((const struct xpu_rec *)rec)->size;

	memcpy(s->buf + s->len, rec, size);
	s->len += size;
}

static void build(struct stream *s, __u64 keys, int kernel_first)
{
	_Alignas(8) unsigned char rec[256];
	__u64 ips[16], i;
	struct xpu_gpu_kernel *k = (void *)rec;
	struct xpu_cuda_api *a = (void *)rec;
	__u32 pid;

	for (i = 0; i < 16; i++)
		ips[i] = 0x400000 + i * 64;
	for (i = 1; i <= keys; i++) {
		pid = 1000 + (__u32)(i % 64);
		if (kernel_first) {
			xpu_rec__init(k, XPU_REC_GPU_KERNEL, sizeof(*k), i, pid, 0);
			k->correlation_id = i;
			stream_add(s, k);
		}
		xpu_launch__build(rec, sizeof(rec), i, pid, pid, i, 211, ips, 12);
		stream_add(s, rec);
		xpu_rec__init(a, XPU_REC_CUDA_API, sizeof(*a), i, pid, pid);
		a->correlation_id = i;
		stream_add(s, a);
		if (!kernel_first) {
			xpu_rec__init(k, XPU_REC_GPU_KERNEL, sizeof(*k), i, pid, 0);
			k->correlation_id = i;
			stream_add(s, k);
		}
	}
}

static double run_join(const struct stream *s, __u64 keys, struct join_stats *st)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 1000,
			       .linger_ns = 1000,
			       .max_pending = 1 << 20,
			       .max_waiting = 1 << 16 };
	struct counter c = { 0 };
	struct join *j = join__new(&o, count_event, &c);
	__u64 t0, now = 0;
	size_t off = 0;

	int pass;

	if (!j)
		return -1;
	/* Pass 0 warms up: the tables are allocated lazily by the kernel (first-touch page
	 * faults), a cost a long-running shard pays once. Pass 1 is timed. */
	for (pass = 0; pass < 2; pass++) {
		if (pass)
			memset(&c, 0, sizeof(c));
		off = 0;
		t0 = xpu_now_ns();
		while (off < s->len) {
			const struct xpu_rec *h = (const void *)(s->buf + off);

			join__record(j, h, h->size, now);
			off += h->size;
			if ((++now & 1023) == 0)
				join__expire(j, now);
		}
		join__expire(j, now + o.ttl_ns);
		t0 = xpu_now_ns() - t0;
	}
	join__stats(j, st);
	st->matched /= 2; /* both passes counted */
	join__free(j);
	(void)keys;
	return (double)t0;
}

static double run_baseline(const struct stream *s)
{
	struct counter c = { 0 };
	struct xpu_cevent ev;
	size_t off = 0;
	__u64 t0 = xpu_now_ns();

	memset(&ev, 0, sizeof(ev));
	while (off < s->len) {
		const struct xpu_rec *h = (const void *)(s->buf + off);

		ev.kind = h->type;
		ev.pid = h->pid;
		ev.ts_ns = h->ts_ns;
		count_event(&ev, &c);
		off += h->size;
	}
	return (double)(xpu_now_ns() - t0) + (double)(c.events & 1); /* keep c alive */
}

int main(int argc, char **argv)
{
	unsigned long long keys = 2000000;
	struct join_stats st;
	struct stream s;
	double ns, base;
	int order, c;

	while ((c = getopt(argc, argv, "k:h")) != -1) {
		if (c == 'k' && !conf_parse_uint(optarg, 1, 100000000, &keys))
			continue;
		fprintf(c == 'h' ? stdout : stderr,
			"usage: correlator_bench [-k KEYS]  (default 2000000 launch/api/kernel "
			"triples)\n");
		return c == 'h' ? 0 : 100;
	}
	s.buf = malloc(keys * 320);
	if (!s.buf) {
		fprintf(stderr, "correlator_bench: unable to allocate the record stream\n");
		return 111;
	}
	printf("correlator_bench: %llu keys (LAUNCH with 12 frames + CUDA_API + GPU_KERNEL), "
	       "64 processes, one shard\n",
	       keys);
	for (order = 0; order < 2; order++) {
		s.len = 0;
		build(&s, keys, order);
		base = run_baseline(&s);
		ns = run_join(&s, keys, &st);
		printf("%-14s %6.2f M records/s, %6.2f M joins/s; baseline (read + emit only) "
		       "%7.2f M records/s, ratio %.2f; matched %llu of %llu\n",
		       order ? "kernel first:" : "launch first:", 3.0 * (double)keys / ns * 1e3,
		       (double)st.matched / ns * 1e3, 3.0 * (double)keys / base * 1e3, base / ns,
		       (unsigned long long)st.matched, keys);
	}
	printf("state per pending key: %zu bytes + 8 per LAUNCH frame (here %zu in all)\n",
	       join__entry_size(), join__entry_size() + 12 * 8);
	free(s.buf);
	return 0;
}
