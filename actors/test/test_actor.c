// SPDX-License-Identifier: MIT
/*
 * xpusup-test: an actor whose misbehaviour is configured, so that every supervisor behaviour
 * is tested with real processes (docs/pipeline.md lists the keys): slow or no readiness,
 * crashes, exits with a chosen code, ignoring SIGTERM, freezing. As a source it writes test
 * records into its rings; as a correlator it reads its rings; so the ring mesh and its
 * survival across restarts are exercised too. With `dump`, a correlator writes the records it
 * reads, as they are, into a replay file, and a sink the events it receives as JSON lines.
 */
#include "actors/actor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>

#include "actors/sink/close.h"
#include "actors/sink/sink.h"
#include "actors/test/test_options.h"
#include "common/topology.h"
#include "common/wire.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define PROG "xpusup-test"

struct test_keys {
	struct test_options o;
	/* crash_after_ms, exit_after_ms and hang_after_ms have no default: written or not is
	 * the switch */
	bool crash, exit, hang;
};

static int load_keys(const struct actor *a, struct test_keys *k)
{
	k->crash = conf_actor__written(a->self, "crash_after_ms");
	k->exit = conf_actor__written(a->self, "exit_after_ms");
	k->hang = conf_actor__written(a->self, "hang_after_ms");
	return conf_actor__options(a->self, &k->o, sizeof(k->o));
}

struct mesh {
	struct ring *rings[CONF_MAX_ACTORS];
	unsigned int n;
	__u64 records, lost, seq;
	int c_records, c_lost;
	/* sinks: the correlators' wire batches, decoded and counted */
	bool listening;
	FILE *dump; /* `dump = FILE`: every record read (a replay file) or event received */
	nng_socket pull;
	struct sink_wait wait; /* how the sink role waits for a batch (sink.h) */
	struct xpu_cevent *events;
	struct xpu_wire_pool pool;
	struct xpu_wire_seq gaps; /* per producer, in events */
	__u64 batches, events_in, bad_batches;
	int c_batches, c_events, c_gaps, c_rewinds, c_bad, c_p50, c_p99, c_named, c_unnamed;
	int c_stacked, c_linked, c_weight;
	__u64 named_kernels, unnamed_kernels;
	__u64 gpu_stacks; /* GPU events that carry a launch stack */
	__u64 stream_links; /* events with a same_stream_prev link */
	__u64 sample_weight; /* sum of CPU sample weights */
	/* source-to-sink latency of CUDA_API records (stamped when the source made them) */
	__u64 latency[128];
};

/* Bucket 4 * l + q holds [(4 + q) * 2^l / 4, (5 + q) * 2^l / 4) us: a quarter-octave
 * log scale, so a reported percentile (the bucket's upper end) is at most 25 % high. */
static unsigned int latency_bucket(__u64 ns)
{
	__u64 us = ns / 1000 + 1;
	unsigned int l = 63 - (unsigned int)__builtin_clzll(us), q, b;

	q = l >= 2 ? (unsigned int)(us >> (l - 2)) & 3 : (unsigned int)(us << (2 - l)) & 3;
	b = 4 * l + q;
	return b < 128 ? b : 127;
}

static __u64 bucket_us(unsigned int b)
{
	return ((__u64)(5 + b % 4) << (b / 4)) / 4;
}

static __u64 latency_pct(const struct mesh *m, unsigned int pct)
{
	__u64 total = 0, seen = 0;
	unsigned int b;

	for (b = 0; b < 128; b++)
		total += m->latency[b];
	for (b = 0; b < 128 && total; b++) {
		seen += m->latency[b];
		if (seen * 100 >= total * pct)
			return bucket_us(b);
	}
	return 0;
}

/* A JSON string of n bytes: quotes, backslashes and control bytes escaped; bytes above 0x7e
 * as \u00XX, so the line is valid JSON whatever the name holds. */
