// SPDX-License-Identifier: MIT
/*
 * The push (push.c) against a local stand-in for Pyroscope's /ingest (tests/push_receiver.py)
 * on 127.0.0.1, with real HTTP: files arrive exactly once, with their query and their bytes,
 * while it accepts; nothing is lost while it refuses (HTTP 500), hangs past the timeout or
 * is gone, and everything arrives when it is back; a tiny spool's drops are counted exactly;
 * a 400 is final; a closed pusher's spool is sent by the next one; bad options are errors.
 *
 *	push_test PYTHON RECEIVER
 */
#include "actors/sink/push.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"

#define T0 1700000000ull /* from of file 0; file i covers [T0 + 10 i, T0 + 10 i + 10) */
#define MAX_FILES 64
#define WAIT_MS 15000

static char dir[] = "/tmp/push_test.XXXXXX";
static const char *python, *receiver;
static pid_t rx_pid = -1;
static int rx_port;
static char url[64];

/* What the test submitted: file i's bytes, kept to compare with what arrived. */
static struct file {
	char path[256];
	unsigned char *data;
	size_t size;
	__u64 from, until;
} files[MAX_FILES];
static unsigned int n_files;

/* One line of the receiver's log. */
struct rec {
	unsigned int seq;
	int status;
	size_t len;
	char ctype[64], path[64], name[256], from[32], until[32], format[32], keys[128];
	char tenant[64];
};

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* ---- the receiver ---- */

