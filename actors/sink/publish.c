// SPDX-License-Identifier: MIT
/*
 * The publish format (kind publish): every batch the sink receives goes out again, byte for
 * byte, on an nng PUB socket that remote subscribers (`xpusup subscribe`, nngcat, any nng
 * SUB socket) dial. The message is the wire batch of docs/wire.md and nothing else.
 *
 * PUB never waits for a subscriber: nng keeps a queue of `queue` messages per subscriber
 * and, when one is full, drops for that subscriber alone. A slow or stopped subscriber thus
 * loses batches (it sees the gap in the per-producer sequence numbers) and the pipeline
 * never slows down for it. We count what we hand to nng; nng does not tell us what it
 * dropped for whom, so the loss is counted where it is seen, at the subscriber.
 *
 * TLS (tls+tcp://) uses libnng's TLS engine (mbedTLS in Debian's build). With tls_ca set,
 * subscribers must present a certificate that the CA signed, or the handshake fails.
 *
 * Every batch goes out with the origin keys added to its map (docs/wire.md, "Origin"): the
 * host's name (`host`, default the hostname), the session (when it started, realtime ns) and
 * a (CLOCK_MONOTONIC, CLOCK_REALTIME) pair, so that one subscriber of several hosts can tell
 * the hosts apart and put their times on one axis. The pair is the session's start, which the
 * supervisor took once for every actor: all publish sinks of a session add the same bytes to
 * a batch. realtime - monotonic changes only when the realtime clock is stepped (NTP's slewing
 * moves both clocks alike), so once a second we look again and announce a fresh pair when
 * the difference moved by more than PUBLISH_STEP_NS since we first measured it ourselves.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/supplemental/tls/tls.h>

#include "actors/sink/clock_sync.h"
#include "actors/sink/fmt.h"
#include "actors/sink/sink_options.h"
#include "common/config.h"

#define PUBLISH_PATH_MAX 4096
#define PEM_MAX (1u << 20) /* a certificate chain or key file larger than this is a mistake */
#define PUBLISH_STEP_NS 1000000ll /* realtime - monotonic moved this much: a clock step */
#define PUBLISH_CLOCK_CHECK_NS 1000000000ull
/* the session's pair is off by this much from ours at start: the clock was stepped since the
 * session began (a publish sink restarted later); less may be the supervisor's two readings
 * apart (they are not bracketed) */
#define PUBLISH_STALE_NS 50000000ll

struct publish {
	nng_socket pub;
	bool open;
	__u64 linger_ms;
	__u64 messages, bytes, send_errors;
	__u64 clock_steps; /* fresh clock pairs announced after a step of the realtime clock */
	__u64 clock_checked; /* xpu_now_ns of the last look at the clocks */
	/* realtime - monotonic as we measured it (tightly) when the announced pair became
	 * ours: what a step is measured against, not the announced pair, which the supervisor
	 * read without a bracket */
	__s64 base_offset;
	char host[XPU_WIRE_HOST_MAX + 1];
	struct xpu_wire_origin origin; /* added to every batch; host points into host[] */
	/* written by nng's pipe callbacks on its own threads; relaxed: it is a gauge for
	 * status, nothing else is ordered by it */
	__u64 subscribers;
};

static const char *const counter_names[] = { "messages_published", "bytes_published", "subscribers",
					     "send_errors", "clock_steps" };

/* The schemes we listen on; the TLS ones need the certificate keys. */
static const struct {
	const char *scheme;
	bool tls;
} schemes[] = {
	{ "tcp", false },    { "tcp4", false },	   { "tcp6", false },	 { "ipc", false },
	{ "tls+tcp", true }, { "tls+tcp4", true }, { "tls+tcp6", true },
};

static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct publish *pb = arg;

	(void)p;
	if (ev == NNG_PIPE_EV_ADD_POST)
		__atomic_fetch_add(&pb->subscribers, 1, __ATOMIC_RELAXED);
	else if (ev == NNG_PIPE_EV_REM_POST)
		__atomic_fetch_sub(&pb->subscribers, 1, __ATOMIC_RELAXED);
}

/* Read a PEM file whole, NUL-terminated, as nng_tls_config_own_cert() wants it. 0 and *pem
 * (the caller frees it), or -errno with why. */
