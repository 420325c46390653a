// SPDX-License-Identifier: MIT
/* The sink actor loop around a format; see sink.h. */
#include "actors/sink/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>

#include "actors/actor.h"

#define SINK_MAX_EVENTS 16384 /* a correlator batch is at most 4096 events and a few */
#define SINK_POOL_FRAMES (1u << 21) /* stack frames of one batch; touched as used */
/* the frame names of one batch: only a batch of pathologically short names needs more than its
 * own length (XPU_WIRE_TEXT_MAX), and messages are at most this long; touched as used */
#define SINK_POOL_TEXT (64u << 20)
#define SINK_RECVBUF 32 /* batches nng may queue for us */
#define SINK_STEP_BATCHES 64 /* batches between heartbeats and ticks */
#define TICK_NS 100000000ull

/*
 * What a sink must know after a kill -9 to report exactly what it lost: the file
 * `sink.NAME.state` in the session directory, rewritten (two slots and a generation, as the
 * correlator's checkpoint) after every batch. With it a restarted sink counts a batch lost
 * in transit as a sequence gap from where its predecessor stopped, and the events its
 * predecessor had received but not yet written in a complete output as `state_lost`.
 */
#define SINK_STATE_MAGIC 0x3154535f4b4e4953ull /* "SINK_ST1" */
#define SINK_STATE_PRODUCERS 32 /* CONF_MAX_SHARDS */

struct sink_state_slot {
	__u64 next[SINK_STATE_PRODUCERS];
	__u64 seen; /* bit per producer */
	__u64 received; /* events received, over every run of this sink */
	__u64 covered; /* of those, in the last complete output */
	__u64 lost; /* events lost with earlier runs' memory */
	__u64 missed, rewinds;
};

struct sink_state {
	__u64 magic;
	__u64 gen; /* slot gen & 1 is current */
	struct sink_state_slot slots[2];
};

enum {
	C_BATCHES,
	C_EVENTS,
	C_MISSED,
	C_REWINDS,
	C_BAD,
	C_WRITE_ERRORS,
	C_STATE_LOST,
	C_N,
};

static const char *const counter_names[C_N] = {
	[C_BATCHES] = "batches_in",    [C_EVENTS] = "events_in", [C_MISSED] = "events_missed",
	[C_REWINDS] = "seq_rewinds",   [C_BAD] = "bad_batches",	 [C_WRITE_ERRORS] = "write_errors",
	[C_STATE_LOST] = "state_lost",
};

struct sink {
	struct actor *a;
	const struct fmt_ops *fmt;
	void *st;
	nng_socket pull;
	bool listening;
	struct xpu_cevent *events;
	struct xpu_wire_pool pool;
	struct xpu_wire_seq seq;
	struct sink_state *state; /* shared mapping, NULL when it could not be made */
	__u64 received, covered, lost; /* over every run of this sink */
	__u64 batches, events_in, bad, write_errors;
	int counters[C_N];
	int fmt_counters[FMT_COUNTERS_MAX];
	unsigned int n_fmt_counters;
};

static const char *env_get(void *ctx, const char *key)
{
	const struct actor *a = ctx;

	return conf_actor__get(a->self, key);
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	const struct actor *a = ctx;

	return conf_actor__path(a->conf, a->self, key, buf, size);
}

static void state__commit(struct sink *s)
{
	struct sink_state *m = s->state;
	struct sink_state_slot *c;
	__u32 p;

	if (!m)
		return;
	c = &m->slots[(m->gen + 1) & 1];
	c->seen = 0;
	for (p = 0; p < SINK_STATE_PRODUCERS; p++) {
		c->next[p] = s->seq.next[p];
		c->seen |= (__u64)s->seq.seen[p] << p;
	}
	c->received = s->received;
	c->covered = s->covered;
	c->lost = s->lost;
	c->missed = s->seq.missed;
	c->rewinds = s->seq.rewinds;
	/* the slot before the generation that makes it current: pairs with the acquire load
	 * in state__open of the next run */
	__atomic_store_n(&m->gen, m->gen + 1, __ATOMIC_RELEASE);
}