/* Start it on port (0: any); the port it took in rx_port. */
static void rx_start(int port)
{
	char port_file[300], log[300], bodies[300], port_s[16];
	__u64 end = now_ms() + 10000;

	snprintf(port_file, sizeof(port_file), "%s/port", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(bodies, sizeof(bodies), "%s/bodies", dir);
	snprintf(port_s, sizeof(port_s), "%d", port);
	unlink(port_file);
	rx_pid = fork();
	if (rx_pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (!rx_pid) {
		int null = open("/dev/null", O_WRONLY);

		/* gone with the test, whatever happens to it, and off its stdout (meson waits
		 * for that pipe to close) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			close(null);
		}
		execl(python, python, receiver, port_file, log, bodies, port_s, (char *)NULL);
		_exit(127);
	}
	while (now_ms() < end) {
		char *text = tap_slurp(port_file);
		int st;

		if (text) {
			rx_port = atoi(text);
			free(text);
			return;
		}
		if (waitpid(rx_pid, &st, WNOHANG) == rx_pid)
			tap_bail("the receiver exited at start (%s %s)", python, receiver);
		sleep_ms(20);
	}
	tap_bail("the receiver did not listen within 10 s");
}

static void rx_kill(void)
{
	if (rx_pid > 0) {
		kill(rx_pid, SIGKILL);
		waitpid(rx_pid, NULL, 0);
		rx_pid = -1;
	}
}

static size_t discard(char *data, size_t size, size_t n, void *arg)
{
	(void)data, (void)arg;
	return size * n;
}

/* The next n requests (-1: all) answered as mode says. */
static void rx_mode(const char *mode, int n, unsigned int sleep_s)
{
	char u[160];
	CURL *h = curl_easy_init();
	long status = 0;

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/control?mode=%s&n=%d&sleep=%u", rx_port, mode,
		 n, sleep_s);
	curl_easy_setopt(h, CURLOPT_URL, u);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	if (curl_easy_perform(h) || curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) ||
	    status != 200)
		tap_bail("the receiver's control did not answer");
	curl_easy_cleanup(h);
}

/* Every line of the log so far; returns how many (at most max). */
static unsigned int rx_log(struct rec *r, unsigned int max)
{
	char log[300], *text, *line, *save = NULL;
	unsigned int n = 0;

	snprintf(log, sizeof(log), "%s/log", dir);
	text = tap_slurp(log);
	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[12], *s2 = NULL, *tok;
		unsigned int k = 0;

		for (tok = strtok_r(line, "\t", &s2); tok && k < 12;
		     tok = strtok_r(NULL, "\t", &s2))
			f[k++] = tok;
		if (k != 12) {
			tap_diag("a bad log line");
			continue;
		}
		r[n] = (struct rec){ .seq = (unsigned int)atoi(f[0]),
				     .status = atoi(f[1]),
				     .len = (size_t)atol(f[2]) };
		snprintf(r[n].ctype, sizeof(r[n].ctype), "%s", f[4]);
		snprintf(r[n].path, sizeof(r[n].path), "%s", f[5]);
		snprintf(r[n].name, sizeof(r[n].name), "%s", f[6]);
		snprintf(r[n].from, sizeof(r[n].from), "%s", f[7]);
		snprintf(r[n].until, sizeof(r[n].until), "%s", f[8]);
		snprintf(r[n].format, sizeof(r[n].format), "%s", f[9]);
		snprintf(r[n].keys, sizeof(r[n].keys), "%s", f[10]);
		snprintf(r[n].tenant, sizeof(r[n].tenant), "%s", f[11]);
		n++;
	}
	free(text);
	return n;
}

static struct rec recs[1024];

/* How many requests for file i the receiver logged with that status. */
static unsigned int rx_count(unsigned int i, int status)
{
	unsigned int n = rx_log(recs, 1024), c = 0;
	char from[32];

	snprintf(from, sizeof(from), "%llu", (unsigned long long)files[i].from);
	for (unsigned int k = 0; k < n; k++)
		c += recs[k].status == status && !strcmp(recs[k].from, from);
	return c;
}

/* File i arrived exactly once (200), with the query and the bytes it should have. */
static void check_arrived_as(unsigned int i, const char *name, const char *tenant, const char *what)
{
	unsigned int n = rx_log(recs, 1024), hits = 0;
	char from[32], until[32];
	bool query = true, body = true;

	snprintf(from, sizeof(from), "%llu", (unsigned long long)files[i].from);
	snprintf(until, sizeof(until), "%llu", (unsigned long long)files[i].until);
	for (unsigned int k = 0; k < n; k++) {
		struct rec *r = &recs[k];
		char path[320], *got;

		if (r->status != 200 || strcmp(r->from, from))
			continue;
		hits++;
		if (strcmp(r->path, "/ingest") || strcmp(r->name, name) ||
		    strcmp(r->until, until) || strcmp(r->format, "pprof") ||
		    strcmp(r->keys, "format,from,name,until") ||
		    strcmp(r->ctype, "application/octet-stream") || strcmp(r->tenant, tenant)) {
			tap_diag("file %u: %s %s from=%s until=%s format=%s keys=%s type=%s "
				 "tenant=%s",
				 i, r->path, r->name, r->from, r->until, r->format, r->keys,
				 r->ctype, r->tenant);
			query = false;
		}
		snprintf(path, sizeof(path), "%s/bodies/%u.body", dir, r->seq);
		got = tap_slurp(path);
		if (!got || r->len != files[i].size || memcmp(got, files[i].data, files[i].size))
			body = false;
		free(got);
	}
	tap_eq_u64(hits, 1, "%s: file %u arrived once", what, i);
	tap_ok(query && body, "%s: file %u: path, query, content type and bytes", what, i);
}

static void check_arrived(unsigned int i, const char *name, const char *what)
{
	check_arrived_as(i, name, "team-a", what);
}

/* ---- files and counters ---- */

/* A new file of size bytes (not a real profile: the push sends bytes, whatever they are). */
static unsigned int make_file(size_t size)
{
	struct file *f = &files[n_files];
	FILE *out;

	if (n_files == MAX_FILES)
		tap_bail("too many files");
	snprintf(f->path, sizeof(f->path), "%s/out/%u.pb.gz", dir, n_files);
	f->size = size;
	f->data = malloc(size ? size : 1);
	for (size_t k = 0; k < size; k++)
		f->data[k] = (unsigned char)((k * 2654435761u) >> 13 ^ n_files);
	f->from = T0 + 10ull * n_files;
	f->until = f->from + 10;
	out = fopen(f->path, "wb");
	if (!out || fwrite(f->data, 1, size, out) != size || fclose(out))
		tap_bail("unable to write %s", f->path);
	return n_files++;
}

static int submit(struct pusher *p, unsigned int i)
{
	return pusher__submit(p, files[i].path, files[i].from, files[i].until);
}

static __u64 counter(struct pusher *p, enum push_counter c)
{
	const char *names[PUSH_N_COUNTERS];
	__u64 v[PUSH_N_COUNTERS];

	pusher__counters(p, names, v, PUSH_N_COUNTERS);
	return v[c];
}

/* Wait until counter c is at least want; false after WAIT_MS. */
static bool wait_counter(struct pusher *p, enum push_counter c, __u64 want)
{
	__u64 end = now_ms() + WAIT_MS;

	while (counter(p, c) < want) {
		if (now_ms() > end) {
			tap_diag("waited %u ms for counter %d to reach %llu: %llu", WAIT_MS, c,
				 (unsigned long long)want, (unsigned long long)counter(p, c));
			return false;
		}
		sleep_ms(10);
	}
	return true;
}

/* Files in a spool folder (what the push queued), leftovers of a copy included. */
static unsigned int spool_files(const char *spool)
{
	char cmd[400], *text, out[300];
	unsigned int n;

	snprintf(out, sizeof(out), "%s/count", dir);
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c -e '\\.pb\\.gz$' -e '^\\.tmp-' > '%s'",
		 spool, out);
	if (system(cmd) < 0)
		return 9999;
	text = tap_slurp(out);
	n = text ? (unsigned int)atoi(text) : 9999;
	free(text);
	return n;
}

