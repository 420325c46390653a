// SPDX-License-Identifier: MIT
/*
 * The push of profile files to a Pyroscope-compatible /ingest endpoint (push.h): an on-disk
 * spool that is the queue, and one upload thread with libcurl's easy interface.
 *
 * The request is Pyroscope's HTTP ingest API (grafana.com/docs/pyroscope, "Pyroscope server
 * HTTP API", and its source, pkg/og/convert/pprof RawProfile): POST /ingest with the query
 * name=APP{k=v,...}, from and until (UNIX seconds), format=pprof, and the profile as the
 * whole body. A body that is not a multipart form is taken as the pprof data itself, gzip'ed
 * or not; we send application/octet-stream.
 *
 * Why a spool of files and not a queue in memory: the files already exist (the pprof sink
 * wrote them), a hard link costs nothing, and a sink that is killed or restarted while the
 * receiver is away must still send them. The queue in memory mirrors the spool: an entry is
 * appended after its spool file exists and popped after its spool file is removed, so a
 * crash in between sends a file twice at worst, never loses one.
 */
#include "actors/sink/push.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/appendf.h"
#include "common/paths.h"

#ifndef XPUSUP_VERSION
#define XPUSUP_VERSION "dev"
#endif

#define SPOOL_SUFFIX ".pb.gz"
#define SPOOL_NAME_MAX 80
#define TMP_PREFIX ".tmp-"
#define ERR_MAX 512
#define REPLY_MAX 160 /* of a refusing reply's body, for the error in words */

/* A file in the spool: SEQ-FROM-UNTIL.pb.gz. */
struct spooled {
	__u64 seq, from, until, size;
	unsigned int attempts;
};

struct pusher {
	/* set by open, read-only after */
	char *ingest_url; /* with the path, without the query */
	char *shown_url; /* the same without user:password, for messages */
	char *name_q; /* name=... URL-encoded, for the query */
	char *tenant_header; /* "X-Scope-OrgID: ..." or NULL */
	char spool[PATH_MAX];
	int spool_fd; /* the folder */
	int lock_fd; /* flock'ed: one pusher a spool */
	__u64 cap;
	long timeout_ms, connect_timeout_ms;
	__u64 backoff_min_ms, backoff_max_ms;
	pthread_t thread;
	bool started;
	/* the deadline of an upload in flight, read by its progress callback: close() moves it
	 * to the end of the drain (atomic: the callback reads it without mu) */
	_Atomic __u64 cut_at_ns;

	pthread_mutex_t mu; /* the rest */
	pthread_cond_t cv; /* signalled on submit and close */
	struct spooled *q; /* q[head .. head + len), oldest first */
	size_t head, len, alloc;
	__u64 next_seq;
	__u64 spool_bytes;
	__u64 c[PUSH_N_COUNTERS];
	unsigned int failures_in_row;
	__u64 next_try_ns; /* monotonic: no attempt before */
	bool stop;
	__u64 drain_end_ns;
	bool trouble;
	char err[ERR_MAX];
	__u64 rng;
};

