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
 * Threads: the main one receives and feeds the format; a dial thread connects, retrying until
 * it has (nng retries by itself only after a first connection, and says nothing about why
 * a connection fails: a TLS handshake refused is worth saying). Closing the socket ends a
 * dial in progress, which is how the main thread stops the dial thread.
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

#include "actors/sink/fmt.h"
#include "actors/sink/out.h"
#include "actors/sink/sink.h"
#include "common/config.h"
#include "supervisor/supervisor.h" /* XPUSUP_EXIT_*: a command's exit codes */

#define SUB_RECVBUF 128 /* batches nng may queue for us; beyond that the oldest go */
#define SUB_OPTIONS_MAX 16
#define DIAL_DELAY_MAX_MS 1000

static const char subscribe_usage[] =
	"usage: xpusup subscribe URL [--format folded|trace|stats|raw] [-o FILE]\n"
	"                        [-O KEY=VALUE]... [--count N] [--seconds S]\n"
	"                        [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]\n"
	"\n"
	"Receive the correlated events a session's publish sink (kind = publish) sends, and\n"
	"write them with the same formats as the local sinks. URL is the sink's listen address:\n"
	"tcp://HOST:PORT, ipc:///PATH or tls+tcp://HOST:PORT. Connects when the session is\n"
	"there, retrying until then; reconnects after a drop. A subscriber too slow to keep up\n"
	"loses batches (the session never waits for it); the losses are counted from the\n"
	"sequence numbers.\n"
	"\n"
	"  -f, --format NAME   folded, trace, stats, or raw: the messages as received,\n"
	"                      concatenated MessagePack batches (docs/wire.md); default raw\n"
	"  -o, --output FILE   the format's output file (its 'path'); raw: default stdout\n"
	"  -O, --option K=V    another option of the format, as in pipeline.conf (html=none,\n"
	"                      weight=samples, snapshot_s=0, ...)\n"
	"  -n, --count N       stop after N batches\n"
	"  -t, --seconds S     stop after S seconds\n"
	"      --tls-ca FILE   tls+tcp: the CA that signed the publisher's certificate (PEM);\n"
	"                      required for tls+tcp\n"
	"      --tls-cert FILE tls+tcp: our certificate (PEM), for a publisher with tls_ca set\n"
	"      --tls-key FILE  tls+tcp: its private key (PEM, unencrypted)\n"
	"\n"
	"Stops on SIGINT/SIGTERM, --count or --seconds; then writes the output files whole and\n"
	"prints batches, events, events missed by sequence gaps and rewinds to stderr.\n"
	"See docs/publish.md.\n";