static struct push_opts opts(const char *spool)
{
	static char path[8][300];
	static unsigned int k;
	char *s = path[k++ % 8];

	snprintf(s, sizeof(path[0]), "%s/%s", dir, spool);
	return (struct push_opts){ .url = url,
				   .app = "xpusup",
				   .labels = "env=ci,job=t1",
				   .tenant = "team-a",
				   .host = "testhost",
				   .spool = s,
				   .timeout_s = 1,
				   .backoff_ms = 50,
				   .backoff_max_s = 1 };
}

static const char *NAME = "xpusup{host=testhost,env=ci,job=t1}";

/* ---- the parts ---- */

static void test_bad_options(void)
{
	static const char *const bad_urls[] = {
		"ftp://127.0.0.1/",
		"127.0.0.1:4040",
		"http://",
		"http:///ingest",
		"http://127.0.0.1:4040/?a=1",
		"http://127.0.0.1:99999",
		"http://exa mple.com/",
		"http://127.0.0.1/#x",
		"",
	};
	struct push_opts o = opts("bad");
	struct pusher *p;
	char why[512];
	int err;

	for (size_t i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++) {
		const char *key;

		o.url = bad_urls[i];
		why[0] = '\0';
		key = push_opts__check(&o, why, sizeof(why));
		err = pusher__open(&p, &o, why, sizeof(why));
		tap_ok(key && !strcmp(key, "push_url") && err == -EINVAL && !p &&
			       strstr(why, "push_url"),
		       "a bad URL \"%s\": %s", bad_urls[i], why);
	}
	o = opts("bad");
	o.app = "my app";
	tap_ok(push_opts__check(&o, why, sizeof(why)) &&
		       pusher__open(&p, &o, why, sizeof(why)) == -EINVAL,
	       "a bad app name: %s", why);
	static const char *const bad_labels[] = { "a=b,c", "host=x", "a=b,a=c", "1a=b",
						  "a=b,",  "a=",     "a=x}y" };
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
		const char *key;

		o = opts("bad");
		o.labels = bad_labels[i];
		key = push_opts__check(&o, why, sizeof(why));
		tap_ok(key && !strcmp(key, "push_labels") &&
			       pusher__open(&p, &o, why, sizeof(why)) == -EINVAL,
		       "bad labels \"%s\": %s", bad_labels[i], why);
	}
	o = opts("bad");
	o.tenant = "a b";
	tap_ok(push_opts__check(&o, why, sizeof(why)) &&
		       pusher__open(&p, &o, why, sizeof(why)) == -EINVAL,
	       "a bad tenant: %s", why);
	o = opts("bad");
	o.url = NULL;
	tap_ok(!push_opts__check(&o, why, sizeof(why)), "no push_url: nothing to check");
	o = opts("bad");
	o.url = "https://user:secret@example.com:4040/pyroscope/";
	tap_ok(!push_opts__check(&o, why, sizeof(why)), "https with a user and a path is fine");
}

/* PUSH_CONF_KEYS in a kind's table, as the pprof sink has them: defaults, and a bad value
 * reported at its line through the kind's check. */
