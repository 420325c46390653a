// SPDX-License-Identifier: MIT
/*
 * xpusup-subscribe, the program behind `xpusup subscribe` (which execs it: the xpusup
 * command links no format, nng or io_uring for it): a remote sink. It dials a session's
 * publish sink (kind publish) with an nng SUB socket subscribed to everything and runs the
 * sink driver (sink.h) on it, as a local sink does on its PULL socket: decode each batch,
 * count the sequence gaps per producer, hand it to a format (fmt.h) that writes its files
 * through out.h, tick. What is its own: the options, the URL and the dial with its retries
 * and TLS, raw (--format raw writes the messages as they came), words on stderr where a sink
 * has counters.
 *
 * Several URLs (several hosts' publish sinks): one SUB socket dials them all, and a format
 * of its own (hosts, below) stands between the driver and the user's format. Each batch
 * carries its host's origin (docs/wire.md, "Origin"): the sequence numbers are counted per
 * (host, producer), and the events are mapped before the format sees them, so the formats
 * need not know about hosts: times onto our CLOCK_MONOTONIC through both hosts' realtime
 * clocks, pids, devices and producers into ranges of their own per host, and the comm of each
 * process prefixed with its host ("alpha/python"). With one URL nothing is mapped: the
 * output is what it always was.
 *
 * Threads: the main one receives and feeds the format; a dial thread per URL connects,
 * retrying until it has (nng retries by itself only after a first connection, and says
 * nothing about why a connection fails: a TLS handshake refused is worth saying). Closing the
 * socket ends a dial in progress, which is how the main thread stops the dial threads.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/supplemental/tls/tls.h>

#include "actors/sink/clock_sync.h"
#include "actors/sink/fmt.h"
#include "actors/sink/out.h"
#include "actors/sink/sink.h"
#include "common/config.h"
#include "supervisor/supervisor.h" /* XPUSUP_EXIT_*: a command's exit codes */

#define SUB_RECVBUF 128 /* batches nng may queue for us; beyond that the oldest go */
#define SUB_OPTIONS_MAX 16
#define DIAL_DELAY_MAX_MS 1000
/* Hosts, and URLs: a host's pids become (index + 1) << HOST_PID_SHIFT | pid, which must stay
 * below the timeline's pseudo-processes (1 << 30) */
#define SUB_URLS_MAX 64
#define SUB_HOSTS_MAX 64
_Static_assert(SUB_HOSTS_MAX <= FMT_ORIGINS_MAX, "a row of fmt_origins for every host");
#define HOST_PID_SHIFT 22 /* Linux pids are below PID_MAX_LIMIT, 1 << 22 */
#define HOST_DEVICE_SHIFT 8 /* device ids below 256 */
#define HOST_PRODUCER_SHIFT 16 /* producer: host, session (8 bits), shard (8 bits) */
#define HOST_TAG_MAX 8 /* bytes of a host's name before a comm: "HOST/comm" */
#define HOST_CLOCK_MOVE_NS 1000000ll /* a host's realtime - monotonic moved: said */

static const char subscribe_usage[] =
	"usage: xpusup subscribe URL [URL...] [--format folded|trace|stats|pprof|metrics|raw]\n"
	"                        [-o FILE] [-O KEY=VALUE]... [--count N] [--seconds S]\n"
	"                        [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]\n"
	"\n"
	"Receive the correlated events a session's publish sink (kind = publish) sends, and\n"
	"write them with the same formats as the local sinks. URL is the sink's listen address:\n"
	"tcp://HOST:PORT, ipc:///PATH or tls+tcp://HOST:PORT. Connects when the session is\n"
	"there, retrying until then; reconnects after a drop. A subscriber too slow to keep up\n"
	"loses batches (the session never waits for it); the losses are counted from the\n"
	"sequence numbers.\n"
	"\n"
	"Several URLs (up to 64: one publish sink per host of a job) make one set of outputs:\n"
	"each host's times are mapped onto this machine's clock through the hosts' realtime\n"
	"clocks, its processes are named HOST/comm and get pids of their own ((n << 22) + pid\n"
	"for the n-th host seen), its GPUs device numbers of their own ((n - 1) * 256 + device).\n"
	"Sequence gaps, sessions and connections are counted per host. A host that goes away\n"
	"and comes back is counted, not fatal; one that never connects is reported at the end.\n"
	"\n"
	"  -f, --format NAME   folded, trace, stats, pprof (profile files, docs/fleet.md),\n"
	"                      metrics (a Prometheus endpoint: -O listen=ADDR:PORT), or raw:\n"
	"                      the messages as received, concatenated MessagePack batches\n"
	"                      (docs/wire.md); default raw\n"
	"  -o, --output FILE   the format's output file (its 'path'); raw: default stdout\n"
	"  -O, --option K=V    another option of the format, as in pipeline.conf (html=none,\n"
	"                      weight=samples, snapshot_s=0, interval_s=10, listen=...)\n"
	"  -n, --count N       stop after N batches\n"
	"  -t, --seconds S     stop after S seconds\n"
	"      --tls-ca FILE   tls+tcp: the CA that signed the publisher's certificate (PEM);\n"
	"                      required for tls+tcp\n"
	"      --tls-cert FILE tls+tcp: our certificate (PEM), for a publisher with tls_ca set\n"
	"      --tls-key FILE  tls+tcp: its private key (PEM, unencrypted)\n"
	"\n"
	"Stops on SIGINT/SIGTERM, --count or --seconds; then writes the output files whole and\n"
	"prints batches, events, events missed by sequence gaps and rewinds to stderr (with\n"
	"several URLs: then a line per host and a line per URL). Exit status 111 when no URL\n"
	"ever connected. See docs/publish.md and docs/fleet.md.\n";