static const char *const counter_names[PUSH_N_COUNTERS] = {
	[PUSH_SENT] = "push_sent",
	[PUSH_SENT_BYTES] = "push_sent_bytes",
	[PUSH_FAILURES] = "push_failures",
	[PUSH_RETRIES] = "push_retries",
	[PUSH_REJECTED] = "push_rejected",
	[PUSH_SPOOLED] = "push_spooled",
	[PUSH_SPOOL_BYTES] = "push_spool_bytes",
	[PUSH_DROPPED] = "push_dropped",
	[PUSH_DROPPED_BYTES] = "push_dropped_bytes",
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* libcurl's global state, once a process: curl_global_init is not thread-safe in the
 * libcurl we build against (7.88 without CURL_VERSION_THREADSAFE guarantees), and never
 * cleaned up, since another pusher may come. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/*
 * The URL as curl parses it: http or https, a host, no query or fragment. When ingest is
 * not NULL, the URL to POST to (PATH/ingest unless PATH ends so) and the same without
 * user:password, for messages. 0 or -EINVAL with why, -ENOMEM.
 */
static int parse_url(const char *url, char **ingest, char **shown, char *why, size_t why_len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *frag = NULL,
	     *full = NULL, *fixed = NULL;
	CURLUcode rc;
	size_t n;
	int err = -EINVAL;

	if (!u)
		return -ENOMEM;
	/* curl would take "http:///x" as the host x: an empty authority is refused here */
	if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) ||
	    strchr("/?#", url[url[4] == 's' ? 8 : 7])) {
		snprintf(why, why_len, "push_url \"%s\": not http://HOST[:PORT] or https://...",
			 url);
		goto free_url;
	}
	rc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (rc) {
		snprintf(why, why_len, "push_url \"%s\": %s", url, curl_url_strerror(rc));
		goto free_url;
	}
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) || !host[0] || query || frag) {
		snprintf(why, why_len, "push_url \"%s\": %s", url,
			 query || frag ? "a query or fragment (the push writes its own query)" :
					 "no host");
		goto free_parts;
	}
	err = 0;
	if (!ingest)
		goto free_parts;
	err = -ENOMEM;
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	if (curl_url_get(u, CURLUPART_PATH, &path, 0))
		goto free_parts;
	n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	if (!(n >= 7 && !memcmp(path + n - 7, "/ingest", 7))) {
		fixed = malloc(n + sizeof("/ingest"));
		if (!fixed)
			goto free_parts;
		memcpy(fixed, path, n);
		memcpy(fixed + n, "/ingest", sizeof("/ingest"));
		if (curl_url_set(u, CURLUPART_PATH, fixed, 0))
			goto free_parts;
	}
	if (curl_url_get(u, CURLUPART_URL, &full, 0))
		goto free_parts;
	*ingest = strdup(full);
	n = strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) +
	    strlen(fixed ? fixed : path) + 8;
	*shown = malloc(n);
	if (!*ingest || !*shown) {
		free(*ingest);
		free(*shown);
		*ingest = *shown = NULL;
		goto free_parts;
	}
	snprintf(*shown, n, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
		 fixed ? fixed : path);
	err = 0;
free_parts:
	free(fixed);
	curl_free(full);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_free(frag);
free_url:
	curl_url_cleanup(u);
	return err;
}

/* RFC 3986: all but the unreserved characters percent-encoded. */
static void url_encode(char *buf, size_t size, size_t *len, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || strchr("-._~", c))
			xpu_appendf(buf, size, len, "%c", c);
		else
			xpu_appendf(buf, size, len, "%%%02X", c);
	}
}

/* name=APP{host=HOST,LABELS}, encoded. */
static char *name_query(const struct push_opts *o, const char *host)
{
	char name[2048], *q;
	size_t len = 0, qlen = 0, size;

	xpu_appendf(name, sizeof(name), &len, "%s{host=%s%s%s}", o->app, host,
		    o->labels && o->labels[0] ? "," : "", o->labels ? o->labels : "");
	if (len >= sizeof(name))
		return NULL;
	size = sizeof("name=") + 3 * len;
	q = malloc(size);
	if (!q)
		return NULL;
	xpu_appendf(q, size, &qlen, "name=");
	url_encode(q, size, &qlen, name);
	return q;
}

/* ---- the spool ---- */

static void spool_name(char *buf, size_t len, const struct spooled *e)
{
	snprintf(buf, len, "%020llu-%llu-%llu" SPOOL_SUFFIX, (unsigned long long)e->seq,
		 (unsigned long long)e->from, (unsigned long long)e->until);
}

