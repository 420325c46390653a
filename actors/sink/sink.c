// SPDX-License-Identifier: MIT
/* The sink actor, and the sink driver it shares with `xpusup subscribe`; see sink.h. */
#include "actors/sink/sink.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>

#include "actors/actor.h"
#include "actors/sink/close.h"
#include "common/topology.h"

#define SINK_MAX_EVENTS 16384 /* a correlator batch is at most 4096 events and a few */
#define SINK_POOL_FRAMES (1u << 21) /* stack frames of one batch; touched as used */
/* the frame names of one batch: only a batch of pathologically short names needs more than its
 * own length (XPU_WIRE_TEXT_MAX), and messages are at most this long; touched as used */
#define SINK_POOL_TEXT (64u << 20)
#define SINK_RECVBUF 32 /* batches nng may queue for us */
#define STOP_DRAIN_NS (2 * 1000000000ull) /* at most, for the queue left at stop */
#define SINK_STEP_BATCHES 64 /* batches between heartbeats and ticks */
#define TICK_NS 100000000ull
#define SINK_CLOSE_MS 1000 /* the socket's close at exit (socket__close_within) */
#define DEC_SLOTS 4 /* batches the decode thread may have ready ahead of the format */

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
	struct sink_driver drv; /* the socket, the format, the batches and gaps counted */
	bool listening;
	struct sink_state *state; /* shared mapping, NULL when it could not be made */
	__u64 received, covered, lost; /* over every run of this sink */
	__u64 write_errors;
	int counters[C_N];
	int fmt_counters[FMT_COUNTERS_MAX];
	unsigned int n_fmt_counters;
	char snap_id[64]; /* the request whose snapshot is being written; "" none */
	__u64 snap_started, snap_refused; /* xpu_now_ns of the last of each */
};

/* SIGUSR1: a snapshot is asked for (snapshot_asked, at the next turn of the loop); plain:
 * by a `kill -USR1` of a user, not by `xpusup snapshot` (XPU_SNAPSHOT_SIGVAL). */
static volatile sig_atomic_t snapshot_signal, snapshot_plain;

static void on_sigusr1(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	if (info->si_code != SI_QUEUE || info->si_value.sival_int != XPU_SNAPSHOT_SIGVAL)
		snapshot_plain = 1;
	snapshot_signal = 1;
}

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
		c->next[p] = s->drv.seq.next[p];
		c->seen |= (__u64)s->drv.seq.seen[p] << p;
	}
	c->received = s->received;
	c->covered = s->covered;
	c->lost = s->lost;
	c->missed = s->drv.seq.missed;
	c->rewinds = s->drv.seq.rewinds;
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
	/* pairs with the release in state__commit */
	gen = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
	if (m->magic == SINK_STATE_MAGIC && gen) {
		const struct sink_state_slot *c = &m->slots[gen & 1];

		for (p = 0; p < SINK_STATE_PRODUCERS; p++) {
			s->drv.seq.next[p] = c->next[p];
			s->drv.seq.seen[p] = c->seen >> p & 1;
		}
		s->drv.seq.missed = c->missed;
		s->drv.seq.rewinds = c->rewinds;
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
	if (sink_driver__init(&s->drv))
		return -ENOMEM;
	if (sink__listen(&s->drv.sock, s->a, 20))
		return -EIO;
	s->listening = true;
	return 0;
}

static void publish(void *ctx)
{
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	struct sink *s = ctx;
	unsigned int i, n;

	actor__count(s->a, s->counters[C_BATCHES], s->drv.batches);
	actor__count(s->a, s->counters[C_EVENTS], s->received); /* over every run, as the gaps */
	actor__count(s->a, s->counters[C_MISSED], s->drv.seq.missed);
	actor__count(s->a, s->counters[C_REWINDS], s->drv.seq.rewinds);
	actor__count(s->a, s->counters[C_BAD], s->drv.bad);
	actor__count(s->a, s->counters[C_WRITE_ERRORS], s->write_errors);
	actor__count(s->a, s->counters[C_STATE_LOST], s->lost);
	if (!s->drv.fmt->counters)
		return;
	n = s->drv.fmt->counters(s->drv.st, names, values, FMT_COUNTERS_MAX);
	for (i = 0; i < n; i++) {
		if (i >= s->n_fmt_counters) /* formats name their counters once, in order */
			s->fmt_counters[s->n_fmt_counters++] = actor__counter(s->a, names[i]);
		actor__count(s->a, s->fmt_counters[i], values[i]);
	}
}