/* Format names on the command line and the format kind that writes them. */
static const struct {
	const char *name;
	const char *kind; /* NULL: raw, written here */
} cli_formats[] = {
	{ "folded", "folded" }, { "trace", "timeline" },  { "stats", "stats" },
	{ "pprof", "pprof" },	{ "metrics", "metrics" }, { "raw", NULL },
};

/* The transports a publish sink listens on (publish.c). */
static const char *const schemes[] = { "tcp://",     "tcp4://",	    "tcp6://",	  "ipc://",
				       "tls+tcp://", "tls+tcp4://", "tls+tcp6://" };

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* ---- the format's options, from the command line ---- */

struct cli_env {
	const char *path; /* -o */
	const char *keys[SUB_OPTIONS_MAX], *values[SUB_OPTIONS_MAX]; /* -O, later ones win */
	unsigned int n;
};

static const char *cli_get(void *ctx, const char *key)
{
	const struct cli_env *e = ctx;
	unsigned int i;

	if (!strcmp(key, "path") && e->path)
		return e->path;
	for (i = e->n; i-- > 0;)
		if (!strcmp(e->keys[i], key))
			return e->values[i];
	return NULL;
}

/* Relative names are the user's, from the current directory, as every command line's. */
static int cli_path(void *ctx, const char *key, char *buf, size_t size)
{
	const char *v = cli_get(ctx, key);
	int n;

	if (!v)
		return -ENOENT;
	n = snprintf(buf, size, "%s", v);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* ---- raw: the messages as they came ---- */

struct raw {
	struct out *o; /* NULL: stdout */
	__u64 messages, bytes;
	int err; /* stdout's first write error */
};

static int raw_open(void **st, const struct fmt_env *env, char *why, size_t why_len)
{
	struct raw *r = calloc(1, sizeof(*r));
	char path[4096];
	int err;

	if (!r)
		return -ENOMEM;
	err = env->path(env->ctx, "path", path, sizeof(path));
	if (err == -ENAMETOOLONG) {
		snprintf(why, why_len, "output file name too long");
		goto free_raw;
	}
	if (!err && strcmp(path, "-")) {
		err = out__open(&r->o, path, why, why_len);
		if (err)
			goto free_raw;
	} else if (isatty(STDOUT_FILENO)) {
		snprintf(why, why_len,
			 "raw MessagePack is not for a terminal: use -o FILE or a pipe");
		err = -EINVAL;
		goto free_raw;
	}
	*st = r;
	return 0;
free_raw:
	free(r);
	return err;
}

static void raw_raw(void *st, const void *msg, size_t len)
{
	struct raw *r = st;

	r->messages++;
	r->bytes += len;
	if (r->o)
		out__write(r->o, msg, len); /* an error sticks and is reported at finish */
	else if (!r->err && fwrite(msg, 1, len, stdout) != len)
		r->err = errno ? -errno : -EIO;
}

static int raw_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct raw *r = st;

	(void)now_ns;
	if (r->o || r->err)
		return 0;
	/* a pipe reader sees batches as they come, not a buffer at a time */
	if (fflush(stdout))
		r->err = -errno;
	if (r->err)
		snprintf(why, why_len, "unable to write to stdout: %s", strerror(-r->err));
	return r->err;
}

static int raw_finish(void *st, char *why, size_t why_len)
{
	struct raw *r = st;
	int err;

	if (r->o) {
		err = out__commit(r->o, why, why_len);
		r->o = NULL;
		return err;
	}
	if (!r->err && fflush(stdout))
		r->err = -errno;
	if (r->err)
		snprintf(why, why_len, "unable to write to stdout: %s", strerror(-r->err));
	return r->err;
}

static void raw_free(void *st)
{
	struct raw *r = st;

	if (!r)
		return;
	out__abort(r->o);
	free(r);
}

static const struct fmt_ops fmt_raw = {
	.kind = "raw",
	.open = raw_open,
	.raw = raw_raw,
	.tick = raw_tick,
	.finish = raw_finish,
	.free = raw_free,
};

/* ---- several hosts: accounting and mapping between the driver and the format ---- */

/* One host, as its batches name it ("host"; "unknown" for a publisher that names none). */
struct host {
	char name[XPU_WIRE_HOST_MAX + 1];
	__u32 name_len;
	__u32 index; /* in the order hosts were first seen: the pid, device, producer ranges */
	struct xpu_wire_seq seq; /* per producer, of this host's current session */
	__u64 batches, events;
	__u64 session; /* the current one's id; 0: none named */
	__u64 sessions; /* sessions seen: more than 1 means the host's session restarted */
	__u64 clock_mono, clock_real; /* its latest pair; both 0: none yet */
	__s64 shift_ns; /* added to its times: onto our CLOCK_MONOTONIC */
	__u64 clock_moves; /* pairs whose realtime - monotonic moved (a realtime step there) */
	__u64 clamped; /* times that mapped below 0 and were set to 0 */
	__u64 clock_syncs; /* CLOCK_SYNC events not handed on (see hosts_batch) */
};