struct pushy_options {
	const char *path;
	struct push_opts push;
};

static const struct conf_key pushy_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct pushy_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "a file" },
	PUSH_CONF_KEYS(struct pushy_options, push),
	{ .key = NULL },
};

static const char *pushy_check(const void *opts, char *why, size_t why_len)
{
	return push_opts__check(&((const struct pushy_options *)opts)->push, why, why_len);
}

static const struct conf_kind pushy_kind = {
	.name = "pushy",
	.roles = CONF_SINK,
	.available = true,
	.keys = pushy_keys,
	.doc = "a sink with the push keys",
	.options_size = sizeof(struct pushy_options),
	.check = pushy_check,
};

static int load(const char *text, struct conf **conf, char **err_text)
{
	static const struct conf_kind *const kinds[] = { &pushy_kind, NULL };
	size_t len = 0;
	FILE *err = open_memstream(err_text, &len);
	int ret = conf__load_kinds("t.conf", text, strlen(text), kinds, conf, err);

	fclose(err);
	return ret;
}

static void test_conf_keys(void)
{
	struct pushy_options o;
	struct conf *conf = NULL;
	char *err = NULL;
	int ret;

	ret = load("[sink s]\nkind = pushy\npath = x\npush_url = http://127.0.0.1:4040\n", &conf,
		   &err);
	tap_ok(!ret, "conf: the push keys load: %s", err ? err : "");
	if (!ret && !conf_actor__options(&conf->actors[0], &o, sizeof(o)))
		tap_ok(!strcmp(o.push.url, "http://127.0.0.1:4040") &&
			       !strcmp(o.push.app, "xpusup") && !o.push.labels && !o.push.spool &&
			       o.push.spool_mb == 256 && o.push.timeout_s == 30 &&
			       o.push.backoff_ms == 1000 && o.push.backoff_max_s == 60 &&
			       o.push.drain_ms == 2000,
		       "conf: the defaults");
	else
		tap_ok(0, "conf: the options");
	free(err);
	conf__free(conf);

	conf = NULL;
	err = NULL;
	ret = load("[sink s]\nkind = pushy\npath = x\n\npush_url = ftp://h/\n", &conf, &err);
	tap_ok(ret == -EINVAL && err && strstr(err, "t.conf:5:") && strstr(err, "push_url"),
	       "conf: a bad push_url at its line: %s", err ? err : "");
	free(err);
	conf__free(conf);

	conf = NULL;
	err = NULL;
	ret = load("[sink s]\nkind = pushy\npath = x\npush_url = http://h\npush_labels = a\n",
		   &conf, &err);
	tap_ok(ret == -EINVAL && err && strstr(err, "t.conf:5:") && strstr(err, "push_labels"),
	       "conf: bad labels at their line: %s", err ? err : "");
	free(err);
	conf__free(conf);
}

/* A file on another file system than the spool is copied, not linked; a copy that cannot be
 * written (here the file size limit, as a full disk would) drops the file, counted, and
 * leaves nothing behind. */
static void test_copy(struct pusher *p, const char *spool)
{
	struct rlimit old, small;
	struct stat a, b;
	unsigned int i, j;
	char shm[2][128];
	__u64 sent = counter(p, PUSH_SENT), dropped = counter(p, PUSH_DROPPED);

	if (stat("/dev/shm", &a) || stat(spool, &b) || a.st_dev == b.st_dev) {
		tap_ok(1, "copy: # SKIP no /dev/shm on another file system than %s", spool);
		return;
	}
	i = make_file(30000);
	j = make_file(10000);
	for (unsigned int k = 0; k < 2; k++) {
		unsigned int f = k ? j : i;
		FILE *out;

		snprintf(shm[k], sizeof(shm[k]), "/dev/shm/push_test.%d.%u", (int)getpid(), f);
		out = fopen(shm[k], "wb");
		if (!out || fwrite(files[f].data, 1, files[f].size, out) != files[f].size ||
		    fclose(out))
			tap_bail("unable to write %s", shm[k]);
		snprintf(files[f].path, sizeof(files[f].path), "%s", shm[k]);
	}
	tap_eq_u64(submit(p, i), 0, "copy: submit a file from /dev/shm");
	tap_ok(wait_counter(p, PUSH_SENT, sent + 1), "copy: sent");
	check_arrived(i, NAME, "copy");

	getrlimit(RLIMIT_FSIZE, &old);
	small = old;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &small);
	tap_eq_u64(submit(p, j), -EFBIG, "copy: a copy that cannot be written fails");
	setrlimit(RLIMIT_FSIZE, &old);
	tap_eq_u64(counter(p, PUSH_DROPPED), dropped + 1, "copy: counted as dropped");
	tap_eq_u64(counter(p, PUSH_SPOOLED), 0, "copy: not queued");
	tap_eq_u64(spool_files(spool), 0, "copy: no partial copy left in the spool");
	unlink(shm[0]);
	unlink(shm[1]);
}