/* Each batch: counted over every run, and the state file says so before the next. */
static void batch_done(void *ctx, const struct xpu_wire_batch *b)
{
	struct sink *s = ctx;

	s->received += b->n_events;
	state__commit(s);
}

/* A write problem is shown and counted, and the sink goes on; it clears when a later write
 * works. */
static void outcome(void *ctx, int err, const char *why)
{
	struct sink *s = ctx;

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

/* The reply to request id (common/topology.h), renamed into place. */
static void snapshot_reply(const struct sink *s, const char *id, const char *state,
			   const char *path, const char *words)
{
	char name[192], tmp[208];
	FILE *f;
	int fd;

	snprintf(name, sizeof(name), XPU_SNAPSHOT_REPLY_FMT, s->a->self->name, id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(s->a->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return;
	}
	fprintf(f, "%s\n%s\n%s\n", state, path, words);
	if (fclose(f) == 0)
		renameat(s->a->dirfd, tmp, s->a->dirfd, name);
}

static void snapshot_done(struct sink *s);

/* One request: a snapshot into path (NULL: the format's own name); id "" for a plain
 * SIGUSR1, which has no reply file. */
static void snapshot_start(struct sink *s, const char *id, const char *path)
{
	char why[600] = "";
	int err;

	/* a snapshot that finished since the last look is told to its own asker first: the
	 * pending id is about to become this request's */
	snapshot_done(s);
	err = s->drv.fmt->snapshot ? s->drv.fmt->snapshot(s->drv.st, path, why, sizeof(why)) :
				     -ENOTSUP;
	if (err == -ENOTSUP && !why[0])
		snprintf(why, sizeof(why), "a %s sink keeps nothing to snapshot", s->drv.fmt->kind);
	if (err) {
		s->snap_refused = xpu_now_ns();
		fprintf(stderr, "%s: snapshot refused: %s\n", s->a->prog, why);
		actor__problem(s->a, "snapshot refused: %s", why);
		if (id[0])
			snapshot_reply(s, id, "error", path ? path : "", why);
		return;
	}
	s->snap_started = xpu_now_ns();
	snprintf(s->snap_id, sizeof(s->snap_id), "%s", id);
	if (id[0])
		snapshot_reply(s, id, "started", path ? path : "", "");
}

/* SIGUSR1 came: take every request file there is (`xpusup snapshot`), oldest name first as
 * the directory gives them; without any, a plain signal asks for a snapshot under the
 * format's own name (a request's signal that finds no file was merged with another's, whose
 * pass took its file). */
static void snapshot_asked(struct sink *s, bool plain)
{
	char prefix[96], buf[4200], *nl;
	struct dirent *de;
	unsigned int n = 0;
	size_t plen;
	ssize_t len;
	DIR *d;
	int fd;

	snprintf(prefix, sizeof(prefix), XPU_SNAPSHOT_REQ_FMT, s->a->self->name);
	plen = strlen(prefix);
	fd = openat(s->a->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		const char *id = de->d_name + plen;

		if (strncmp(de->d_name, prefix, plen) || !id[0] || strlen(id) >= 64 ||
		    strchr(id, '.'))
			continue; /* not a request, or one still being written (.tmp) */
		fd = openat(s->a->dirfd, de->d_name, O_RDONLY | O_CLOEXEC);
		len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		unlinkat(s->a->dirfd, de->d_name, 0);
		if (len < 0)
			continue;
		buf[len] = 0;
		nl = strchr(buf, '\n');
		if (nl)
			*nl = 0;
		snapshot_start(s, id, buf[0] ? buf : NULL);
		n++;
	}
	if (d)
		closedir(d);
	if (!n && plain)
		snapshot_start(s, "", NULL);
}

/* A snapshot finished (asked for, or fired by a trigger of the format): said in the log, in
 * the reply when one was asked for, and as the sink's problem when it failed. */
static void snapshot_done(struct sink *s)
{
	char path[4096], why[600];
	int r;

	if (!s->drv.fmt->snapshot_result)
		return;
	r = s->drv.fmt->snapshot_result(s->drv.st, path, sizeof(path), why, sizeof(why));
	if (!r)
		return;
	if (r > 0) {
		fprintf(stderr, "%s: snapshot written to %s: %s\n", s->a->prog, path, why);
		/* a refusal since it started stays shown: it is news to whoever asked */
		if (s->snap_refused < s->snap_started)
			actor__problem(s->a, NULL);
	} else {
		fprintf(stderr, "%s: snapshot to %s failed: %s\n", s->a->prog, path, why);
		actor__problem(s->a, "snapshot to %s failed: %s", path, why);
	}
	if (s->snap_id[0])
		snapshot_reply(s, s->snap_id, r > 0 ? "done" : "error", path, why);
	s->snap_id[0] = 0;
}

static bool stopping(void *ctx)
{
	const struct sink *s = ctx;

	return actor__stopping(s->a);
}

static void beat(void *ctx)
{
	struct sink *s = ctx;

	actor__beat(s->a);
	snapshot_done(s);
	if (snapshot_signal) {
		bool plain;

		/* the handler sets plain before the signal flag: cleared in the other order, a
		 * plain signal that comes meanwhile is either taken now or left for the next
		 * beat, never lost */
		snapshot_signal = 0;
		plain = __atomic_exchange_n(&snapshot_plain, 0, __ATOMIC_SEQ_CST);
		snapshot_asked(s, plain);
	}
}

static const struct sink_driver_ops sink_actor_ops = {
	.batch = batch_done,
	.outcome = outcome,
	.ticked = publish,
	.stopping = stopping,
	.beat = beat,
};

static void sink__close(struct sink *s)
{
	sink_driver__fini(&s->drv); /* first: its decode thread receives on the socket */
	if (s->drv.st)
		s->drv.fmt->free(s->drv.st);
	if (s->listening)
		socket__close_within(s->drv.sock, SINK_CLOSE_MS, s->a->prog);
	if (s->state)
		munmap(s->state, sizeof(*s->state));
}

int sink__main(int argc, char **argv, const struct fmt_ops *fmt)
{
	char prog[64], why[512];
	struct sink s = { .drv = { .fmt = fmt,
				   .ops = &sink_actor_ops,
				   .tick_at_once = true,
				   .decode_thread = true } };
	struct sigaction usr1 = { .sa_sigaction = on_sigusr1, .sa_flags = SA_SIGINFO };
	sigset_t all, old;
	struct fmt_env env;
	struct actor a;
	__u64 until, taken;
	int err, listen_err, i;

	/* first: the supervisor tells the pid at the fork, and SIGUSR1's default action ends
	 * the process, so a snapshot asked while it starts would kill it (it is taken after
	 * actor__ready, at the loop's first beat) */
	sigemptyset(&usr1.sa_mask);
	sigaction(SIGUSR1, &usr1, NULL);
	snprintf(prog, sizeof(prog), "xpusup-%s", fmt->kind);
	if (actor__init(&a, argc, argv, prog))
		return ACTOR_EXIT_PERMANENT;
	s.a = &a;
	s.drv.ctx = &s;
	env = (struct fmt_env){ .ctx = &a,
				.get = env_get,
				.path = env_path,
				.status = a.status,
				.session_dir = a.dir };
	env.conf = a.conf; /* a group reads its [format] sections */
	env.resume = state__open(&s);
	/* nng starts its threads at the first socket, with the mask of the thread that opens
	 * it: blocked there, a stop or SIGUSR1 comes to this thread, whose EINTR ends the loop's
	 * wait at once (one that landed on nng's threads waited out the receive timeout). One
	 * that comes meanwhile waits, pending, for the unblock. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = fmt->open(&s.drv.st, &env, why, sizeof(why));
	listen_err = err ? 0 : sink__open(&s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (listen_err) {
		sink__close(&s);
		actor__fini(&a);
		return ACTOR_EXIT_RESTART;
	}
	if (err) {
		fprintf(stderr, "%s: unable to start [%s]: %s\n", prog, a.self->section, why);
		actor__fini(&a);
		return err == -EINVAL ? ACTOR_EXIT_PERMANENT : ACTOR_EXIT_RESTART;
	}
	for (i = 0; i < C_N; i++)
		s.counters[i] = actor__counter(&a, counter_names[i]);
	actor__ready(&a);
	sink_driver__run(&s.drv);
	/* Stopping: the correlators stopped first; take what they left in the queue (up to
	 * SINK_RECVBUF batches, and the decode thread's slots) until a step that waits the
	 * receive timeout finds nothing. A fixed number of steps left batches behind where the
	 * decode thread hands over a few a step. */
	until = xpu_now_ns() + STOP_DRAIN_NS;
	do {
		taken = s.drv.batches + s.drv.bad;
		sink_driver__step(&s.drv, true);
	} while (s.drv.batches + s.drv.bad != taken && xpu_now_ns() < until);
	/* a snapshot asked for while stopping: started now, finished by finish and answered
	 * after it (a request left unread would keep its asker waiting its whole timeout) */
	beat(&s);
	why[0] = 0;
	err = fmt->finish(s.drv.st, why, sizeof(why));
	snapshot_done(&s); /* one asked for while stopping was finished by finish */
	outcome(&s, err ? err : FMT_COMPLETE, why);
	publish(&s);
	sink__close(&s);
	actor__fini(&a);
	return err ? 1 : 0; /* the final output is missing: say so in the exit status too */
}

/* ---- the driver ---------------------------------------------------------------------------- */

/*
 * The decode thread (sink_driver.decode_thread), on machines of more than 2 CPUs
 * (sink__one_thread): a batch is received and decoded while the format works on the one
 * before, so a sink that formats slowly (the timeline: a few hundred ns an event) is limited
 * by the slower of the two, not their sum. On 2 CPUs it cost about 10 % more sink CPU and
 * bought no speed (docs/performance.md). Slots go round in order:
 * the thread fills slot filled % DEC_SLOTS when fewer than DEC_SLOTS wait, the caller's
 * thread takes slot taken % DEC_SLOTS when taken < filled. Both counters and every slot's
 * contents change hands under mu: the unlock after a slot is filled pairs with the lock
 * before it is taken, and the unlock after it is taken with the lock before it is filled
 * again. A wake-up costs about 50 us here, so a side is woken only when it waits (want_*),
 * and a step takes every ready slot there is.
 */
struct dec_slot {
	void *buf; /* the message (nng's allocation), NULL: none */
	size_t len;
	int rc; /* what xpu_wire_decode returned */
	struct xpu_wire_batch b;
	struct xpu_cevent *events;
	struct xpu_wire_pool pool;
};

struct sink_decoder {
	struct sink_driver *d;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t ready_cv, room_cv;
	__u64 filled, taken;
	bool want_ready, want_room, stop;
	int err; /* a receive that failed otherwise than by finding nothing: for the next step */
	int wait_ms; /* the socket's receive timeout: how long a waiting step waits */
	struct dec_slot slot[DEC_SLOTS];
};

/* Zeroed memory the kernel gives only as it is touched: a pool sized for the largest batch
 * costs what batches use. calloc may clear it all first (glibc does under MALLOC_PERTURB_,
 * which the tests set: five pools of 96 MiB took seconds, past the watchdog). */
static void *zero_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void slot__fini(struct xpu_cevent **events, struct xpu_wire_pool *pool)
{
	if (*events)
		munmap(*events, SINK_MAX_EVENTS * sizeof(**events));
	if (pool->stack)
		munmap(pool->stack, SINK_POOL_FRAMES * sizeof(*pool->stack));
	if (pool->frames)
		munmap((void *)pool->frames, SINK_POOL_FRAMES * sizeof(*pool->frames));
	if (pool->text)
		munmap(pool->text, SINK_POOL_TEXT);
	*events = NULL;
	memset(pool, 0, sizeof(*pool));
}

static int slot__init(struct xpu_cevent **events, struct xpu_wire_pool *pool)
{
	*events = zero_map(SINK_MAX_EVENTS * sizeof(**events));
	*pool = (struct xpu_wire_pool){
		.stack = zero_map(SINK_POOL_FRAMES * sizeof(*pool->stack)),
		.stack_len = SINK_POOL_FRAMES,
		.frames = zero_map(SINK_POOL_FRAMES * sizeof(*pool->frames)),
		.text = zero_map(SINK_POOL_TEXT),
		.text_len = SINK_POOL_TEXT,
	};
	if (!*events || !pool->stack || !pool->frames || !pool->text) {
		slot__fini(events, pool);
		return -ENOMEM;
	}
	return 0;
}

int sink_driver__init(struct sink_driver *d)
{
	d->wait = SINK_WAIT_INIT;
	d->dec = NULL;
	return slot__init(&d->events, &d->pool);
}

bool sink__one_thread(void)
{
	const char *v = getenv("XPUSUP_SINK_THREADS");

	if (v && (!strcmp(v, "1") || !strcmp(v, "2")))
		return v[0] == '1';
	/* On two CPUs the correlators and sources keep the second one busy: a second thread
	 * only adds the handoff (about 10 % more sink CPU, no faster: docs/performance.md) */
	return sysconf(_SC_NPROCESSORS_ONLN) <= 2;
}

int sink__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		pthread_setname_np(*thread, name);
	return err;
}

static void *decoder__main(void *arg)
{
	struct sink_decoder *k = arg;
	struct sink_driver *d = k->d;
	struct dec_slot *sl;
	size_t len;
	void *buf;
	int rv;

	for (;;) {
		pthread_mutex_lock(&k->mu);
		while (!k->stop && k->filled - k->taken == DEC_SLOTS) {
			k->want_room = true;
			pthread_cond_wait(&k->room_cv, &k->mu);
		}
		k->want_room = false;
		if (k->stop) {
			pthread_mutex_unlock(&k->mu);
			return NULL;
		}
		sl = &k->slot[k->filled % DEC_SLOTS];
		pthread_mutex_unlock(&k->mu);

		rv = nng_recv(d->sock, &buf, &len,
			      NNG_FLAG_ALLOC |
				      (sink_wait__readable(&d->wait, d->sock) ? NNG_FLAG_NONBLOCK :
										0));
		if (rv == NNG_ETIMEDOUT || rv == NNG_EAGAIN)
			continue; /* nothing in time: look at stop again */
		if (rv) {
			pthread_mutex_lock(&k->mu);
			k->err = rv;
			pthread_mutex_unlock(&k->mu);
			if (rv == NNG_ECLOSED)
				return NULL;
			poll(NULL, 0, k->wait_ms); /* not a spin around a failing receive */
			continue;
		}
		sl->buf = buf;
		sl->len = len;
		sl->rc = xpu_wire_decode(buf, len, &xpu_wire_default_limits, &sl->b, sl->events,
					 SINK_MAX_EVENTS, &sl->pool, NULL);
		pthread_mutex_lock(&k->mu);
		k->filled++;
		if (k->want_ready)
			pthread_cond_signal(&k->ready_cv);
		pthread_mutex_unlock(&k->mu);
	}
}

static void decoder__free(struct sink_decoder *k)
{
	unsigned int i;

	for (i = 0; i < DEC_SLOTS; i++) {
		if (k->slot[i].buf)
			nng_free(k->slot[i].buf, k->slot[i].len);
		slot__fini(&k->slot[i].events, &k->slot[i].pool);
	}
	free(k);
}

/* Start the decode thread. 0, or -errno (then the caller's thread decodes, as without). */
static int decoder__start(struct sink_driver *d)
{
	struct sink_decoder *k = calloc(1, sizeof(*k));
	pthread_condattr_t ca;
	nng_duration ms;
	unsigned int i;
	int err;

	if (!k)
		return -ENOMEM;
	k->d = d;
	k->wait_ms = !nng_socket_get_ms(d->sock, NNG_OPT_RECVTIMEO, &ms) && ms > 0 ? (int)ms : 20;
	for (i = 0; i < DEC_SLOTS; i++) {
		if (slot__init(&k->slot[i].events, &k->slot[i].pool)) {
			decoder__free(k);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the step's deadline: xpu_now_ns */
	pthread_cond_init(&k->ready_cv, &ca);
	pthread_cond_init(&k->room_cv, NULL);
	pthread_condattr_destroy(&ca);
	err = sink__thread_start(&k->thread, decoder__main, k, "xpusup-decode");
	if (err) {
		pthread_cond_destroy(&k->ready_cv);
		pthread_cond_destroy(&k->room_cv);
		pthread_mutex_destroy(&k->mu);
		decoder__free(k);
		return err;
	}
	d->dec = k;
	return 0;
}

static void decoder__stop(struct sink_driver *d)
{
	struct sink_decoder *k = d->dec;

	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = true;
	pthread_cond_signal(&k->room_cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL); /* it sees stop within one receive timeout */
	pthread_cond_destroy(&k->ready_cv);
	pthread_cond_destroy(&k->room_cv);
	pthread_mutex_destroy(&k->mu);
	decoder__free(k);
	d->dec = NULL;
}

void sink_driver__fini(struct sink_driver *d)
{
	decoder__stop(d);
	slot__fini(&d->events, &d->pool);
}

bool sink_wait__readable(struct sink_wait *w, nng_socket sock)
{
	struct pollfd p;
	nng_duration ms;

	if (!w->known) {
		w->known = true;
		w->fd = -1;
		if (!nng_socket_get_ms(sock, NNG_OPT_RECVTIMEO, &ms) && ms >= 0 &&
		    nng_socket_get_int(sock, NNG_OPT_RECVFD, &w->fd))
			w->fd = -1;
		w->ms = w->fd >= 0 ? (int)ms : 0;
	}
	if (w->fd < 0)
		return false;
	p = (struct pollfd){ .fd = w->fd, .events = POLLIN };
	/* EINTR (a signal: stop, a snapshot) ends the wait early, as a message would */
	if ((poll(&p, 1, w->ms) < 0 && errno != EINTR) || (p.revents & POLLNVAL)) {
		w->fd = -1; /* never again: a loop around a failing poll would spin */
		return false;
	}
	return true;
}

/* One message, decoded (rc: xpu_wire_decode's) into b and events: counted, sequence-checked,
 * given to the format and to ops->batch. */
static void take(struct sink_driver *d, const void *buf, size_t len, int rc,
		 const struct xpu_wire_batch *b, const struct xpu_cevent *events)
{
	const struct fmt_ops *fmt = d->fmt;

	if (fmt->raw)
		fmt->raw(d->st, buf, len);
	if (rc) {
		d->bad++;
		return;
	}
	d->batches++;
	d->events_in += b->n_events;
	xpu_wire_seq__batch(&d->seq, b);
	if (fmt->batch)
		fmt->batch(d->st, b, events);
	if (d->ops->batch)
		d->ops->batch(d->ctx, b);
}

/* A step with the decode thread: what it has ready (waiting up to the receive timeout for a
 * first one when wait), each slot given back as soon as it is taken. */
static int step_threaded(struct sink_driver *d, bool wait)
{
	struct sink_decoder *k = d->dec;
	unsigned int n;
	__u64 avail;
	int err;

	pthread_mutex_lock(&k->mu);
	if (wait && k->taken == k->filled) {
		__u64 until = xpu_now_ns() + (__u64)k->wait_ms * 1000000ull;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };

		k->want_ready = true;
		while (k->taken == k->filled &&
		       pthread_cond_timedwait(&k->ready_cv, &k->mu, &ts) != ETIMEDOUT)
			;
		k->want_ready = false;
	}
	avail = k->filled - k->taken;
	err = k->err;
	k->err = 0;
	pthread_mutex_unlock(&k->mu);
	for (n = 0; n < avail && n < SINK_STEP_BATCHES; n++) {
		/* taken is this thread's to change: read without the lock */
		struct dec_slot *sl = &k->slot[k->taken % DEC_SLOTS];

		take(d, sl->buf, sl->len, sl->rc, &sl->b, sl->events);
		nng_free(sl->buf, sl->len);
		sl->buf = NULL;
		pthread_mutex_lock(&k->mu);
		k->taken++;
		if (k->want_room)
			pthread_cond_signal(&k->room_cv);
		pthread_mutex_unlock(&k->mu);
	}
	return err;
}

int sink_driver__step(struct sink_driver *d, bool wait)
{
	struct xpu_wire_batch b;
	unsigned int n = 0;
	int flags, rv = 0, rc;
	size_t len;
	void *buf;

	if (d->decode_thread && sink__one_thread())
		d->decode_thread = false;
	if (d->decode_thread && !d->dec && !d->max_batches) {
		rv = decoder__start(d);
		if (rv)
			fprintf(stderr,
				"xpusup-%s: no decode thread (%s): decoding on one thread\n",
				d->fmt->kind, strerror(-rv));
		else /* said once in the session log: the threads depend on the machine */
			fprintf(stderr, "xpusup-%s: decoding on a thread of its own\n",
				d->fmt->kind);
		d->decode_thread = false; /* tried once */
	}
	if (d->dec)
		return step_threaded(d, wait);
	flags = NNG_FLAG_ALLOC |
		(wait && !sink_wait__readable(&d->wait, d->sock) ? 0 : NNG_FLAG_NONBLOCK);
	while (n++ < SINK_STEP_BATCHES && (!d->max_batches || d->batches < d->max_batches)) {
		rv = nng_recv(d->sock, &buf, &len, flags);
		if (rv)
			break;
		flags |= NNG_FLAG_NONBLOCK;
		rc = xpu_wire_decode(buf, len, &xpu_wire_default_limits, &b, d->events,
				     SINK_MAX_EVENTS, &d->pool, NULL);
		take(d, buf, len, rc, &b, d->events);
		nng_free(buf, len);
	}
	return rv == NNG_ETIMEDOUT || rv == NNG_EAGAIN ? 0 : rv;
}

static void tick(struct sink_driver *d, __u64 now)
{
	char why[512];
	int err;

	if (d->fmt->tick) {
		why[0] = 0;
		err = d->fmt->tick(d->st, now, why, sizeof(why));
		d->ops->outcome(d->ctx, err, why);
	}
	if (d->ops->ticked)
		d->ops->ticked(d->ctx);
	d->last_tick = now;
}

int sink_driver__run(struct sink_driver *d)
{
	__u64 now;
	int rv;

	d->last_tick = d->tick_at_once ? 0 : xpu_now_ns();
	while (!d->ops->stopping(d->ctx) && (!d->max_batches || d->batches < d->max_batches)) {
		rv = sink_driver__step(d, true);
		if (rv && d->ops->recv_error && d->ops->recv_error(d->ctx, rv))
			return rv;
		now = xpu_now_ns();
		if (d->deadline_ns && now >= d->deadline_ns)
			break;
		if (now - d->last_tick >= TICK_NS)
			tick(d, now);
		if (d->ops->beat)
			d->ops->beat(d->ctx);
	}
	return 0;
}