struct hosts {
	const struct fmt_ops *inner;
	void *inner_st;
	struct host *host[SUB_HOSTS_MAX];
	unsigned int n;
	__u64 overflow; /* batches of hosts past SUB_HOSTS_MAX: counted, not handed on */
	__s64 our_offset; /* realtime - monotonic here, read once at the start */
	struct xpu_cevent *ev; /* the mapped copy of a batch's events */
	__u32 ev_cap;
	char *names; /* the prefixed comms of a batch */
	size_t names_cap;
	struct fmt_origins *origins; /* the format's view of the counts (fmt_env.origins) */
};

static struct host *host_of(struct hosts *hs, const struct xpu_wire_origin *o)
{
	const char *name = o->host ? o->host : "unknown";
	__u32 len = o->host ? o->host_len : 7;
	struct host *h;
	unsigned int i;

	for (i = 0; i < hs->n; i++)
		if (hs->host[i]->name_len == len && !memcmp(hs->host[i]->name, name, len))
			return hs->host[i];
	if (hs->n == SUB_HOSTS_MAX)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	memcpy(h->name, name, len);
	h->name_len = len;
	h->index = hs->n;
	hs->host[hs->n++] = h;
	fprintf(stderr, "xpusup: subscribe: host %s: first batch; its pids become %u << %d + pid\n",
		h->name, h->index + 1, HOST_PID_SHIFT);
	return h;
}

/* A batch's origin against what its host said before: a new session starts its sequence
 * numbers anew; a new clock pair moves the shift. */
static void host_origin(struct host *h, const struct xpu_wire_origin *o, __s64 our_offset)
{
	__s64 shift;

	if (o->session && o->session != h->session) {
		if (h->sessions)
			fprintf(stderr,
				"xpusup: subscribe: host %s: a new session (it restarted); its "
				"sequence numbers start anew\n",
				h->name);
		/* the gaps and rewinds counted so far stay; the expectations go */
		memset(h->seq.next, 0, sizeof(h->seq.next));
		memset(h->seq.seen, 0, sizeof(h->seq.seen));
		h->session = o->session;
		h->sessions++;
	}
	if (!o->clock_mono_ns && !o->clock_real_ns)
		return; /* no pair (an older publisher): its times are taken as ours */
	if (o->clock_mono_ns == h->clock_mono && o->clock_real_ns == h->clock_real)
		return;
	shift = (__s64)(o->clock_real_ns - o->clock_mono_ns) - our_offset;
	if ((h->clock_mono || h->clock_real) && (shift - h->shift_ns > HOST_CLOCK_MOVE_NS ||
						 h->shift_ns - shift > HOST_CLOCK_MOVE_NS)) {
		h->clock_moves++;
		fprintf(stderr,
			"xpusup: subscribe: host %s: its realtime clock moved by %+.6f s against its "
			"monotonic one; mapping its times with the new pair\n",
			h->name, (double)(shift - h->shift_ns) / 1e9);
	}
	h->clock_mono = o->clock_mono_ns;
	h->clock_real = o->clock_real_ns;
	h->shift_ns = shift;
}

static __u64 host_time(struct host *h, __u64 t)
{
	if (!t)
		return 0; /* absent (an instant's end) stays absent */
	if (h->shift_ns < 0 && t <= (__u64)-h->shift_ns) {
		h->clamped++;
		return 1;
	}
	return t + (__u64)h->shift_ns;
}

static __u32 host_pid(const struct host *h, __u32 pid)
{
	return (h->index + 1) << HOST_PID_SHIFT | (pid & ((1u << HOST_PID_SHIFT) - 1));
}

static bool names_comm(__u16 kind)
{
	return kind == XPU_REC_CPU_SAMPLE || kind == XPU_REC_PROC_EXEC || kind == XPU_REC_PROC_EXIT;
}

static bool on_gpu(__u16 kind)
{
	return kind == XPU_REC_GPU_KERNEL || kind == XPU_REC_GPU_MEMCPY ||
	       kind == XPU_REC_GPU_MEMSET || kind == XPU_REC_GPU_SYNC || kind == XPU_REC_GPU_MEMORY;
}

/* Room for a batch of n events and their prefixed comms. 0 or -ENOMEM. */
static int hosts_room(struct hosts *hs, const struct host *h, const struct xpu_cevent *ev, __u32 n)
{
	size_t names = 0;
	__u32 i;
	void *p;

	for (i = 0; i < n; i++)
		if (names_comm(ev[i].kind))
			names += h->name_len + 1 + ev[i].name_len;
	if (n > hs->ev_cap) {
		p = realloc(hs->ev, n * sizeof(*hs->ev));
		if (!p)
			return -ENOMEM;
		hs->ev = p;
		hs->ev_cap = n;
	}
	if (names > hs->names_cap) {
		p = realloc(hs->names, names);
		if (!p)
			return -ENOMEM;
		hs->names = p;
		hs->names_cap = names;
	}
	return 0;
}

/*
 * A batch: counted against its host's sequence numbers, then its events mapped into a copy
 * that the format gets. CLOCK_SYNC events stay here: their readings are of one host's clocks
 * (its GPU's against its monotonic one) and a format's single fit per clock would mix the
 * hosts' into nonsense.
 */