static atomic_bool reading;

/* Counters read from another thread while the pusher works (for the sanitizers). */
static void *read_counters(void *arg)
{
	struct pusher *p = arg;
	char why[512];

	while (atomic_load(&reading)) {
		counter(p, PUSH_SENT);
		pusher__error(p, why, sizeof(why));
		sleep_ms(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned int first, i, sent = 0, dropped[2];
	struct pusher *p, *p2;
	size_t bytes = 0;
	pthread_t reader;
	char why[512], path[300];
	__u64 t, fails;
	int err;

	if (argc != 3)
		tap_bail("usage: push_test PYTHON RECEIVER");
	python = argv[1];
	receiver = argv[2];
	if (access(python, X_OK))
		tap_skip_all("no %s", python);
	if (!mkdtemp(dir))
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/bodies", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/out", dir);
	mkdir(path, 0755);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rx_start(0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", rx_port);

	test_bad_options();
	test_conf_keys();

	/* Accepting: each file once, as sent; the spool empties. Two originals are removed
	 * right after submit: the spool holds its own link. */
	struct push_opts o = opts("spool1");
	err = pusher__open(&p, &o, why, sizeof(why));
	if (err)
		tap_bail("pusher__open: %s", why);
	atomic_store(&reading, true);
	pthread_create(&reader, NULL, read_counters, p);
	first = n_files;
	for (i = 0; i < 5; i++) {
		unsigned int f = make_file(1000 + 50000 * i);

		tap_eq_u64(submit(p, f), 0, "accept: submit file %u", f);
		bytes += files[f].size;
		if (i < 2)
			unlink(files[f].path);
	}
	sent += 5;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "accept: 5 files sent");
	for (i = first; i < n_files; i++)
		check_arrived(i, NAME, "accept");
	tap_eq_u64(counter(p, PUSH_SENT_BYTES), bytes, "accept: push_sent_bytes");
	tap_eq_u64(counter(p, PUSH_FAILURES) + counter(p, PUSH_RETRIES), 0, "accept: no failure");
	tap_eq_u64(counter(p, PUSH_SPOOLED) + counter(p, PUSH_SPOOL_BYTES), 0,
		   "accept: the spool counters are back to 0");
	tap_eq_u64(spool_files(o.spool), 0, "accept: the spool folder is empty");
	tap_ok(!pusher__error(p, why, sizeof(why)) && !why[0], "accept: no error");

	/* Refusing: 3 HTTP 500s, then it takes them, each once. */
	rx_mode("refuse", 3, 0);
	first = n_files;
	for (i = 0; i < 2; i++)
		tap_eq_u64(submit(p, make_file(20000 + i)), 0, "refuse: submit");
	sent += 2;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "refuse: sent after the 500s");
	for (i = first; i < n_files; i++)
		check_arrived(i, NAME, "refuse");
	tap_eq_u64(rx_count(first, 500), 3, "refuse: the oldest file got the three 500s");
	tap_eq_u64(counter(p, PUSH_FAILURES), 3, "refuse: push_failures");
	tap_eq_u64(counter(p, PUSH_RETRIES), 3, "refuse: push_retries");
	tap_ok(!pusher__error(p, why, sizeof(why)), "refuse: no error once it took them");

	/* Gone: connection refused while it is away, nothing lost; back on the same port, it
	 * gets all. */
	rx_kill();
	fails = counter(p, PUSH_FAILURES);
	first = n_files;
	for (i = 0; i < 3; i++)
		tap_eq_u64(submit(p, make_file(7000 * (i + 1))), 0, "gone: submit");
	tap_ok(wait_counter(p, PUSH_FAILURES, fails + 3), "gone: attempts fail");
	tap_eq_u64(counter(p, PUSH_SPOOLED), 3, "gone: 3 files wait in the spool");
	tap_eq_u64(counter(p, PUSH_SPOOL_BYTES), 7000 + 14000 + 21000, "gone: their bytes");
	tap_eq_u64(spool_files(o.spool), 3, "gone: 3 files in the spool folder");
	tap_ok(pusher__error(p, why, sizeof(why)) && strstr(why, url) &&
		       strstr(why, "3 files waiting"),
	       "gone: the error says it: %s", why);
	rx_start(rx_port);
	sent += 3;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "gone: sent once it is back");
	for (i = first; i < n_files; i++)
		check_arrived(i, NAME, "gone");

	/* Hanging past the 1 s timeout: retried, then taken. */
	rx_mode("slow", 1, 3);
	fails = counter(p, PUSH_FAILURES);
	first = make_file(3000);
	tap_eq_u64(submit(p, first), 0, "slow: submit");
	sent++;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "slow: sent after the timeout");
	tap_eq_u64(counter(p, PUSH_FAILURES), fails + 1, "slow: one failure, the timeout");
	tap_eq_u64(rx_count(first, 0), 1, "slow: the receiver saw the request it left hanging");
	check_arrived(first, NAME, "slow");

	/* Refused for good (400): counted, removed, not sent again; the next one goes. */
	rx_mode("reject", 1, 0);
	first = make_file(4000);
	tap_eq_u64(submit(p, first), 0, "reject: submit");
	tap_ok(wait_counter(p, PUSH_REJECTED, 1), "reject: push_rejected");
	tap_ok(pusher__error(p, why, sizeof(why)) && strstr(why, "HTTP 400") &&
		       strstr(why, "bad profile second line"),
	       "reject: the error says it: %s", why);
	i = make_file(5000);
	tap_eq_u64(submit(p, i), 0, "reject: submit another");
	sent++;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "reject: the next one is sent");
	check_arrived(i, NAME, "reject");
	tap_eq_u64(rx_count(first, 400), 1, "reject: the refused file was sent once");
	tap_eq_u64(rx_count(first, 200), 0, "reject: and never again");
	tap_eq_u64(spool_files(o.spool), 0, "reject: the spool folder is empty");

	/* Too many requests (429) with Retry-After: 1: the next try waits for it, not for the
	 * 50 ms backoff. */
	rx_mode("busy", 1, 1);
	i = make_file(2000);
	t = now_ms();
	tap_eq_u64(submit(p, i), 0, "busy: submit");
	sent++;
	tap_ok(wait_counter(p, PUSH_SENT, sent), "busy: sent");
	t = now_ms() - t;
	tap_ok(t >= 900, "busy: Retry-After believed: sent after %llu ms", (unsigned long long)t);
	tap_eq_u64(rx_count(i, 429), 1, "busy: one 429");
	check_arrived(i, NAME, "busy");

	/* Bad submits. */
	tap_eq_u64(pusher__submit(p, "/nonexistent/x.pb.gz", 1, 2), -ENOENT, "submit: no file");
	tap_eq_u64(pusher__submit(p, files[i].path, 20, 10), -EINVAL, "submit: until < from");

	/* Close with a drain: what was queued is sent before close returns. */
	first = n_files;
	for (i = 0; i < 3; i++)
		tap_eq_u64(submit(p, make_file(9000 + i)), 0, "drain: submit");
	atomic_store(&reading, false);
	pthread_join(reader, NULL);
	pusher__close(p, 5000);
	for (i = first; i < n_files; i++)
		check_arrived(i, NAME, "drain");
	tap_eq_u64(spool_files(o.spool), 0, "drain: the spool folder is empty");

	/* A spool of 10000 bytes while the receiver refuses: what does not fit is dropped,
	 * counted exactly; the rest arrives when it recovers. */
	rx_mode("refuse", -1, 0);
	o = opts("spool2");
	o.spool_bytes = 10000;
	o.labels = NULL;
	o.tenant = NULL;
	char url_slash[80];
	snprintf(url_slash, sizeof(url_slash), "%s/", url);
	o.url = url_slash; /* the base with a slash: /ingest is added all the same */
	err = pusher__open(&p, &o, why, sizeof(why));
	if (err)
		tap_bail("pusher__open: %s", why);
	static const size_t sizes[] = { 3000, 4000, 2500, 5000, 600, 400 };
	first = n_files;
	for (i = 0; i < 6; i++) {
		unsigned int f = make_file(sizes[i]);

		err = submit(p, f);
		tap_eq_u64(err, i == 3 || i == 4 ? -ENOSPC : 0, "cap: submit %zu bytes", sizes[i]);
	}
	dropped[0] = first + 3;
	dropped[1] = first + 4;
	tap_eq_u64(counter(p, PUSH_DROPPED), 2, "cap: push_dropped");
	tap_eq_u64(counter(p, PUSH_DROPPED_BYTES), 5600, "cap: push_dropped_bytes");
	tap_eq_u64(counter(p, PUSH_SPOOL_BYTES), 9900, "cap: push_spool_bytes");
	rx_mode("accept", 0, 0);
	tap_ok(wait_counter(p, PUSH_SENT, 4), "cap: the 4 queued are sent");
	for (i = first; i < n_files; i++)
		if (i != dropped[0] && i != dropped[1])
			check_arrived_as(i, "xpusup{host=testhost}", "-", "cap");
	tap_eq_u64(rx_count(dropped[0], 200) + rx_count(dropped[1], 200), 0,
		   "cap: the dropped files never arrive");
	pusher__close(p, 1000);

	/* A restart: closed without a drain while the receiver refuses, the spool keeps the
	 * files; the next pusher on that spool sends them. */
	rx_mode("refuse", -1, 0);
	o = opts("spool3");
	err = pusher__open(&p, &o, why, sizeof(why));
	if (err)
		tap_bail("pusher__open: %s", why);
	first = n_files;
	for (i = 0; i < 3; i++)
		tap_eq_u64(submit(p, make_file(6000 + 100 * i)), 0, "restart: submit");
	tap_ok(wait_counter(p, PUSH_FAILURES, 1), "restart: refused");
	t = now_ms();
	pusher__close(p, 0);
	tap_ok(now_ms() - t < 1500, "restart: close without a drain is quick (%llu ms)",
	       (unsigned long long)(now_ms() - t));
	tap_eq_u64(spool_files(o.spool), 3, "restart: 3 files left in the spool");
	snprintf(path, sizeof(path), "%s/.tmp-00000000000000000009-1-2.pb.gz", o.spool);
	fclose(fopen(path, "w")); /* a copy interrupted by a crash */
	rx_mode("accept", 0, 0);
	err = pusher__open(&p, &o, why, sizeof(why));
	if (err)
		tap_bail("pusher__open: %s", why);
	tap_eq_u64(pusher__open(&p2, &o, why, sizeof(why)), -EBUSY,
		   "restart: a second pusher on the same spool: %s", why);
	tap_ok(wait_counter(p, PUSH_SENT, 3), "restart: the spooled files are sent");
	for (i = first; i < n_files; i++)
		check_arrived(i, NAME, "restart");
	tap_eq_u64(spool_files(o.spool), 0, "restart: the spool is empty, the leftover removed");
	tap_eq_u64(counter(p, PUSH_SENT_BYTES), 6000 + 6100 + 6200, "restart: push_sent_bytes");

	test_copy(p, o.spool);

	/* close without a drain cuts an upload in flight short, and keeps its file. */
	rx_mode("slow", 1, 10);
	i = make_file(1234);
	tap_eq_u64(submit(p, i), 0, "cut: submit");
	t = now_ms();
	while (!rx_count(i, 0) && now_ms() - t < WAIT_MS)
		sleep_ms(10);
	t = now_ms();
	pusher__close(p, 0);
	tap_ok(now_ms() - t < 2500, "cut: close while an upload hangs takes %llu ms",
	       (unsigned long long)(now_ms() - t));
	tap_eq_u64(spool_files(o.spool), 1, "cut: its file stays in the spool");

	rx_kill();
	for (i = 0; i < n_files; i++)
		free(files[i].data);
	curl_global_cleanup();
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		tap_diag("unable to remove %s", dir);
	return tap_done();
}