static void dump__str(FILE *f, const char *s, __u32 n)
{
	__u32 i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* One event, one line: what the correlator joined, for a person or a script to read. */
static void dump__event(FILE *f, __u32 producer, const struct xpu_cevent *ev)
{
	__u32 i;

	fprintf(f, "{\"shard\":%u,\"id\":%llu,\"kind\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%llu",
		producer, (unsigned long long)ev->id, xpu_rec_type__name(ev->kind), ev->pid,
		ev->tid, (unsigned long long)ev->ts_ns);
	if (ev->end_ns)
		fprintf(f, ",\"end\":%llu", (unsigned long long)ev->end_ns);
	if (ev->correlation_id)
		fprintf(f, ",\"corr\":%llu", (unsigned long long)ev->correlation_id);
	if (ev->flags)
		fprintf(f, ",\"flags\":%u", ev->flags);
	if (ev->api_id)
		fprintf(f, ",\"api\":%u", ev->api_id);
	if (ev->value) /* PROC_EXIT status, LOSS count, sample weight, PMU total */
		fprintf(f, ",\"value\":%llu", (unsigned long long)ev->value);
	if (ev->n_kernel)
		fprintf(f, ",\"n_kernel\":%u", ev->n_kernel);
	if (ev->kind == XPU_REC_PMU_COUNTER) {
		fprintf(f, ",\"delta\":%llu,\"scale\":%.4f,\"scope\":%u",
			(unsigned long long)ev->delta, ev->scale, ev->sub_kind);
		if (ev->cpu != XPU_PMU_NO_CPU)
			fprintf(f, ",\"cpu\":%u", ev->cpu);
	}
	if (ev->kind == XPU_REC_RANGE) /* enum xpu_range_phase */
		fprintf(f, ",\"phase\":%u", ev->sub_kind);
	if (ev->corr_type)
		fprintf(f, ",\"joined\":\"%s\",\"confidence\":%.2f",
			xpu_corr_type__name(ev->corr_type), ev->confidence);
	if (ev->parent_id)
		fprintf(f, ",\"parent\":%llu,\"root\":%llu", (unsigned long long)ev->parent_id,
			(unsigned long long)ev->root_id);
	if (ev->kind >= XPU_REC_GPU_KERNEL && ev->kind <= XPU_REC_GPU_SYNC)
		fprintf(f, ",\"device\":%u,\"stream\":%u", ev->device, ev->stream);
	if (ev->n_links) {
		fputs(",\"links\":[", f);
		for (i = 0; i < ev->n_links; i++)
			fprintf(f, "%s[\"%s\",%llu]", i ? "," : "",
				xpu_link_type__name(ev->links[i].type),
				(unsigned long long)ev->links[i].target);
		fputc(']', f);
	}
	if (ev->name_len) {
		fputs(",\"name\":", f);
		dump__str(f, ev->name, ev->name_len);
	}
	if (ev->n_kernel + ev->n_user && ev->stack) {
		fputs(",\"stack\":[", f);
		for (i = 0; i < ev->n_kernel + ev->n_user; i++)
			fprintf(f, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)ev->stack[i]);
		fputc(']', f);
	}
	/* the frames' names beside the stack, null for a frame without one */
	if (ev->n_kernel + ev->n_user && ev->frames) {
		fputs(",\"frames\":[", f);
		for (i = 0; i < ev->n_kernel + ev->n_user; i++) {
			if (i)
				fputc(',', f);
			if (ev->frames[i])
				dump__str(f, ev->frames[i], (__u32)strlen(ev->frames[i]));
			else
				fputs("null", f);
		}
		fputc(']', f);
	}
	fputs("}\n", f);
}

#define SINK_MAX_EVENTS 8192
#define SINK_STEP_BATCHES 64
#define SINK_STACK_POOL (SINK_MAX_EVENTS * XPU_WIRE_STACK_MAX)
#define SINK_TEXT_POOL (64u << 20) /* as the sinks' (actors/sink/sink.c) */

/* Opens `dump` when the section has one; a restarted actor goes on after what its previous
 * run wrote. Returns 0 or -errno after saying why. */