static void hosts_batch(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct hosts *hs = st;
	struct xpu_wire_batch mb = *b;
	struct host *h = host_of(hs, &b->origin);
	size_t at = 0;
	__u32 i, n = 0;

	if (!h) {
		hs->overflow++;
		return;
	}
	host_origin(h, &b->origin, hs->our_offset);
	xpu_wire_seq__batch(&h->seq, b);
	h->batches++;
	h->events += b->n_events;
	if (!hs->inner->batch)
		return; /* raw: the messages went as they came */
	if (hosts_room(hs, h, ev, b->n_events)) {
		fprintf(stderr, "xpusup: subscribe: out of memory: a batch of %s not written\n",
			h->name);
		return;
	}
	for (i = 0; i < b->n_events; i++) {
		struct xpu_cevent *e = &hs->ev[n];

		if (ev[i].kind == XPU_REC_CLOCK_SYNC) {
			h->clock_syncs++;
			continue;
		}
		*e = ev[i];
		e->ts_ns = host_time(h, e->ts_ns);
		e->end_ns = host_time(h, e->end_ns);
		/* a main thread stays its process's (tid == pid): the formats look for it */
		e->tid = e->tid == e->pid ? host_pid(h, e->pid) : e->tid;
		e->pid = host_pid(h, e->pid);
		if (on_gpu(e->kind))
			e->device = h->index << HOST_DEVICE_SHIFT | (e->device & 0xff);
		/* no comm stays no comm: a prefix alone would overwrite the comm an exec taught
		 * the formats. The formats keep 16 bytes of a comm, so the host goes in short:
		 * its name up to the first '.', and of a longer one the last HOST_TAG_MAX bytes,
		 * where names of one cluster differ ("ip-10-0-12-34.ec2" -> "-0-12-34/python"). */
		if (names_comm(e->kind) && ev[i].name_len) {
			size_t label = strcspn(h->name, "."), tag, from;

			label = label ? label : h->name_len;
			tag = label < HOST_TAG_MAX ? label : HOST_TAG_MAX;
			from = label - tag;
			memcpy(hs->names + at, h->name + from, tag);
			hs->names[at + tag] = '/';
			memcpy(hs->names + at + tag + 1, ev[i].name, ev[i].name_len);
			e->name = hs->names + at;
			e->name_len = (__u32)tag + 1 + ev[i].name_len;
			at += e->name_len;
		}
		n++;
	}
	/* event ids are unique per producer and session: the host and its session join them */
	mb.producer = (h->index + 1) << HOST_PRODUCER_SHIFT | (__u32)(h->sessions & 0xff) << 8 |
		      (b->producer & 0xff);
	mb.n_events = n;
	hs->inner->batch(hs->inner_st, &mb, hs->ev);
}

static void hosts_raw(void *st, const void *msg, size_t len)
{
	struct hosts *hs = st;

	if (hs->inner->raw)
		hs->inner->raw(hs->inner_st, msg, len);
}

/* The hosts' counts into the rows the format reads (fmt_env.origins). */
static void hosts__sync(struct hosts *hs)
{
	unsigned int i;

	for (i = 0; i < hs->n && i < FMT_ORIGINS_MAX; i++) {
		const struct host *h = hs->host[i];

		hs->origins->row[i] = (struct fmt_origin){ .batches = h->batches,
							   .events = h->events,
							   .missed = h->seq.missed,
							   .rewinds = h->seq.rewinds,
							   .sessions = h->sessions,
							   .clock_moves = h->clock_moves };
		memcpy(hs->origins->row[i].host, h->name, h->name_len);
	}
	hs->origins->n = i;
}

static int hosts_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct hosts *hs = st;

	hosts__sync(hs);
	return hs->inner->tick ? hs->inner->tick(hs->inner_st, now_ns, why, why_len) : FMT_IDLE;
}

static int hosts_finish(void *st, char *why, size_t why_len)
{
	struct hosts *hs = st;

	hosts__sync(hs);
	return hs->inner->finish(hs->inner_st, why, why_len);
}

static void hosts_free(void *st)
{
	struct hosts *hs = st;
	unsigned int i;

	if (!hs)
		return;
	hs->inner->free(hs->inner_st);
	for (i = 0; i < hs->n; i++)
		free(hs->host[i]);
	free(hs->ev);
	free(hs->names);
	free(hs);
}

static const struct fmt_ops fmt_hosts = {
	.kind = "hosts",
	.raw = hosts_raw,
	.batch = hosts_batch,
	.tick = hosts_tick,
	.finish = hosts_finish,
	.free = hosts_free,
};

/* The hosts' state around an opened format (inner_st is its from then on: hosts_free frees
 * it). NULL when out of memory (then inner_st is still the caller's). */
static struct hosts *hosts__new(const struct fmt_ops *inner, void *inner_st,
				struct fmt_origins *origins)
{
	struct hosts *hs = calloc(1, sizeof(*hs));
	__u64 mono, real;

	if (!hs)
		return NULL;
	hs->inner = inner;
	hs->inner_st = inner_st;
	hs->origins = origins;
	sink_clocks__realtime_pair(&mono, &real);
	hs->our_offset = (__s64)(real - mono);
	return hs;
}

/* The per-host lines of the summary; the sums of their gaps and rewinds into *missed and
 * *rewinds. */