static bool spool_parse(const char *name, struct spooled *e)
{
	unsigned long long seq, from, until;
	int end = 0;

	if (sscanf(name, "%20llu-%20llu-%20llu" SPOOL_SUFFIX "%n", &seq, &from, &until, &end) !=
		    3 ||
	    !end || name[end] || !isdigit((unsigned char)name[0]))
		return false;
	*e = (struct spooled){ .seq = seq, .from = from, .until = until };
	return true;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct spooled *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Append e to the queue (mu held, or before the thread starts). */
static int queue_push(struct pusher *p, const struct spooled *e)
{
	if (p->head + p->len == p->alloc) {
		if (p->head) { /* compact rather than grow */
			memmove(p->q, p->q + p->head, p->len * sizeof(*p->q));
			p->head = 0;
		} else {
			size_t n = p->alloc ? 2 * p->alloc : 64;
			struct spooled *q = realloc(p->q, n * sizeof(*q));

			if (!q)
				return -ENOMEM;
			p->q = q;
			p->alloc = n;
		}
	}
	p->q[p->head + p->len++] = *e;
	p->spool_bytes += e->size;
	return 0;
}

static void queue_pop(struct pusher *p)
{
	p->spool_bytes -= p->q[p->head].size;
	p->head++;
	if (!--p->len)
		p->head = 0;
}

/* The files a previous run left, oldest first; leftovers of an interrupted copy removed. */
static int spool_scan(struct pusher *p, char *why, size_t why_len)
{
	int fd = fcntl(p->spool_fd, F_DUPFD_CLOEXEC, 0), err = 0;
	struct dirent *d;
	DIR *dir;

	if (fd < 0 || !(dir = fdopendir(fd))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(why, why_len, "unable to read %s: %s", p->spool, strerror(-err));
		return err;
	}
	while ((d = readdir(dir))) {
		struct spooled e;
		struct stat st;

		if (!strncmp(d->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			unlinkat(p->spool_fd, d->d_name, 0);
			continue;
		}
		if (!spool_parse(d->d_name, &e) ||
		    fstatat(p->spool_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue; /* not ours */
		e.size = (__u64)st.st_size;
		err = queue_push(p, &e);
		if (err) {
			snprintf(why, why_len, "out of memory");
			break;
		}
		if (e.seq >= p->next_seq)
			p->next_seq = e.seq + 1;
	}
	closedir(dir);
	if (p->len)
		qsort(p->q, p->len, sizeof(*p->q), cmp_seq);
	return err;
}

/* Copy src into the spool as name, whole or not at all (a temporary name, then rename). */
static int spool_copy(struct pusher *p, int src, const char *name)
{
	char tmp[SPOOL_NAME_MAX + sizeof(TMP_PREFIX)], buf[65536];
	int dst, err = 0;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	dst = openat(p->spool_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (dst < 0)
		return -errno;
	while ((n = read(src, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto remove_tmp;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(dst, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				err = -errno;
				goto remove_tmp;
			}
			off += w;
		}
	}
	if (fsync(dst) || close(dst)) {
		err = -errno;
		dst = -1;
		goto remove_tmp;
	}
	if (renameat(p->spool_fd, tmp, p->spool_fd, name)) {
		err = -errno;
		dst = -1;
		goto remove_tmp;
	}
	return 0;
remove_tmp:
	if (dst >= 0)
		close(dst);
	unlinkat(p->spool_fd, tmp, 0);
	return err;
}

/* The words of pusher__error (mu held). */
__attribute__((format(printf, 2, 3))) static void trouble(struct pusher *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	p->trouble = true;
}

int pusher__submit(struct pusher *p, const char *path, __u64 from_s, __u64 until_s)
{
	char name[SPOOL_NAME_MAX];
	struct spooled e = { .from = from_s, .until = until_s };
	struct stat st;
	int fd, err;

	if (until_s < from_s)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) { /* a file not handed over is lost to the push too */
		err = -errno;
		pthread_mutex_lock(&p->mu);
		p->c[PUSH_DROPPED]++;
		trouble(p, "push: unable to read %s: %s", path, strerror(-err));
		pthread_mutex_unlock(&p->mu);
		if (fd >= 0)
			close(fd);
		return err;
	}
	e.size = (__u64)st.st_size;

	/* Room is taken before the file is linked (the upload thread only ever frees it) and
	 * given back if the link fails, so the cap holds without I/O under mu. */
	pthread_mutex_lock(&p->mu);
	if (p->spool_bytes + e.size > p->cap) {
		p->c[PUSH_DROPPED]++;
		p->c[PUSH_DROPPED_BYTES] += e.size;
		trouble(p, "push spool %s full (%llu of %llu bytes): %s dropped", p->spool,
			(unsigned long long)p->spool_bytes, (unsigned long long)p->cap, path);
		pthread_mutex_unlock(&p->mu);
		err = -ENOSPC;
		goto close_fd;
	}
	e.seq = p->next_seq++;
	p->spool_bytes += e.size;
	pthread_mutex_unlock(&p->mu);

	spool_name(name, sizeof(name), &e);
	err = linkat(AT_FDCWD, path, p->spool_fd, name, 0) ? -errno : 0;
	if (err == -EXDEV || err == -EPERM || err == -EMLINK || err == -ENOTSUP)
		err = spool_copy(p, fd, name); /* another file system, or no hard links */
	if (!err)
		fsync(p->spool_fd); /* the name, for a restart after a crash */

	pthread_mutex_lock(&p->mu);
	p->spool_bytes -= e.size;
	if (!err)
		err = queue_push(p, &e);
	if (err) {
		unlinkat(p->spool_fd, name, 0);
		p->c[PUSH_DROPPED]++;
		p->c[PUSH_DROPPED_BYTES] += e.size;
		trouble(p, "push spool %s: unable to queue %s: %s", p->spool, path, strerror(-err));
	} else {
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
close_fd:
	close(fd);
	return err;
}

/* ---- the upload thread ---- */

enum outcome { SENT, REJECTED, RETRY, GONE, CUT };

struct reply {
	char body[REPLY_MAX];
	size_t len;
};

static size_t reply_write(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n, room = sizeof(r->body) - 1 - r->len;

	memcpy(r->body + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	r->body[r->len] = '\0';
	return len;
}

/* Cut an upload short when close() says the drain is over. */
static int upload_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			   curl_off_t ulnow)
{
	struct pusher *p = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return mono_ns() >= atomic_load(&p->cut_at_ns);
}

/* What a refusing receiver said, on one printable line. */
static void reply_words(struct reply *r)
{
	for (size_t i = 0; i < r->len; i++)
		if (!isprint((unsigned char)r->body[i]))
			r->body[i] = ' ';
	while (r->len && r->body[r->len - 1] == ' ')
		r->body[--r->len] = '\0';
}

/*
 * One attempt to send e, within budget_ms. Returns the outcome, with why in words for all
 * but SENT, and for RETRY the server's Retry-After in seconds when it sent one. Runs without mu: it reads only what open set, and e's file, which nobody else
 * removes.
 */
static enum outcome send_one(struct pusher *p, CURL *h, struct curl_slist *headers,
			     const struct spooled *e, long budget_ms, __u64 *retry_after_s,
			     char *why, size_t why_len)
{
	char name[SPOOL_NAME_MAX], errbuf[CURL_ERROR_SIZE] = "", *url;
	size_t url_size, url_len = 0;
	struct reply reply = { .len = 0 };
	enum outcome out;
	struct stat st;
	long status = 0;
	CURLcode rc;
	FILE *f;
	int fd;

	spool_name(name, sizeof(name), e);
	fd = openat(p->spool_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !(f = fdopen(fd, "rb"))) {
		int err = errno;

		snprintf(why, why_len, "push spool %.256s: %s: %s", p->spool, name, strerror(err));
		if (fd >= 0)
			close(fd);
		/* only a file that is not there is gone; out of descriptors or memory, it is
		 * tried again like a failed request */
		return err == ENOENT ? GONE : RETRY;
	}
	url_size = strlen(p->ingest_url) + strlen(p->name_q) + 96;
	url = malloc(url_size);
	if (!url) {
		fclose(f);
		snprintf(why, why_len, "push: out of memory");
		return RETRY;
	}
	xpu_appendf(url, url_size, &url_len, "%s?%s&from=%llu&until=%llu&format=pprof",
		    p->ingest_url, p->name_q, (unsigned long long)e->from,
		    (unsigned long long)e->until);

	/* Every option every time, so that nothing of an earlier attempt carries over; the
	 * handle keeps its connections across curl_easy_reset. */
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_READDATA, f);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "xpusup/" XPUSUP_VERSION);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 p->connect_timeout_ms < budget_ms ? p->connect_timeout_ms : budget_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, budget_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reply_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, upload_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	rc = curl_easy_perform(h);
	fclose(f);
	free(url);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(why, why_len, "push to %s: cut short at stop", p->shown_url);
		return CUT;
	}
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "push to %s: %s", p->shown_url,
			 errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return RETRY;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return SENT;
	/* A 4xx is about this request, and sending it again changes nothing, except 408
	 * (request timeout) and 429 (too many requests), which are about the moment. */
	out = status >= 400 && status < 500 && status != 408 && status != 429 ? REJECTED : RETRY;
	if (out == RETRY) {
		curl_off_t after = 0;

		if (!curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &after) && after > 0)
			*retry_after_s = (__u64)after;
	}
	reply_words(&reply);
	snprintf(why, why_len, "push to %s: HTTP %ld%s%s%s", p->shown_url, status,
		 reply.len ? " (" : "", reply.body, reply.len ? ")" : "");
	return out;
}

/* The delay before attempt n + 1 after n failures in a row: backoff_min_ms doubled n - 1
 * times, at most backoff_max_ms, less up to a quarter at random so that hosts that lost
 * the same receiver do not come back at the same instant. */
static __u64 backoff_ns(struct pusher *p, unsigned int n)
{
	__u64 ms = p->backoff_min_ms;

	for (unsigned int i = 1; i < n && ms < p->backoff_max_ms; i++)
		ms *= 2;
	if (ms > p->backoff_max_ms)
		ms = p->backoff_max_ms;
	p->rng ^= p->rng << 13; /* xorshift64 */
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	ms -= p->rng % (ms / 4 + 1);
	return ms * 1000000ull;
}

/* Wait on cv until deadline_ns (monotonic; cv's clock). */
static void wait_until(struct pusher *p, __u64 deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ull),
			       .tv_nsec = (long)(deadline_ns % 1000000000ull) };

	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void *upload_main(void *arg)
{
	struct curl_slist *headers = NULL, *h1;
	struct pusher *p = arg;
	char why[ERR_MAX];
	CURL *h = curl_easy_init();

	/* The whole body at once, without waiting for a "100 Continue" first. */
	h1 = curl_slist_append(NULL, "Content-Type: application/octet-stream");
	headers = h1 ? curl_slist_append(h1, "Expect:") : NULL;
	if (headers && p->tenant_header)
		headers = curl_slist_append(headers, p->tenant_header);
	if (!headers)
		curl_slist_free_all(h1);
	pthread_mutex_lock(&p->mu);
	if (!h || !headers) {
		trouble(p, "push: unable to start libcurl");
		while (!p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
	}
	while (h && headers) {
		__u64 now = mono_ns(), wake;
		__u64 retry_after_s = 0, delay_ns;
		struct spooled e;
		enum outcome out;
		long budget_ms = p->timeout_ms;

		if (p->stop && (!p->len || now >= p->drain_end_ns))
			break;
		if (!p->len) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		if (now < p->next_try_ns) {
			wake = p->next_try_ns;
			if (p->stop && p->drain_end_ns < wake)
				wake = p->drain_end_ns;
			wait_until(p, wake);
			continue;
		}
		if (p->stop && (__u64)budget_ms > (p->drain_end_ns - now) / 1000000)
			budget_ms = (long)((p->drain_end_ns - now) / 1000000) + 1;
		e = p->q[p->head];
		if (p->q[p->head].attempts++)
			p->c[PUSH_RETRIES]++;
		pthread_mutex_unlock(&p->mu);

		out = send_one(p, h, headers, &e, budget_ms, &retry_after_s, why, sizeof(why));
		if (out == SENT || out == REJECTED) {
			char name[SPOOL_NAME_MAX];

			spool_name(name, sizeof(name), &e);
			unlinkat(p->spool_fd, name, 0);
		}

		pthread_mutex_lock(&p->mu);
		switch (out) {
		case SENT:
			p->c[PUSH_SENT]++;
			p->c[PUSH_SENT_BYTES] += e.size;
			p->trouble = false;
			p->err[0] = '\0';
			break;
		case REJECTED:
			p->c[PUSH_REJECTED]++;
			trouble(p, "%s: profile %llu..%llu refused for good, removed", why,
				(unsigned long long)e.from, (unsigned long long)e.until);
			break;
		case GONE:
			p->c[PUSH_DROPPED]++;
			p->c[PUSH_DROPPED_BYTES] += e.size;
			trouble(p, "%s: gone from the spool, dropped", why);
			break;
		case RETRY:
			p->c[PUSH_FAILURES]++;
			delay_ns = backoff_ns(p, ++p->failures_in_row);
			/* a server that says when to come back (429, 503) is believed, up to
			 * the longest delay */
			if (retry_after_s) {
				__u64 after_ms = retry_after_s < p->backoff_max_ms / 1000 ?
							 retry_after_s * 1000 :
							 p->backoff_max_ms;

				if (after_ms * 1000000ull > delay_ns)
					delay_ns = after_ms * 1000000ull;
			}
			p->next_try_ns = mono_ns() + delay_ns;
			trouble(p, "%s; %zu files waiting, next try in %llu ms", why, p->len,
				(unsigned long long)(delay_ns / 1000000));
			break;
		case CUT:
			break;
		}
		if (out != RETRY && out != CUT) {
			queue_pop(p);
			if (out != GONE) /* the receiver answered */
				p->failures_in_row = 0, p->next_try_ns = 0;
		}
	}
	pthread_mutex_unlock(&p->mu);
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	return NULL;
}

/* ---- the API ---- */

static void pusher_free(struct pusher *p)
{
	if (p->lock_fd >= 0)
		close(p->lock_fd); /* and its flock */
	if (p->spool_fd >= 0)
		close(p->spool_fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->q);
	free(p->ingest_url);
	free(p->shown_url);
	free(p->name_q);
	free(p->tenant_header);
	free(p);
}

int pusher__open(struct pusher **pp, const struct push_opts *o, char *why, size_t why_len)
{
	struct push_opts opts = *o;
	char host[256];
	pthread_condattr_t ca;
	sigset_t all, old;
	struct pusher *p;
	int err;

	*pp = NULL;
	if (!opts.app)
		opts.app = PUSH_APP_DEFAULT;
	if (!opts.url || !opts.spool || !opts.spool[0]) {
		snprintf(why, why_len, "push: %s not set",
			 opts.url ? "the spool folder" : "push_url");
		return -EINVAL;
	}
	if (push_opts__check(&opts, why, why_len))
		return -EINVAL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc) {
		snprintf(why, why_len, "push: libcurl: %s", curl_easy_strerror(curl_init_rc));
		return -EIO;
	}
	if (!opts.host) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		opts.host = host;
	}
	if (!push__label_value_ok(opts.host, strlen(opts.host))) {
		snprintf(why, why_len, "push: host \"%s\" cannot be a label value", opts.host);
		return -EINVAL;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->spool_fd = p->lock_fd = -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->cap = opts.spool_bytes ? opts.spool_bytes :
				    (opts.spool_mb ? opts.spool_mb : PUSH_SPOOL_MB_DEFAULT) << 20;
	p->timeout_ms = (long)(opts.timeout_s ? opts.timeout_s : PUSH_TIMEOUT_S_DEFAULT) * 1000;
	p->connect_timeout_ms = p->timeout_ms < 10000 ? p->timeout_ms : 10000;
	p->backoff_min_ms = opts.backoff_ms ? opts.backoff_ms : PUSH_BACKOFF_MS_DEFAULT;
	p->backoff_max_ms =
		(opts.backoff_max_s ? opts.backoff_max_s : PUSH_BACKOFF_MAX_S_DEFAULT) * 1000;
	if (p->backoff_max_ms < p->backoff_min_ms)
		p->backoff_max_ms = p->backoff_min_ms;
	p->rng = mono_ns() ^ ((__u64)getpid() << 32) ^ (__u64)(uintptr_t)p;
	p->rng |= 1;
	p->next_seq = 1;
	atomic_store(&p->cut_at_ns, UINT64_MAX);

	err = -ENOMEM;
	p->name_q = name_query(&opts, opts.host);
	if (!p->name_q) {
		snprintf(why, why_len, "push: the name is too long");
		goto free_pusher;
	}
	if (opts.tenant) {
		size_t n = sizeof("X-Scope-OrgID: ") + strlen(opts.tenant);

		p->tenant_header = malloc(n);
		if (!p->tenant_header)
			goto free_pusher;
		snprintf(p->tenant_header, n, "X-Scope-OrgID: %s", opts.tenant);
	}
	err = parse_url(opts.url, &p->ingest_url, &p->shown_url, why, why_len);
	if (err)
		goto free_pusher;
	if (snprintf(p->spool, sizeof(p->spool), "%s", opts.spool) >= (int)sizeof(p->spool)) {
		err = -ENAMETOOLONG;
		snprintf(why, why_len, "push_spool: a name too long");
		goto free_pusher;
	}
	err = xpu_mkdir_p(p->spool, 0755);
	if (!err) {
		p->spool_fd = open(p->spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		err = p->spool_fd < 0 ? -errno : 0;
	}
	if (!err) {
		p->lock_fd = openat(p->spool_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		err = p->lock_fd < 0 ? -errno : 0;
	}
	if (err) {
		snprintf(why, why_len, "unable to open the push spool %s: %s", p->spool,
			 strerror(-err));
		goto free_pusher;
	}
	if (flock(p->lock_fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(why, why_len, "push spool %s: %s", p->spool,
			 err == -EBUSY ? "in use by another sink" : strerror(-err));
		goto free_pusher;
	}
	err = spool_scan(p, why, why_len);
	if (err)
		goto free_pusher;

	/* The thread takes no signal: the sink's own thread handles them, and a write to a
	 * closed TLS connection must fail with EPIPE rather than kill the sink (CURLOPT_NOSIGNAL
	 * leaves SIGPIPE to us). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&p->thread, NULL, upload_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		snprintf(why, why_len, "push: unable to start its thread: %s", strerror(-err));
		goto free_pusher;
	}
	p->started = true;
	*pp = p;
	return 0;
free_pusher:
	pusher_free(p);
	return err;
}

unsigned int pusher__counters(struct pusher *p, const char **names, __u64 *values, unsigned int max)
{
	__u64 v[PUSH_N_COUNTERS];
	unsigned int n = max < PUSH_N_COUNTERS ? max : PUSH_N_COUNTERS;

	pthread_mutex_lock(&p->mu);
	memcpy(v, p->c, sizeof(v));
	v[PUSH_SPOOLED] = p->len;
	v[PUSH_SPOOL_BYTES] = p->spool_bytes;
	pthread_mutex_unlock(&p->mu);
	for (unsigned int i = 0; i < n; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	return n;
}

int pusher__error(struct pusher *p, char *buf, size_t len)
{
	int ret;

	pthread_mutex_lock(&p->mu);
	ret = p->trouble;
	snprintf(buf, len, "%s", p->trouble ? p->err : "");
	pthread_mutex_unlock(&p->mu);
	return ret;
}

void pusher__close(struct pusher *p, unsigned int drain_ms)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	p->drain_end_ns = mono_ns() + (__u64)drain_ms * 1000000ull;
	atomic_store(&p->cut_at_ns, p->drain_end_ns);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->thread, NULL);
	pusher_free(p);
}