static int read_pem(const char *key, const char *path, char **pem, char *why, size_t why_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n;
	int err;

	if (!f) {
		err = -errno;
		snprintf(why, why_len, "unable to read %s %s: %s", key, path, strerror(errno));
		return err;
	}
	buf = malloc(PEM_MAX + 1);
	if (!buf) {
		err = -ENOMEM;
		snprintf(why, why_len, "out of memory reading %s", path);
		goto close_file;
	}
	n = fread(buf, 1, PEM_MAX + 1, f);
	if (ferror(f) || n > PEM_MAX) {
		err = -EINVAL;
		snprintf(why, why_len, "unable to read %s %s: %s", key, path,
			 n > PEM_MAX ? "larger than 1 MiB" : "read error");
		goto free_buf;
	}
	buf[n] = 0;
	*pem = buf;
	fclose(f);
	return 0;
free_buf:
	free(buf);
close_file:
	fclose(f);
	return err;
}

/* The listener's TLS configuration from tls_cert, tls_key and tls_ca. 0 and *cfg (the caller
 * drops its reference with nng_tls_config_free), or -errno with why; -EINVAL when this
 * libnng has no TLS engine. */
static int tls_config(const struct fmt_env *env, nng_tls_config **cfg, char *why, size_t why_len)
{
	char cert_path[PUBLISH_PATH_MAX], key_path[PUBLISH_PATH_MAX], ca_path[PUBLISH_PATH_MAX];
	char *cert = NULL, *key = NULL;
	bool have_ca;
	int rv, err;

	rv = nng_tls_config_alloc(cfg, NNG_TLS_MODE_SERVER);
	if (rv == NNG_ENOTSUP) {
		snprintf(why, why_len,
			 "TLS is not available: this libnng was built without a TLS engine "
			 "(nng needs NNG_ENABLE_TLS with mbedTLS); use tcp:// or ipc://");
		return -EINVAL;
	}
	if (rv) {
		snprintf(why, why_len, "unable to set up TLS: %s", nng_strerror(rv));
		return -ENOMEM;
	}
	if (env->path(env->ctx, "tls_cert", cert_path, sizeof(cert_path)) ||
	    env->path(env->ctx, "tls_key", key_path, sizeof(key_path))) {
		snprintf(why, why_len, "a tls+tcp:// address needs tls_cert and tls_key");
		err = -EINVAL;
		goto free_cfg;
	}
	have_ca = !env->path(env->ctx, "tls_ca", ca_path, sizeof(ca_path));
	err = read_pem("tls_cert", cert_path, &cert, why, why_len);
	if (!err)
		err = read_pem("tls_key", key_path, &key, why, why_len);
	if (err) {
		err = err == -ENOMEM ? err : -EINVAL;
		goto free_pem;
	}
	rv = nng_tls_config_own_cert(*cfg, cert, key, NULL);
	if (rv) {
		snprintf(why, why_len, "bad tls_cert %s or tls_key %s: %s", cert_path, key_path,
			 nng_strerror(rv));
		err = -EINVAL;
		goto free_pem;
	}
	/* Without a CA anyone may subscribe (encrypted, not authenticated); with one, only
	 * holders of a certificate it signed: the handshake fails for everybody else. */
	if (have_ca) {
		rv = nng_tls_config_ca_file(*cfg, ca_path);
		if (rv) {
			snprintf(why, why_len, "bad tls_ca %s: %s", ca_path, nng_strerror(rv));
			err = -EINVAL;
			goto free_pem;
		}
	}
	rv = nng_tls_config_auth_mode(*cfg, have_ca ? NNG_TLS_AUTH_MODE_REQUIRED :
						      NNG_TLS_AUTH_MODE_NONE);
	if (rv) {
		snprintf(why, why_len, "unable to set the TLS auth mode: %s", nng_strerror(rv));
		err = -EINVAL;
		goto free_pem;
	}
	free(cert);
	free(key);
	return 0;
free_pem:
	free(cert);
	free(key);
free_cfg:
	nng_tls_config_free(*cfg);
	*cfg = NULL;
	return err;
}

/* Which of schemes[] url uses, or -1. */
static int scheme_of(const char *url, size_t *scheme_len)
{
	const char *sep = strstr(url, "://");
	unsigned int i;

	if (!sep)
		return -1;
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].scheme) == (size_t)(sep - url) &&
		    !strncmp(url, schemes[i].scheme, (size_t)(sep - url))) {
			*scheme_len = (size_t)(sep - url);
			return (int)i;
		}
	return -1;
}