static void hosts__report(const struct hosts *hs, __u64 *missed, __u64 *rewinds)
{
	const struct host *h;
	unsigned int i;

	*missed = *rewinds = 0;
	for (i = 0; i < hs->n; i++) {
		h = hs->host[i];
		*missed += h->seq.missed;
		*rewinds += h->seq.rewinds;
		fprintf(stderr,
			"xpusup: subscribe: host %s: %" PRIu64 " batches, %" PRIu64
			" events, %" PRIu64 " events missed (sequence gaps), %" PRIu64
			" rewinds, %" PRIu64 " sessions, pids %u << %d + pid, clock shift %+" PRId64
			" ns, %" PRIu64 " clock moves\n",
			h->name, (uint64_t)h->batches, (uint64_t)h->events, (uint64_t)h->seq.missed,
			(uint64_t)h->seq.rewinds, (uint64_t)h->sessions, h->index + 1,
			HOST_PID_SHIFT, (int64_t)h->shift_ns, (uint64_t)h->clock_moves);
		if (h->clamped || h->clock_syncs)
			fprintf(stderr,
				"xpusup: subscribe: host %s: %" PRIu64
				" times mapped before 0 (set to 1 ns), %" PRIu64
				" CLOCK_SYNC events kept out of the output\n",
				h->name, (uint64_t)h->clamped, (uint64_t)h->clock_syncs);
	}
	if (hs->overflow)
		fprintf(stderr,
			"xpusup: subscribe: %" PRIu64
			" batches of hosts past the first %d dropped\n",
			(uint64_t)hs->overflow, SUB_HOSTS_MAX);
}

/* ---- connecting ---- */

/* One URL: its dial thread, and what its connections did. */
struct dial {
	nng_socket sub; /* every URL's dialer is on the one socket */
	const char *url;
	nng_tls_config *tls; /* NULL: not tls+tcp */
	pthread_t thread;
	bool thread_started;
	bool stopping; /* set by the main thread before it closes the socket */
	bool connected; /* the first connection is made */
	/* written by nng's pipe callbacks (relaxed: counts to show, ordered by nothing) */
	__u32 dialer_id; /* of the dialer now trying or connected; 0: none yet */
	__u64 connections, drops;
	char last_error[320];
};

/* Every URL's dial, for the pipe callback, which names the URL of a connection. */
struct dials {
	struct dial d[SUB_URLS_MAX];
	unsigned int n;
};

/* One attempt; blocks until connected or failed. 0, or an nng error with the dialer closed. */
static int dial_once(struct dial *d)
{
	nng_dialer dialer;
	int rv;

	rv = nng_dialer_create(&dialer, d->sub, d->url);
	if (rv)
		return rv;
	/* before the start: its first pipe is announced while nng_dialer_start() runs */
	__atomic_store_n(&d->dialer_id, (__u32)nng_dialer_id(dialer), __ATOMIC_RELAXED);
	if (d->tls)
		rv = nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, d->tls);
	/* after a first success nng redials by itself whenever the connection drops; a
	 * failed synchronous start is final for this dialer, hence a new one each time */
	if (!rv)
		rv = nng_dialer_start(dialer, 0);
	if (rv)
		nng_dialer_close(dialer);
	return rv;
}

/* nng's words for a failed dial, and for TLS what they usually mean. */
static void dial_error(const struct dial *d, int rv, char *buf, size_t size)
{
	const char *hint = "";

	if (d->tls && (rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH))
		hint = " (TLS handshake failed: the publisher's certificate does not verify "
		       "against --tls-ca or its name is not the URL's host, or it refused our "
		       "certificate)";
	else if (d->tls && (rv == NNG_ECONNSHUT || rv == NNG_ECLOSED))
		hint = " (the publisher ended the TLS handshake: does it want a client "
		       "certificate, --tls-cert and --tls-key?)";
	snprintf(buf, size, "%s%s", nng_strerror(rv), hint);
}

static void *dial_thread(void *arg)
{
	struct dial *d = arg;
	unsigned int delay_ms = 100, waited;
	char error[sizeof(d->last_error)];
	int rv;

	/* stopping and connected: relaxed; pthread_join() orders them for the main thread's
	 * last look, and a stale read costs one more attempt or one more wait */
	while (!__atomic_load_n(&d->stopping, __ATOMIC_RELAXED)) {
		rv = dial_once(d);
		if (!rv) {
			__atomic_store_n(&d->connected, true, __ATOMIC_RELAXED);
			return NULL;
		}
		if (__atomic_load_n(&d->stopping, __ATOMIC_RELAXED))
			return NULL; /* the main thread closed the socket under the dial */
		dial_error(d, rv, error, sizeof(error));
		if (strcmp(d->last_error, error)) {
			/* said once per reason: a session not started yet is not news every
			 * second */
			snprintf(d->last_error, sizeof(d->last_error), "%s", error);
			fprintf(stderr,
				"xpusup: subscribe: unable to connect to %s: %s; retrying\n",
				d->url, d->last_error);
		}
		for (waited = 0;
		     waited < delay_ms && !__atomic_load_n(&d->stopping, __ATOMIC_RELAXED);
		     waited += 50)
			nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
		delay_ms = delay_ms * 2 > DIAL_DELAY_MAX_MS ? DIAL_DELAY_MAX_MS : delay_ms * 2;
	}
	return NULL;
}

static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct dials *ds = arg;
	__u32 id = (__u32)nng_dialer_id(nng_pipe_dialer(p));
	struct dial *d = NULL;
	unsigned int i;

	for (i = 0; i < ds->n && !d; i++)
		if (__atomic_load_n(&ds->d[i].dialer_id, __ATOMIC_RELAXED) == id)
			d = &ds->d[i];
	if (!d || __atomic_load_n(&d->stopping, __ATOMIC_RELAXED))
		return;
	if (ev == NNG_PIPE_EV_ADD_POST) {
		__atomic_fetch_add(&d->connections, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "xpusup: subscribe: connected to %s\n", d->url);
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		__atomic_fetch_add(&d->drops, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "xpusup: subscribe: disconnected from %s; reconnecting\n", d->url);
	}
}