/* Format names on the command line and the format kind that writes them. */
static const struct {
	const char *name;
	const char *kind; /* NULL: raw, written here */
} cli_formats[] = {
	{ "folded", "folded" },
	{ "trace", "timeline" },
	{ "stats", "stats" },
	{ "raw", NULL },
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

/* ---- connecting ---- */

struct dial {
	nng_socket sub;
	const char *url;
	nng_tls_config *tls; /* NULL: not tls+tcp */
	pthread_t thread;
	bool stopping; /* set by the main thread before it closes the socket */
	bool connected; /* the first connection is made */
	char last_error[320];
};

/* One attempt; blocks until connected or failed. 0, or an nng error with the dialer closed. */
static int dial_once(struct dial *d)
{
	nng_dialer dialer;
	int rv;

	rv = nng_dialer_create(&dialer, d->sub, d->url);
	if (rv)
		return rv;
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
	struct dial *d = arg;

	(void)p;
	if (__atomic_load_n(&d->stopping, __ATOMIC_RELAXED))
		return;
	if (ev == NNG_PIPE_EV_ADD_POST)
		fprintf(stderr, "xpusup: subscribe: connected to %s\n", d->url);
	else if (ev == NNG_PIPE_EV_REM_POST)
		fprintf(stderr, "xpusup: subscribe: disconnected from %s; reconnecting\n", d->url);
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

static int open_socket(struct dial *d)
{
	int rv;

	rv = nng_sub0_open(&d->sub);
	if (rv)
		return rv;
	rv = nng_socket_set(d->sub, NNG_OPT_SUB_SUBSCRIBE, "", 0);
	/* nng's default of 1 MiB would drop a large batch and the connection with it */
	if (!rv)
		rv = nng_socket_set_size(d->sub, NNG_OPT_RECVMAXSZ,
					 xpu_wire_default_limits.max_message);
	if (!rv)
		rv = nng_socket_set_int(d->sub, NNG_OPT_RECVBUF, SUB_RECVBUF);
	/* the loop waits in nng_recv, not in a sleep, and looks at the clock between */
	if (!rv)
		rv = nng_socket_set_ms(d->sub, NNG_OPT_RECVTIMEO, 50);
	if (!rv)
		rv = nng_socket_set_ms(d->sub, NNG_OPT_RECONNMINT, 100);
	if (!rv)
		rv = nng_socket_set_ms(d->sub, NNG_OPT_RECONNMAXT, DIAL_DELAY_MAX_MS);
	if (!rv)
		rv = nng_pipe_notify(d->sub, NNG_PIPE_EV_ADD_POST, on_pipe, d);
	if (!rv)
		rv = nng_pipe_notify(d->sub, NNG_PIPE_EV_REM_POST, on_pipe, d);
	if (rv)
		nng_close(d->sub);
	return rv;
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
	struct dial d = { .url = NULL };
	struct cli_env env_opts = { 0 };
	struct tls_files tls = { 0 };
	struct fmt_env env = { .ctx = &env_opts, .get = cli_get, .path = cli_path };
	const char *format = "raw";
	unsigned long long max_batches = 0, seconds = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	nng_url *url;
	bool is_tls;
	char why[512], *eq;
	unsigned int i;
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
	if (optind != argc - 1)
		return usage_error("%s", "expected one URL");
	d.url = argv[optind];
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(d.url, schemes[i], strlen(schemes[i])))
			break;
	if (i == sizeof(schemes) / sizeof(schemes[0]))
		return usage_error("bad URL '%s': expected tcp://HOST:PORT, ipc:///PATH or "
				   "tls+tcp://HOST:PORT",
				   d.url);
	is_tls = !strncmp(d.url, "tls+", 4);
	if (!is_tls && (tls.ca || tls.cert || tls.key))
		return usage_error("%s", "--tls-* options are for tls+tcp:// URLs");
	if (is_tls && !tls.ca)
		return usage_error("%s", "a tls+tcp:// URL needs --tls-ca to verify the publisher");
	if (!tls.cert != !tls.key)
		return usage_error("%s", "--tls-cert and --tls-key go together");
	for (i = 0; i < sizeof(cli_formats) / sizeof(cli_formats[0]); i++)
		if (!strcmp(cli_formats[i].name, format))
			break;
	if (i == sizeof(cli_formats) / sizeof(cli_formats[0]))
		return usage_error("unknown format '%s': folded, trace, stats or raw", format);
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
	/* a bad URL is the user's mistake, not a reason to retry: say so before anything */
	rv = nng_url_parse(&url, d.url);
	if (rv)
		return usage_error("bad URL '%s': %s", d.url, nng_strerror(rv));
	nng_url_free(url);
	if (is_tls) {
		err = tls_setup(d.url, &tls, &d.tls, why, sizeof(why));
		if (err) {
			fprintf(stderr, "xpusup: unable to subscribe: %s\n", why);
			return err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
		}
	}

	s.drv.ctx = &s;
	s.drv.max_batches = max_batches;
	if (sink_driver__init(&s.drv)) {
		fprintf(stderr, "xpusup: unable to subscribe: out of memory\n");
		goto free_buffers;
	}
	why[0] = 0;
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
	rv = open_socket(&d);
	if (rv) {
		fprintf(stderr, "xpusup: unable to subscribe: SUB socket: %s\n", nng_strerror(rv));
		goto free_format;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = pthread_create(&d.thread, NULL, dial_thread, &d);
	if (err) {
		fprintf(stderr, "xpusup: unable to subscribe: thread: %s\n", strerror(err));
		goto close_socket;
	}

	s.drv.sock = d.sub;
	if (seconds)
		s.drv.deadline_ns = xpu_now_ns() + seconds * 1000000000ull;
	sink_driver__run(&s.drv);

	__atomic_store_n(&d.stopping, true, __ATOMIC_RELAXED);
	nng_close(d.sub); /* ends a dial in progress: the thread sees NNG_ECLOSED */
	pthread_join(d.thread, NULL);
	why[0] = 0;
	err = s.drv.fmt->finish(s.drv.st, why, sizeof(why));
	fprintf(stderr,
		"xpusup: subscribe: %" PRIu64 " batches, %" PRIu64 " events, %" PRIu64
		" events missed (sequence gaps), %" PRIu64 " rewinds, %" PRIu64 " bad batches\n",
		(uint64_t)s.drv.batches, (uint64_t)s.drv.events_in, (uint64_t)s.drv.seq.missed,
		(uint64_t)s.drv.seq.rewinds, (uint64_t)s.drv.bad);
	if (err)
		fprintf(stderr, "xpusup: unable to subscribe: %s\n", why[0] ? why : strerror(-err));
	else if (!d.connected)
		fprintf(stderr, "xpusup: unable to subscribe: never connected to %s%s%s\n", d.url,
			d.last_error[0] ? ": " : "", d.last_error);
	else
		code = XPUSUP_EXIT_OK;
	goto free_format;
close_socket:
	nng_close(d.sub);
free_format:
	s.drv.fmt->free(s.drv.st);
free_buffers:
	sink_driver__fini(&s.drv);
	if (d.tls)
		nng_tls_config_free(d.tls);
	return code;
}