static int listen_on(struct publish *pb, const struct fmt_env *env, const char *url, bool tls,
		     char *why, size_t why_len)
{
	nng_tls_config *cfg = NULL;
	nng_listener l;
	int rv, err;

	rv = nng_listener_create(&l, pb->pub, url);
	if (rv) {
		snprintf(why, why_len, "bad listen address '%s': %s", url, nng_strerror(rv));
		return -EINVAL;
	}
	if (tls) {
		err = tls_config(env, &cfg, why, why_len);
		if (err)
			return err; /* the listener goes with the socket */
		rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg);
		nng_tls_config_free(cfg); /* the listener holds its own reference */
		if (rv) {
			snprintf(why, why_len, "unable to set up TLS on %s: %s", url,
				 nng_strerror(rv));
			return -EINVAL;
		}
	}
	rv = nng_listener_start(l, 0);
	if (rv) {
		snprintf(why, why_len, "unable to listen on %s: %s", url, nng_strerror(rv));
		/* a port in use may be free at the next start; a bad address will not be */
		return rv == NNG_EADDRINUSE					     ? -EADDRINUSE :
		       rv == NNG_EADDRINVAL || rv == NNG_EINVAL || rv == NNG_ENOTSUP ? -EINVAL :
										       -EIO;
	}
	return 0;
}

/* The host name: `host` (checked with the options: publish_conf_kind), or the hostname made
 * valid (a byte a host name cannot hold becomes '_'): a machine's odd name is no reason for
 * the sink not to start. */
static void host_name(struct publish *pb, const char *host)
{
	struct utsname u;
	size_t i, n;

	if (!host)
		host = uname(&u) || !u.nodename[0] ? "localhost" : u.nodename;
	n = strnlen(host, XPU_WIRE_HOST_MAX);
	for (i = 0; i < n; i++)
		pb->host[i] = host[i] < 0x21 || host[i] > 0x7e ? '_' : host[i];
	pb->host[n] = 0;
	pb->origin.host = pb->host;
	pb->origin.host_len = (__u32)n;
}

/* The session's identity and clock pair: the supervisor's reading at its start, the same for
 * every actor of the session; outside a session (no status block), or when the realtime clock
 * was stepped since the session started, our own. */
static void origin_clock(struct publish *pb, const struct fmt_env *env)
{
	const struct xpu_status_hdr *h = env->status ? &env->status->hdr : NULL;
	__u64 mono, real;
	__s64 stale;

	if (h && h->started_ns && h->started_realtime_ns) {
		pb->origin.clock_mono_ns = h->started_ns;
		pb->origin.clock_real_ns = h->started_realtime_ns;
	} else {
		sink_clocks__realtime_pair(&pb->origin.clock_mono_ns, &pb->origin.clock_real_ns);
	}
	pb->origin.session = pb->origin.clock_real_ns;
	sink_clocks__realtime_pair(&mono, &real);
	pb->base_offset = (__s64)(real - mono);
	stale = pb->base_offset - (__s64)(pb->origin.clock_real_ns - pb->origin.clock_mono_ns);
	if (stale > PUBLISH_STALE_NS || stale < -PUBLISH_STALE_NS) {
		pb->origin.clock_mono_ns = mono;
		pb->origin.clock_real_ns = real;
		pb->clock_steps++;
	}
	pb->clock_checked = xpu_now_ns();
}

static void publish_free(void *st)
{
	struct publish *pb = st;

	if (!pb)
		return;
	if (pb->open)
		nng_close(pb->pub);
	free(pb);
}

static int publish_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct publish *pb = calloc(1, sizeof(*pb));
	struct publish_options o;
	size_t scheme_len = 0;
	const char *url;
	int rv, err, s;

	if (!pb)
		return -ENOMEM;
	err = conf_kind__options(&publish_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (err)
		goto free_pb;
	url = o.listen;
	if (!url) {
		snprintf(why, why_len, "no address: set 'listen', e.g. tcp://0.0.0.0:7878");
		err = -EINVAL;
		goto free_pb;
	}
	s = scheme_of(url, &scheme_len);
	if (s < 0) {
		snprintf(why, why_len,
			 "bad listen address '%s': expected tcp://HOST:PORT, ipc:///PATH or "
			 "tls+tcp://HOST:PORT",
			 url);
		err = -EINVAL;
		goto free_pb;
	}
	/* nng would take a relative ipc path from the actor's working directory, which the
	 * user does not choose: make them say where */
	if (!strcmp(schemes[s].scheme, "ipc") && url[scheme_len + 3] != '/') {
		snprintf(why, why_len, "bad listen address '%s': ipc:// needs an absolute path",
			 url);
		err = -EINVAL;
		goto free_pb;
	}
	if (!schemes[s].tls && (o.tls_cert || o.tls_key || o.tls_ca)) {
		snprintf(why, why_len, "%s is only for tls+tcp:// addresses",
			 o.tls_cert ? "tls_cert" :
			 o.tls_key  ? "tls_key" :
				      "tls_ca");
		err = -EINVAL;
		goto free_pb;
	}
	host_name(pb, o.host);
	origin_clock(pb, env);
	pb->linger_ms = o.linger_ms;
	rv = nng_pub0_open(&pb->pub);
	if (rv) {
		snprintf(why, why_len, "unable to open a PUB socket: %s", nng_strerror(rv));
		err = -ENOMEM;
		goto free_pb;
	}
	pb->open = true;
	rv = nng_socket_set_int(pb->pub, NNG_OPT_SENDBUF, (int)o.queue);
	if (!rv)
		rv = nng_pipe_notify(pb->pub, NNG_PIPE_EV_ADD_POST, on_pipe, pb);
	if (!rv)
		rv = nng_pipe_notify(pb->pub, NNG_PIPE_EV_REM_POST, on_pipe, pb);
	if (rv) {
		snprintf(why, why_len, "unable to set up the PUB socket: %s", nng_strerror(rv));
		err = -EIO;
		goto free_pb;
	}
	err = listen_on(pb, env, url, schemes[s].tls, why, why_len);
	if (err)
		goto free_pb;
	*out = pb;
	return 0;
free_pb:
	publish_free(pb);
	return err;
}