struct tls_files {
	const char *ca, *cert, *key;
};

static char *read_file(const char *path, char *why, size_t why_len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(why, why_len, "unable to read %s: %s", path, strerror(errno));
		return NULL;
	}
	buf = malloc((1u << 20) + 1);
	n = buf ? fread(buf, 1, 1u << 20, f) : 0;
	if (buf && (ferror(f) || !feof(f))) {
		snprintf(why, why_len, "unable to read %s: %s", path,
			 ferror(f) ? "read error" : "larger than 1 MiB");
		free(buf);
		buf = NULL;
	} else if (buf) {
		buf[n] = 0;
	} else {
		snprintf(why, why_len, "out of memory reading %s", path);
	}
	fclose(f);
	return buf;
}

/* The client's TLS configuration: verify the publisher against the CA (and its name against
 * the URL's host), and present our certificate when given. 0 and *cfg, or -EINVAL with why. */
static int tls_setup(const char *url, const struct tls_files *t, nng_tls_config **cfg, char *why,
		     size_t why_len)
{
	char *cert = NULL, *key = NULL;
	nng_url *u = NULL;
	int rv, err = -EINVAL;

	rv = nng_tls_config_alloc(cfg, NNG_TLS_MODE_CLIENT);
	if (rv == NNG_ENOTSUP) {
		snprintf(why, why_len,
			 "TLS is not available: this libnng was built without a TLS engine "
			 "(nng needs NNG_ENABLE_TLS with mbedTLS)");
		return -EINVAL;
	}
	if (rv) {
		snprintf(why, why_len, "unable to set up TLS: %s", nng_strerror(rv));
		return -ENOMEM;
	}
	rv = nng_url_parse(&u, url);
	if (!rv)
		rv = nng_tls_config_server_name(*cfg, u->u_hostname);
	if (rv) {
		snprintf(why, why_len, "bad URL '%s': %s", url, nng_strerror(rv));
		goto free_cfg;
	}
	rv = nng_tls_config_ca_file(*cfg, t->ca);
	if (rv) {
		snprintf(why, why_len, "bad --tls-ca %s: %s", t->ca, nng_strerror(rv));
		goto free_cfg;
	}
	rv = nng_tls_config_auth_mode(*cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	if (rv) {
		snprintf(why, why_len, "unable to set the TLS auth mode: %s", nng_strerror(rv));
		goto free_cfg;
	}
	if (t->cert) {
		cert = read_file(t->cert, why, why_len);
		key = cert ? read_file(t->key, why, why_len) : NULL;
		if (!key)
			goto free_cfg;
		rv = nng_tls_config_own_cert(*cfg, cert, key, NULL);
		if (rv) {
			snprintf(why, why_len, "bad --tls-cert %s or --tls-key %s: %s", t->cert,
				 t->key, nng_strerror(rv));
			goto free_cfg;
		}
	}
	err = 0;
	goto free_pem;
free_cfg:
	nng_tls_config_free(*cfg);
	*cfg = NULL;
free_pem:
	free(cert);
	free(key);
	nng_url_free(u);
	return err;
}

/* ---- receiving: the sink driver (sink.h), with words on stderr for counters ---- */

struct subscriber {
	struct sink_driver drv;
	char problem[512]; /* the format's last complaint, said once */
};

/* A write problem is said when it appears and the subscriber goes on, as a sink does; a
 * later write that works (FMT_WROTE, FMT_COMPLETE) ends it. */
static void outcome(void *ctx, int err, const char *why)
{
	struct subscriber *s = ctx;
	const char *text = why[0] ? why : strerror(-err);

	if (err < 0 && strcmp(text, s->problem)) {
		fprintf(stderr, "xpusup: subscribe: %s\n", text);
		snprintf(s->problem, sizeof(s->problem), "%s", text);
	} else if (err > 0 && s->problem[0]) {
		fprintf(stderr, "xpusup: subscribe: writing works again\n");
		s->problem[0] = 0;
	}
}

static bool stopping(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
}

static bool recv_error(void *ctx, int nng_err)
{
	(void)ctx;
	fprintf(stderr, "xpusup: subscribe: receive: %s\n", nng_strerror(nng_err));
	return true;
}

static const struct sink_driver_ops subscriber_ops = {
	.outcome = outcome,
	.stopping = stopping,
	.recv_error = recv_error,
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "xpusup: unable to subscribe: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see `xpusup subscribe --help`)\n");
	return XPUSUP_EXIT_USAGE;
}

static int open_socket(nng_socket *sub, struct dials *ds)
{
	int rv;

	rv = nng_sub0_open(sub);
	if (rv)
		return rv;
	rv = nng_socket_set(*sub, NNG_OPT_SUB_SUBSCRIBE, "", 0);
	/* nng's default of 1 MiB would drop a large batch and the connection with it */
	if (!rv)
		rv = nng_socket_set_size(*sub, NNG_OPT_RECVMAXSZ,
					 xpu_wire_default_limits.max_message);
	if (!rv)
		rv = nng_socket_set_int(*sub, NNG_OPT_RECVBUF, SUB_RECVBUF);
	/* the loop waits in nng_recv, not in a sleep, and looks at the clock between */
	if (!rv)
		rv = nng_socket_set_ms(*sub, NNG_OPT_RECVTIMEO, 50);
	if (!rv)
		rv = nng_socket_set_ms(*sub, NNG_OPT_RECONNMINT, 100);
	if (!rv)
		rv = nng_socket_set_ms(*sub, NNG_OPT_RECONNMAXT, DIAL_DELAY_MAX_MS);
	if (!rv)
		rv = nng_pipe_notify(*sub, NNG_PIPE_EV_ADD_POST, on_pipe, ds);
	if (!rv)
		rv = nng_pipe_notify(*sub, NNG_PIPE_EV_REM_POST, on_pipe, ds);
	if (rv)
		nng_close(*sub);
	return rv;
}