/* Map the state file; a valid one means this is a restart: carry its accounting on. */
static bool state__open(struct sink *s)
{
	char name[96];
	struct sink_state *m;
	bool resume = false;
	__u64 gen;
	__u32 p;
	int fd;

	snprintf(name, sizeof(name), "sink.%.60s.state", s->a->self->name);
	fd = openat(s->a->dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*m))) {
		fprintf(stderr, "%s: unable to keep %s (restarts will not be accounted): %s\n",
			s->a->prog, name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	s->state = m;
	gen = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
	if (m->magic == SINK_STATE_MAGIC && gen) {
		const struct sink_state_slot *c = &m->slots[gen & 1];

		for (p = 0; p < SINK_STATE_PRODUCERS; p++) {
			s->seq.next[p] = c->next[p];
			s->seq.seen[p] = c->seen >> p & 1;
		}
		s->seq.missed = c->missed;
		s->seq.rewinds = c->rewinds;
		s->received = s->covered = c->received;
		s->lost = c->lost + (c->received - c->covered);
		resume = true;
		fprintf(stderr,
			"%s: restarted: %llu events received by the previous run after its last "
			"complete output were lost with it\n",
			s->a->prog, (unsigned long long)(c->received - c->covered));
	} else {
		memset(m, 0, sizeof(*m));
		m->magic = SINK_STATE_MAGIC;
	}
	state__commit(s);
	return resume;
}

int sink__listen(nng_socket *pull, const struct actor *a, int recv_ms)
{
	char url[4300];
	int rv;

	snprintf(url, sizeof(url), XPU_SINK_URL_FMT, a->dir, a->self->name);
	rv = nng_pull0_open(pull);
	if (!rv)
		rv = nng_socket_set_int(*pull, NNG_OPT_RECVBUF, SINK_RECVBUF);
	/* nng refuses messages over 1 MiB by default, and drops the connection with them; a
	 * batch of 4096 events with deep stacks is larger. The decoder has its own limit. */
	if (!rv)
		rv = nng_socket_set_size(*pull, NNG_OPT_RECVMAXSZ,
					 xpu_wire_default_limits.max_message);
	/* the loop waits in nng_recv, not in a sleep: a batch is taken the moment it comes */
	if (!rv)
		rv = nng_socket_set_ms(*pull, NNG_OPT_RECVTIMEO, recv_ms);
	if (!rv)
		rv = nng_listen(*pull, url, NULL, 0);
	if (rv) {
		fprintf(stderr, "%s: unable to listen on %s: %s\n", a->prog, url, nng_strerror(rv));
		return -EIO;
	}
	return 0;
}

static int sink__open(struct sink *s)
{
	s->events = calloc(SINK_MAX_EVENTS, sizeof(*s->events));
	if (!s->events || xpu_wire_pool__init(&s->pool, SINK_POOL_FRAMES, SINK_POOL_TEXT))
		return -ENOMEM;
	if (sink__listen(&s->pull, s->a, 20))
		return -EIO;
	s->listening = true;
	return 0;
}

static void publish(struct sink *s)
{
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	unsigned int i, n;

	actor__count(s->a, s->counters[C_BATCHES], s->batches);
	actor__count(s->a, s->counters[C_EVENTS], s->received); /* over every run, as the gaps */
	actor__count(s->a, s->counters[C_MISSED], s->seq.missed);
	actor__count(s->a, s->counters[C_REWINDS], s->seq.rewinds);
	actor__count(s->a, s->counters[C_BAD], s->bad);
	actor__count(s->a, s->counters[C_WRITE_ERRORS], s->write_errors);
	actor__count(s->a, s->counters[C_STATE_LOST], s->lost);
	if (!s->fmt->counters)
		return;
	n = s->fmt->counters(s->st, names, values, FMT_COUNTERS_MAX);
	for (i = 0; i < n; i++) {
		if (i >= s->n_fmt_counters) /* formats name their counters once, in order */
			s->fmt_counters[s->n_fmt_counters++] = actor__counter(s->a, names[i]);
		actor__count(s->a, s->fmt_counters[i], values[i]);
	}
}

/* Take up to SINK_STEP_BATCHES batches; the first receive waits up to the timeout. */
static void step(struct sink *s, bool wait)
{
	struct xpu_wire_batch b;
	unsigned int n = 0;
	int flags = NNG_FLAG_ALLOC | (wait ? 0 : NNG_FLAG_NONBLOCK);
	size_t len;
	void *buf;

	while (n++ < SINK_STEP_BATCHES && nng_recv(s->pull, &buf, &len, flags) == 0) {
		flags |= NNG_FLAG_NONBLOCK;
		if (s->fmt->raw)
			s->fmt->raw(s->st, buf, len);
		if (xpu_wire_decode(buf, len, &xpu_wire_default_limits, &b, s->events,
				    SINK_MAX_EVENTS, &s->pool, NULL)) {
			s->bad++;
		} else {
			s->batches++;
			s->events_in += b.n_events;
			s->received += b.n_events;
			xpu_wire_seq__batch(&s->seq, &b);
			if (s->fmt->batch)
				s->fmt->batch(s->st, &b, s->events);
			state__commit(s);
		}
		nng_free(buf, len);
	}
}

/* A write problem is shown and counted, and the sink goes on; it clears when a later write
 * works. */
static void outcome(struct sink *s, int err, const char *why)
{
	if (err == FMT_COMPLETE) { /* a complete output of everything so far */
		s->covered = s->received;
		state__commit(s);
	}
	if (err < 0) {
		s->write_errors++;
		actor__problem(s->a, "%s", why[0] ? why : strerror(-err));
	} else if (err != FMT_IDLE) {
		actor__problem(s->a, NULL);
	}
}

static void sink__close(struct sink *s)
{
	if (s->st)
		s->fmt->free(s->st);
	if (s->listening)
		nng_close(s->pull);
	if (s->state)
		munmap(s->state, sizeof(*s->state));
	free(s->events);
	xpu_wire_pool__fini(&s->pool);
}

int sink__main(int argc, char **argv, const struct fmt_ops *fmt)
{
	char prog[64], why[512];
	struct sink s = { .fmt = fmt };
	struct fmt_env env;
	__u64 last_tick = 0, now;
	struct actor a;
	int err, i;

	snprintf(prog, sizeof(prog), "xpusup-%s", fmt->kind);
	if (actor__init(&a, argc, argv, prog))
		return ACTOR_EXIT_PERMANENT;
	s.a = &a;
	env = (struct fmt_env){ .ctx = &a, .get = env_get, .path = env_path, .status = a.status };
	env.resume = state__open(&s);
	err = fmt->open(&s.st, &env, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s: unable to start [%s]: %s\n", prog, a.self->section, why);
		actor__fini(&a);
		return err == -EINVAL ? ACTOR_EXIT_PERMANENT : ACTOR_EXIT_RESTART;
	}
	err = sink__open(&s);
	if (err) {
		sink__close(&s);
		actor__fini(&a);
		return ACTOR_EXIT_RESTART;
	}
	for (i = 0; i < C_N; i++)
		s.counters[i] = actor__counter(&a, counter_names[i]);
	actor__ready(&a);
	while (!actor__stopping(&a)) {
		step(&s, true);
		now = xpu_now_ns();
		if (now - last_tick >= TICK_NS) {
			if (fmt->tick) {
				err = fmt->tick(s.st, now, why, sizeof(why));
				outcome(&s, err, why);
			}
			publish(&s);
			last_tick = now;
		}
		actor__beat(&a);
	}
	/* Stopping: the correlators stopped first; take what they left in the queue. */
	for (i = 0; i < 10; i++)
		step(&s, i < 5);
	err = fmt->finish(s.st, why, sizeof(why));
	outcome(&s, err ? err : FMT_COMPLETE, why);
	publish(&s);
	sink__close(&s);
	actor__fini(&a);
	return err ? 1 : 0; /* the final output is missing: say so in the exit status too */
}