/* Each message is copied into a new nng message with the origin's keys added: the sink frees
 * its buffer after this returns, and nng owns what it was given once nng_sendmsg() succeeds. */
static void publish_raw(void *st, const void *msg, size_t len)
{
	struct publish *pb = st;
	size_t room = len + xpu_wire_origin__bound(&pb->origin), out_len;
	nng_msg *m;

	if (nng_msg_alloc(&m, room)) {
		pb->send_errors++;
		return;
	}
	/* a message that is not a map is no batch: handed on as it came, as it always was */
	if (xpu_wire_origin__add(msg, len, &pb->origin, nng_msg_body(m), room, &out_len)) {
		memcpy(nng_msg_body(m), msg, len);
		out_len = len;
	}
	nng_msg_chop(m, room - out_len);
	len = out_len;
	/* PUB does not block on a full subscriber queue; NONBLOCK says we never want to */
	if (nng_sendmsg(pb->pub, m, NNG_FLAG_NONBLOCK)) {
		nng_msg_free(m); /* still ours when the send failed */
		pb->send_errors++;
		return;
	}
	pb->messages++;
	pb->bytes += len;
}

/* Every batch is handed on as it comes: whatever was received is complete output, and a
 * sink restarted after kill -9 has lost nothing it received (sink.c's accounting). */
static int publish_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct publish *pb = st;
	__u64 mono, real;
	__s64 moved;

	/* a realtime step (settimeofday, an NTP step) moves realtime - monotonic: from then on
	 * subscribers need the new pair to put our times on their axis */
	if (now_ns - pb->clock_checked >= PUBLISH_CLOCK_CHECK_NS) {
		pb->clock_checked = now_ns;
		sink_clocks__realtime_pair(&mono, &real);
		moved = (__s64)(real - mono) - pb->base_offset;
		if (moved > PUBLISH_STEP_NS || moved < -PUBLISH_STEP_NS) {
			pb->origin.clock_mono_ns = mono;
			pb->origin.clock_real_ns = real;
			pb->base_offset = (__s64)(real - mono);
			pb->clock_steps++;
		}
	}
	(void)why;
	(void)why_len;
	return FMT_COMPLETE;
}

/* nng drops what is still queued for a subscriber when the socket closes, and cannot say
 * when the queues are empty: give the last batches (those the correlators sent while
 * stopping) linger_ms to leave. Best effort. */
static int publish_finish(void *st, char *why, size_t why_len)
{
	struct publish *pb = st;
	struct timespec ts = { .tv_sec = (time_t)(pb->linger_ms / 1000),
			       .tv_nsec = (long)(pb->linger_ms % 1000) * 1000000 };

	(void)why;
	(void)why_len;
	if (pb->linger_ms && __atomic_load_n(&pb->subscribers, __ATOMIC_RELAXED))
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	return 0;
}

static unsigned int publish_counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	struct publish *pb = st;
	__u64 v[] = { pb->messages, pb->bytes, __atomic_load_n(&pb->subscribers, __ATOMIC_RELAXED),
		      pb->send_errors, pb->clock_steps };
	unsigned int i, n = sizeof(v) / sizeof(v[0]);

	for (i = 0; i < n && i < max; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	return i;
}

const struct fmt_ops fmt_publish = {
	.kind = "publish",
	.open = publish_open,
	.raw = publish_raw,
	.tick = publish_tick,
	.finish = publish_finish,
	.free = publish_free,
	.counters = publish_counters,
};