/* The URLs on the command line into ds: each a publish sink's scheme, parsed by nng, given
 * once. 0, or the usage error's exit code after saying it. */
static int take_urls(struct dials *ds, char **urls, int n, bool *any_tls)
{
	unsigned int i, j;
	nng_url *url;
	int rv;

	if (n < 1)
		return usage_error("%s", "expected a URL");
	if (n > SUB_URLS_MAX)
		return usage_error("more than %d URLs", SUB_URLS_MAX);
	for (j = 0; j < (unsigned int)n; j++) {
		const char *u = urls[j];

		for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
			if (!strncmp(u, schemes[i], strlen(schemes[i])))
				break;
		if (i == sizeof(schemes) / sizeof(schemes[0]))
			return usage_error("bad URL '%s': expected tcp://HOST:PORT, ipc:///PATH or "
					   "tls+tcp://HOST:PORT",
					   u);
		/* a bad URL is the user's mistake, not a reason to retry: say so before
		 * anything */
		rv = nng_url_parse(&url, u);
		if (rv)
			return usage_error("bad URL '%s': %s", u, nng_strerror(rv));
		nng_url_free(url);
		for (i = 0; i < j; i++)
			if (!strcmp(ds->d[i].url, u))
				return usage_error("URL '%s' given twice", u);
		ds->d[j].url = u;
		*any_tls |= !strncmp(u, "tls+", 4);
	}
	ds->n = (unsigned int)n;
	return 0;
}

/* Stop the dial threads: the socket closed under them ends a dial in progress. */
static void dials__stop(struct dials *ds, nng_socket sub)
{
	unsigned int i;

	for (i = 0; i < ds->n; i++)
		__atomic_store_n(&ds->d[i].stopping, true, __ATOMIC_RELAXED);
	nng_close(sub);
	for (i = 0; i < ds->n; i++)
		if (ds->d[i].thread_started)
			pthread_join(ds->d[i].thread, NULL);
}

/* With several URLs, a line per URL: its connections, or why it never connected. Returns how
 * many connected at least once. */
static unsigned int dials__report(const struct dials *ds)
{
	unsigned int i, n = 0;

	for (i = 0; i < ds->n; i++) {
		const struct dial *d = &ds->d[i];

		n += d->connected;
		if (ds->n == 1)
			continue;
		if (d->connected)
			fprintf(stderr,
				"xpusup: subscribe: %s: %" PRIu64 " connections, %" PRIu64
				" drops\n",
				d->url, (uint64_t)d->connections, (uint64_t)d->drops);
		else
			fprintf(stderr, "xpusup: subscribe: %s: never connected%s%s\n", d->url,
				d->last_error[0] ? ": " : "", d->last_error);
	}
	return n;
}