static int dump__open(struct mesh *m, struct actor *a)
{
	bool again = status_load(&a->slot->restarts) != 0;
	char path[4096];

	if (conf_actor__path(a->conf, a->self, "dump", path, sizeof(path)))
		return 0;
	m->dump = fopen(path, again ? "ae" : "we");
	if (!m->dump) {
		fprintf(stderr, PROG ": unable to open %s: %s\n", path, strerror(errno));
		return -errno;
	}
	setvbuf(m->dump, NULL, _IOFBF, 1 << 20); /* large writes, not one per event */
	if (a->self->role == CONF_ROLE_CORRELATOR && !again) {
		struct xpu_replay_hdr h = { .magic = XPU_REPLAY_MAGIC, .event_abi = XPU_EVENT_ABI };

		fwrite(&h, sizeof(h), 1, m->dump);
	}
	return 0;
}

/* A sink of kind test listens where the correlators push (XPU_SINK_URL_FMT). */
static int sink__open(struct mesh *m, struct actor *a)
{
	int err = dump__open(m, a);

	if (err)
		return err;
	m->events = calloc(SINK_MAX_EVENTS, sizeof(*m->events));
	if (!m->events || xpu_wire_pool__init(&m->pool, SINK_STACK_POOL, SINK_TEXT_POOL))
		return -ENOMEM;
	if (sink__listen(&m->pull, a, 5)) /* the sinks' own socket (actors/sink/sink.c) */
		return -EIO;
	m->listening = true;
	m->wait = SINK_WAIT_INIT;
	m->c_batches = actor__counter(a, "batches_in");
	m->c_events = actor__counter(a, "events_in");
	m->c_gaps = actor__counter(a, "events_missed");
	m->c_rewinds = actor__counter(a, "seq_rewinds");
	m->c_bad = actor__counter(a, "bad_batches");
	m->c_p50 = actor__counter(a, "latency_p50_us");
	m->c_p99 = actor__counter(a, "latency_p99_us");
	m->c_named = actor__counter(a, "named_kernels");
	m->c_unnamed = actor__counter(a, "unnamed_kernels");
	m->c_stacked = actor__counter(a, "gpu_stacks");
	m->c_linked = actor__counter(a, "stream_links");
	m->c_weight = actor__counter(a, "sample_weight");
	return 0;
}

/* Take every batch waiting, decode it, count its events and the producer's sequence gaps.
 * take_every_ms: one batch a step, then a sleep that long (a slow sink on purpose). */