int main(int argc, char **argv)
{
	enum { OPT_TLS_CA = 256, OPT_TLS_CERT, OPT_TLS_KEY };
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "option", required_argument, NULL, 'O' },
		{ "count", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "tls-ca", required_argument, NULL, OPT_TLS_CA },
		{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
		{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct subscriber s = { .drv = { .fmt = &fmt_raw, .ops = &subscriber_ops } };
	static struct dials ds; /* 64 URLs of state: not on the stack */
	struct hosts *hosts = NULL;
	nng_socket sub;
	__u64 missed, rewinds;
	struct cli_env env_opts = { 0 };
	struct tls_files tls = { 0 };
	static struct fmt_origins origins; /* written by the hosts' accounting, read by metrics */
	struct fmt_env env = { .ctx = &env_opts, .get = cli_get, .path = cli_path };
	const char *format = "raw";
	unsigned long long max_batches = 0, seconds = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	bool any_tls = false;
	char why[512], *eq;
	unsigned int i, connected;
	int c, rv, err, code = XPUSUP_EXIT_SYSTEM;

	while ((c = getopt_long(argc, argv, "f:o:O:n:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			env_opts.path = optarg;
			break;
		case 'O':
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				return usage_error("bad --option '%s': expected KEY=VALUE", optarg);
			if (env_opts.n >= SUB_OPTIONS_MAX)
				return usage_error("more than %d --option", SUB_OPTIONS_MAX);
			*eq = 0;
			env_opts.keys[env_opts.n] = optarg;
			env_opts.values[env_opts.n++] = eq + 1;
			break;
		case 'n':
			if (conf_parse_uint(optarg, 1, 1ull << 48, &max_batches))
				return usage_error("bad --count '%s': a number of batches", optarg);
			break;
		case 't':
			if (conf_parse_uint(optarg, 1, 31536000, &seconds))
				return usage_error("bad --seconds '%s': 1..31536000", optarg);
			break;
		case OPT_TLS_CA:
			tls.ca = optarg;
			break;
		case OPT_TLS_CERT:
			tls.cert = optarg;
			break;
		case OPT_TLS_KEY:
			tls.key = optarg;
			break;
		case 'h':
			fputs(subscribe_usage, stdout);
			return 0;
		default:
			return usage_error("%s", "bad option");
		}
	}
	err = take_urls(&ds, argv + optind, argc - optind, &any_tls);
	if (err)
		return err;
	if (!any_tls && (tls.ca || tls.cert || tls.key))
		return usage_error("%s", "--tls-* options are for tls+tcp:// URLs");
	if (any_tls && !tls.ca)
		return usage_error("%s", "a tls+tcp:// URL needs --tls-ca to verify the publisher");
	if (!tls.cert != !tls.key)
		return usage_error("%s", "--tls-cert and --tls-key go together");
	for (i = 0; i < sizeof(cli_formats) / sizeof(cli_formats[0]); i++)
		if (!strcmp(cli_formats[i].name, format))
			break;
	if (i == sizeof(cli_formats) / sizeof(cli_formats[0]))
		return usage_error(
			"unknown format '%s': folded, trace, stats, pprof, metrics or raw", format);
	if (cli_formats[i].kind) {
		s.drv.fmt = fmt__find(cli_formats[i].kind);
		if (!s.drv.fmt) {
			fprintf(stderr,
				"xpusup: unable to subscribe: format '%s' is not in this build yet "
				"(it arrives with the %s sink)\n",
				format, cli_formats[i].kind);
			return XPUSUP_EXIT_USAGE;
		}
	}
	for (i = 0; i < ds.n; i++) {
		if (strncmp(ds.d[i].url, "tls+", 4))
			continue;
		err = tls_setup(ds.d[i].url, &tls, &ds.d[i].tls, why, sizeof(why));
		if (err) {
			fprintf(stderr, "xpusup: unable to subscribe: %s\n", why);
			code = err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
			goto free_tls;
		}
	}

	s.drv.ctx = &s;
	s.drv.max_batches = max_batches;
	if (sink_driver__init(&s.drv)) {
		fprintf(stderr, "xpusup: unable to subscribe: out of memory\n");
		goto free_buffers;
	}
	why[0] = 0;
	env.origins = ds.n > 1 ? &origins : NULL;
	err = s.drv.fmt->open(&s.drv.st, &env, why, sizeof(why));
	if (err) {
		fprintf(stderr, "xpusup: unable to subscribe: format %s: %s%s\n", format,
			why[0] ? why : strerror(-err),
			err == -EINVAL && s.drv.fmt != &fmt_raw ?
				" (-o FILE gives 'path', -O KEY=VALUE the other keys)" :
				"");
		code = err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
		goto free_buffers;
	}
	if (ds.n > 1) {
		hosts = hosts__new(s.drv.fmt, s.drv.st, &origins);
		if (!hosts) {
			fprintf(stderr, "xpusup: unable to subscribe: out of memory\n");
			goto free_format;
		}
		s.drv.fmt = &fmt_hosts;
		s.drv.st = hosts;
	}
	rv = open_socket(&sub, &ds);
	if (rv) {
		fprintf(stderr, "xpusup: unable to subscribe: SUB socket: %s\n", nng_strerror(rv));
		goto free_format;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (i = 0; i < ds.n; i++) {
		ds.d[i].sub = sub;
		err = pthread_create(&ds.d[i].thread, NULL, dial_thread, &ds.d[i]);
		if (err) {
			fprintf(stderr, "xpusup: unable to subscribe: thread: %s\n", strerror(err));
			dials__stop(&ds, sub);
			goto free_format;
		}
		ds.d[i].thread_started = true;
	}

	s.drv.sock = sub;
	if (seconds)
		s.drv.deadline_ns = xpu_now_ns() + seconds * 1000000000ull;
	sink_driver__run(&s.drv);

	dials__stop(&ds, sub);
	why[0] = 0;
	err = s.drv.fmt->finish(s.drv.st, why, sizeof(why));
	/* with several hosts the driver's own count mixes their producers: theirs add up */
	missed = s.drv.seq.missed;
	rewinds = s.drv.seq.rewinds;
	if (hosts)
		hosts__report(hosts, &missed, &rewinds);
	connected = dials__report(&ds);
	fprintf(stderr,
		"xpusup: subscribe: %" PRIu64 " batches, %" PRIu64 " events, %" PRIu64
		" events missed (sequence gaps), %" PRIu64 " rewinds, %" PRIu64 " bad batches\n",
		(uint64_t)s.drv.batches, (uint64_t)s.drv.events_in, (uint64_t)missed,
		(uint64_t)rewinds, (uint64_t)s.drv.bad);
	if (err)
		fprintf(stderr, "xpusup: unable to subscribe: %s\n", why[0] ? why : strerror(-err));
	else if (!connected && ds.n == 1)
		fprintf(stderr, "xpusup: unable to subscribe: never connected to %s%s%s\n",
			ds.d[0].url, ds.d[0].last_error[0] ? ": " : "", ds.d[0].last_error);
	else if (!connected)
		fprintf(stderr,
			"xpusup: unable to subscribe: never connected to any of the %u URLs\n",
			ds.n);
	else
		code = XPUSUP_EXIT_OK;
free_format:
	s.drv.fmt->free(s.drv.st);
free_buffers:
	sink_driver__fini(&s.drv);
free_tls:
	for (i = 0; i < ds.n; i++)
		if (ds.d[i].tls)
			nng_tls_config_free(ds.d[i].tls);
	return code;
}