static void sink__step(struct mesh *m, struct actor *a, unsigned long long take_every_ms)
{
	struct xpu_wire_batch batch;
	void *buf;
	size_t len;

	__u64 before = m->batches + m->bad_batches;
	unsigned int n = 0;
	/* the first receive waits (NNG_OPT_RECVTIMEO, in poll where it can), the rest not */
	int flags = NNG_FLAG_ALLOC |
		    (sink_wait__readable(&m->wait, m->pull) ? NNG_FLAG_NONBLOCK : 0);

	/* At most SINK_STEP_BATCHES a step: the caller heartbeats between steps. */
	while (n++ < (take_every_ms ? 1 : SINK_STEP_BATCHES) &&
	       nng_recv(m->pull, &buf, &len, flags) == 0) {
		flags |= NNG_FLAG_NONBLOCK;
		if (xpu_wire_decode(buf, len, &xpu_wire_default_limits, &batch, m->events,
				    SINK_MAX_EVENTS, &m->pool, NULL)) {
			m->bad_batches++;
		} else {
			__u64 now = xpu_now_ns();
			__u32 e;

			m->batches++;
			m->events_in += batch.n_events;
			for (e = 0; e < batch.n_events; e++) {
				const struct xpu_cevent *ev = &m->events[e];
				__u32 l;

				if (m->dump)
					dump__event(m->dump, batch.producer, ev);
				for (l = 0; l < ev->n_links; l++)
					m->stream_links += ev->links[l].type ==
							   XPU_LINK_SAME_STREAM_PREV;
				if (ev->kind >= XPU_REC_GPU_KERNEL &&
				    ev->kind <= XPU_REC_GPU_SYNC && ev->n_user)
					m->gpu_stacks++;
				if (ev->kind == XPU_REC_CPU_SAMPLE)
					m->sample_weight += ev->value;

				if (ev->kind == XPU_REC_CUDA_API && now > ev->ts_ns)
					m->latency[latency_bucket(now - ev->ts_ns)]++;
				else if (ev->kind == XPU_REC_GPU_KERNEL && ev->name_len)
					m->named_kernels++;
				else if (ev->kind == XPU_REC_GPU_KERNEL)
					m->unnamed_kernels++;
			}
			xpu_wire_seq__batch(&m->gaps, &batch);
		}
		nng_free(buf, len);
	}
	actor__count(a, m->c_batches, m->batches);
	actor__count(a, m->c_events, m->events_in);
	actor__count(a, m->c_gaps, m->gaps.missed);
	actor__count(a, m->c_rewinds, m->gaps.rewinds);
	actor__count(a, m->c_bad, m->bad_batches);
	actor__count(a, m->c_p50, latency_pct(m, 50));
	actor__count(a, m->c_p99, latency_pct(m, 99));
	actor__count(a, m->c_named, m->named_kernels);
	actor__count(a, m->c_unnamed, m->unnamed_kernels);
	actor__count(a, m->c_stacked, m->gpu_stacks);
	actor__count(a, m->c_linked, m->stream_links);
	actor__count(a, m->c_weight, m->sample_weight);
	if (take_every_ms && m->batches + m->bad_batches > before)
		actor__sleep_ms(a, (unsigned int)take_every_ms);
}

/* Sources produce into ring.SELF.K for every shard K; correlator shard K consumes
 * ring.S.K for every source S. Other roles have no rings. */
static int mesh__open(struct mesh *m, struct actor *a)
{
	const struct conf *conf = a->conf;
	char name[128];
	unsigned int i;

	memset(m, 0, sizeof(*m));
	if (a->self->role == CONF_ROLE_SINK)
		return sink__open(m, a);
	if (a->self->role == CONF_ROLE_SOURCE) {
		for (i = 0; i < conf->shards; i++) {
			snprintf(name, sizeof(name), XPU_RING_NAME_FMT, a->self->name, i);
			m->rings[m->n] = ring__open(a->dirfd, name, RING_PRODUCER);
			if (!m->rings[m->n++])
				goto err;
		}
		m->c_records = actor__counter(a, "records_out");
		m->c_lost = actor__counter(a, "records_dropped");
	} else if (a->self->role == CONF_ROLE_CORRELATOR) {
		for (i = 0; i < conf->n_actors; i++) {
			if (conf->actors[i].role != CONF_ROLE_SOURCE)
				continue;
			snprintf(name, sizeof(name), XPU_RING_NAME_FMT, conf->actors[i].name,
				 a->self->shard);
			m->rings[m->n] = ring__open(a->dirfd, name, RING_CONSUMER);
			if (!m->rings[m->n++])
				goto err;
		}
		m->c_records = actor__counter(a, "records_in");
		m->c_lost = actor__counter(a, "records_lost");
		return dump__open(m, a);
	}
	return 0;
err:
	fprintf(stderr, PROG ": unable to open ring %s: %s\n", name, strerror(errno));
	return -errno;
}

static int count_record(const void *rec, __u32 size, void *ctx)
{
	struct mesh *m = ctx;
	const struct xpu_rec *h = rec;

	if (m->dump)
		fwrite(rec, size, 1, m->dump);
	if (h->type == XPU_REC_LOSS)
		m->lost += ((const struct xpu_loss *)rec)->count;
	else
		m->records++;
	return 0;
}

/* One step of data flow: a source writes what its rate allows since the last step. */
static void mesh__step(struct mesh *m, struct actor *a, const struct test_keys *k, __u64 since_ns)
{
	_Alignas(8) unsigned char rec[64];
	__u64 due, i;
	unsigned int r;

	if (a->self->role == CONF_ROLE_SOURCE && k->o.produce_per_s && m->n) {
		due = (xpu_now_ns() - since_ns) * k->o.produce_per_s / 1000000000ull;
		for (i = m->seq; i < due; i++) {
			r = (unsigned int)(i % m->n);
			xpu_string__build(rec, sizeof(rec), xpu_now_ns(), (__u32)getpid(),
					  (__u32)getpid(), i, XPU_STR_OTHER, "test", 4);
			if (ring__write(m->rings[r], rec, sizeof(struct xpu_string) + 8))
				m->lost++;
			else
				m->records++;
		}
		m->seq = due > m->seq ? due : m->seq;
		for (r = 0; r < m->n; r++)
			ring__flush(m->rings[r]);
	} else if (a->self->role == CONF_ROLE_CORRELATOR) {
		for (r = 0; r < m->n; r++)
			ring__consume(m->rings[r], count_record, m, 4096);
	} else if (m->listening) {
		sink__step(m, a, k->o.take_every_ms);
		return;
	}
	actor__count(a, m->c_records, m->records);
	actor__count(a, m->c_lost, m->lost);
}

static void mesh__close(struct mesh *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++)
		ring__close(m->rings[i]);
	if (m->listening)
		socket__close_within(m->pull, 1000, PROG);
	free(m->events);
	if (m->dump && fclose(m->dump))
		fprintf(stderr, PROG ": unable to write the dump: %s\n", strerror(errno));
	xpu_wire_pool__fini(&m->pool);
}

int main(int argc, char **argv)
{
	struct test_keys k;
	struct actor a;
	struct mesh m;
	__u64 ready_ns, now, since;
	int crash_now, misbehave;

	/* Crashes are on purpose: do not leave core files behind. */
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	if (load_keys(&a, &k)) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a.self->section);
		actor__fini(&a);
		return ACTOR_EXIT_PERMANENT;
	}
	if (k.o.ignore_sigterm)
		actor__ignore_sigterm(&a);
	if (mesh__open(&m, &a)) {
		mesh__close(&m);
		actor__fini(&a);
		return ACTOR_EXIT_RESTART;
	}
	if (k.o.never_ready) {
		while (!actor__stopping(&a))
			actor__sleep_ms(&a, 1000);
		mesh__close(&m);
		actor__fini(&a);
		return 0;
	}
	actor__sleep_ms(&a, (unsigned int)k.o.ready_delay_ms);
	actor__ready(&a);
	ready_ns = since = xpu_now_ns();
	/* The supervisor counts restarts in our slot: crash (or exit) only on the first
	 * crash_times starts, so a test can fail an actor exactly once. */
	misbehave = !k.o.crash_times || status_load(&a.slot->restarts) < k.o.crash_times;
	crash_now = k.crash && misbehave;

	while (!actor__stopping(&a) || k.o.ignore_sigterm) {
		now = xpu_now_ns();
		if (crash_now && now - ready_ns >= k.o.crash_after_ms * 1000000ull)
			abort();
		if (k.exit && misbehave && now - ready_ns >= k.o.exit_after_ms * 1000000ull) {
			mesh__close(&m);
			actor__fini(&a);
			return (int)k.o.exit_code;
		}
		if (k.hang && misbehave && now - ready_ns >= k.o.hang_after_ms * 1000000ull)
			for (;;) /* frozen: alive, no heartbeat */
				pause();
		mesh__step(&m, &a, &k, since);
		if (m.listening) /* a sink waits in nng_recv instead */
			actor__beat(&a);
		else
			actor__sleep_ms(&a, 5);
	}
	mesh__step(&m, &a, &k, since); /* flush what is left */
	mesh__close(&m);
	actor__fini(&a);
	return 0;
}
