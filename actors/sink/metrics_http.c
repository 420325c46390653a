// SPDX-License-Identifier: MIT
/*
 * The metrics format's HTTP server (metrics.h): one thread, one poll loop over the listening
 * socket, a wake-up eventfd and at most max_clients connections, every socket non-blocking.
 * It speaks just enough HTTP/1.x for a scraper: one request a connection (Connection: close),
 * no body, GET or HEAD of /metrics. Plain sockets rather than a library: what must hold is
 * easier to see here than to configure there.
 *
 * A client cannot hold the server: nothing waits on one client (every read and write is
 * non-blocking), each connection has a deadline from its accept (the whole request) and from
 * the start of its reply (the whole reply), and a new connection when every slot is taken
 * closes the oldest one that is still sending its request, so slow or idle connections (a
 * slowloris) cannot keep a scraper out. After its reply a connection is drained until the
 * client closes or the deadline comes: closing a socket with unread bytes sends a reset that
 * can destroy the reply before the client has read it.
 */
#include "actors/sink/metrics.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/status.h"

#define BACKLOG 16
#define ACCEPTS_PER_TURN 64 /* a flood of connections still lets the others be served */
/* A connection that has sent no whole request after this long may be closed for a new one: a
 * scraper sends its request at once; an idle or slow client should not keep others out. */
#define EVICT_GRACE_NS 100000000ull
#define REPLY_GRACE_NS 1000000000ull /* a reply not taken after this may make room */
#define ACCEPT_PAUSE_NS 100000000ull /* out of descriptors: the backlog waits this long */
#define POLL_MAX_MS 1000

struct page {
	unsigned int refs; /* under http.lock */
	size_t len;
	char body[];
};

enum client_state { C_FREE, C_READING, C_REPLYING, C_DRAINING };

struct client {
	int fd;
	enum client_state state;
	__u64 accepted_ns, deadline_ns;
	__u64 replying_ns; /* when its reply started (C_REPLYING) */
	size_t got;
	char req[METRICS_REQUEST_MAX];
	char head[320];
	size_t head_len, head_off;
	struct page *page; /* a 200's body, a reference; NULL for an error's */
	const char *body; /* what is sent after head: page->body or a short text */
	size_t body_len, body_off;
};

struct metrics_http {
	int listen_fd, wake_fd;
	unsigned int max_clients;
	__u64 timeout_ns;
	struct client *clients;
	struct pollfd *pfd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	struct page *page; /* the current page, holding one reference; under lock */
	struct metrics_http_counts counts; /* written by the thread (relaxed), read by any */
	__u64 accept_after_ns; /* out of file descriptors: the backlog waits until then */
};

static void count(__u64 *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static void page__put(struct metrics_http *h, struct page *p)
{
	unsigned int left;

	if (!p)
		return;
	pthread_mutex_lock(&h->lock);
	left = --p->refs;
	pthread_mutex_unlock(&h->lock);
	if (!left)
		free(p);
}

static struct page *page__get(struct metrics_http *h)
{
	struct page *p;

	pthread_mutex_lock(&h->lock);
	p = h->page;
	if (p)
		p->refs++;
	pthread_mutex_unlock(&h->lock);
	return p;
}

static void client__close(struct metrics_http *h, struct client *c)
{
	close(c->fd);
	page__put(h, c->page);
	c->page = NULL;
	c->fd = -1;
	c->state = C_FREE;
}

/* The reply: status line and headers into c->head, body after them; the deadline starts. */
static void client__reply(struct client *c, int code, const char *reason, const char *extra,
			  const char *body, size_t len, bool head_only, __u64 now, __u64 timeout)
{
	int n;

	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n",
		     code, reason, code == 200 ? METRICS_CONTENT_TYPE : "text/plain; charset=utf-8",
		     len, extra);
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	c->head_off = 0;
	c->body = body;
	c->body_len = head_only ? 0 : len;
	c->body_off = 0;
	c->state = C_REPLYING;
	c->replying_ns = now;
	c->deadline_ns = now + timeout;
}

static void client__error(struct client *c, int code, const char *reason, const char *extra,
			  bool head, __u64 now, __u64 timeout)
{
	static const char *const texts[] = { "bad request\n",
					     "not found: the metrics are at "
					     "/metrics\n",
					     "method not allowed: GET or HEAD\n",
					     "request header fields too large\n",
					     "no page yet: try again\n" };
	const char *t = code == 400 ? texts[0] :
			code == 404 ? texts[1] :
			code == 405 ? texts[2] :
			code == 431 ? texts[3] :
				      texts[4];

	client__reply(c, code, reason, extra, t, strlen(t), head, now, timeout);
}

/* A request line token: visible ASCII, at least one byte. */
static bool token_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return n > 0;
}

/* A whole request is in c->req (end: the byte after the blank line): answer it. */
static void client__request(struct metrics_http *h, struct client *c, size_t end, __u64 now)
{
	const char *line = c->req, *eol, *sp1, *sp2, *q, *p, *next;
	size_t mlen, tlen, vlen, path_len;
	bool head;

	eol = memchr(line, '\n', end);
	if (!eol)
		goto bad;
	sp1 = memchr(line, ' ', (size_t)(eol - line));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2)
		goto bad;
	mlen = (size_t)(sp1 - line);
	tlen = (size_t)(sp2 - sp1 - 1);
	vlen = (size_t)(eol - sp2 - 1) - (eol > sp2 + 1 && eol[-1] == '\r');
	if (!token_ok(line, mlen) || !token_ok(sp1 + 1, tlen) || sp1[1] != '/' || vlen != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)))
		goto bad;
	/* every header line is NAME: VALUE, up to the blank line */
	for (p = eol + 1; p < c->req + end; p = next) {
		const char *nl = memchr(p, '\n', (size_t)(c->req + end - p)), *colon;

		if (!nl)
			goto bad;
		next = nl + 1;
		if (nl == p || (nl == p + 1 && p[0] == '\r'))
			break; /* the blank line */
		colon = memchr(p, ':', (size_t)(nl - p));
		if (!colon || colon == p || !token_ok(p, (size_t)(colon - p)))
			goto bad;
	}
	head = mlen == 4 && !memcmp(line, "HEAD", 4);
	if (!head && !(mlen == 3 && !memcmp(line, "GET", 3))) {
		count(&h->counts.bad_methods);
		client__error(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", false, now,
			      h->timeout_ns);
		return;
	}
	q = memchr(sp1 + 1, '?', tlen);
	path_len = q ? (size_t)(q - sp1 - 1) : tlen;
	if (path_len != 8 || memcmp(sp1 + 1, "/metrics", 8)) {
		count(&h->counts.not_found);
		client__error(c, 404, "Not Found", "", head, now, h->timeout_ns);
		return;
	}
	c->page = page__get(h);
	if (!c->page) {
		client__error(c, 503, "Service Unavailable", "Retry-After: 1\r\n", head, now,
			      h->timeout_ns);
		return;
	}
	count(&h->counts.scrapes);
	client__reply(c, 200, "OK", "", c->page->body, c->page->len, head, now, h->timeout_ns);
	return;
bad:
	count(&h->counts.bad_requests);
	client__error(c, 400, "Bad Request", "", false, now, h->timeout_ns);
}

/* The end of the headers in c->req (the byte after the blank line), or 0. */
static size_t request_end(const struct client *c)
{
	size_t i;

	for (i = 1; i < c->got; i++) {
		if (c->req[i] != '\n')
			continue;
		if (c->req[i - 1] == '\n')
			return i + 1;
		if (i >= 2 && c->req[i - 1] == '\r' && c->req[i - 2] == '\n')
			return i + 1;
	}
	return 0;
}

static void client__read(struct metrics_http *h, struct client *c, __u64 now)
{
	char sink[4096];
	unsigned int k = 0;
	size_t end;
	ssize_t n;

	if (c->state == C_DRAINING) { /* the reply is out: wait for the client to close */
		do /* bounded: a client that keeps sending waits for the next turn */
			n = recv(c->fd, sink, sizeof(sink), 0);
		while (n > 0 && ++k < 16);
		if (n > 0)
			return;
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			client__close(h, c);
		return;
	}
	n = recv(c->fd, c->req + c->got, sizeof(c->req) - c->got, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client__close(h, c); /* gone before its reply: nothing to say */
		return;
	}
	if (n < 0)
		return;
	c->got += (size_t)n;
	end = request_end(c);
	if (end) {
		client__request(h, c, end, now);
	} else if (c->got == sizeof(c->req)) {
		count(&h->counts.too_large);
		client__error(c, 431, "Request Header Fields Too Large", "", false, now,
			      h->timeout_ns);
	}
}

static void client__write(struct metrics_http *h, struct client *c)
{
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	size_t head_left = c->head_len - c->head_off;
	ssize_t n;

	iov[0] = (struct iovec){ c->head + c->head_off, head_left };
	iov[1] = (struct iovec){ (char *)c->body + c->body_off, c->body_len - c->body_off };
	msg.msg_iov = head_left ? iov : iov + 1;
	msg.msg_iovlen = head_left ? 2 : 1;
	n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			client__close(h, c);
		return;
	}
	if ((size_t)n >= head_left) {
		c->head_off = c->head_len;
		c->body_off += (size_t)n - head_left;
	} else {
		c->head_off += (size_t)n;
	}
	if (c->head_off == c->head_len && c->body_off == c->body_len) {
		shutdown(c->fd, SHUT_WR);
		page__put(h, c->page);
		c->page = NULL;
		c->state = C_DRAINING;
	}
}

/* The slot a new connection may take now: a free one, else the oldest that has had
 * EVICT_GRACE_NS and still not sent its request (closed, counted in evicted), or one that is
 * only being drained, else the oldest still not taking its reply REPLY_GRACE_NS after it
 * started (a client that never reads would otherwise hold its slot for timeout_ms, and
 * max_clients of them every slot: a scraper takes a page in milliseconds); NULL when none
 * may be taken yet, and *wait_until says when one may. */
static struct client *free_slot(struct metrics_http *h, __u64 now, __u64 *wait_until, bool take)
{
	struct client *oldest = NULL, *stuck = NULL;
	unsigned int i;

	for (i = 0; i < h->max_clients; i++) {
		struct client *c = &h->clients[i];

		if (c->state == C_FREE)
			return c;
		if ((c->state == C_READING || c->state == C_DRAINING) &&
		    (!oldest || c->accepted_ns < oldest->accepted_ns))
			oldest = c;
		if (c->state == C_REPLYING && (!stuck || c->replying_ns < stuck->replying_ns))
			stuck = c;
	}
	if (oldest && oldest->state == C_READING && now < oldest->accepted_ns + EVICT_GRACE_NS) {
		if (wait_until && oldest->accepted_ns + EVICT_GRACE_NS < *wait_until)
			*wait_until = oldest->accepted_ns + EVICT_GRACE_NS;
		oldest = NULL; /* not yet: a stuck reply may go first */
	}
	if (!oldest && stuck && now < stuck->replying_ns + REPLY_GRACE_NS) {
		if (wait_until && stuck->replying_ns + REPLY_GRACE_NS < *wait_until)
			*wait_until = stuck->replying_ns + REPLY_GRACE_NS;
		return NULL;
	}
	if (!oldest)
		oldest = stuck;
	if (!oldest)
		return NULL;
	if (take) {
		if (oldest->state != C_DRAINING)
			count(&h->counts.evicted);
		client__close(h, oldest);
	}
	return oldest;
}

/* Connections while there is a slot for them; the others wait in the listen backlog. */
static void accept_some(struct metrics_http *h, __u64 now)
{
	struct client *c;
	unsigned int k;
	int fd;

	for (k = 0; k < ACCEPTS_PER_TURN && free_slot(h, now, NULL, false); k++) {
		fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 &&
		    (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			/* the connection stays in the backlog and the socket readable: without a
			 * pause the thread would spin on it */
			h->accept_after_ns = now + ACCEPT_PAUSE_NS;
			return;
		}
		if (fd < 0)
			return; /* EAGAIN, or a connection reset before we took it */
		count(&h->counts.accepted);
		c = free_slot(h, now, NULL, true);
		*c = (struct client){ .fd = fd,
				      .state = C_READING,
				      .accepted_ns = now,
				      .deadline_ns = now + h->timeout_ns };
	}
}

static void *serve(void *arg)
{
	struct metrics_http *h = arg;
	unsigned int i, n;
	__u64 now, next;
	int ms;

	for (;;) {
		now = xpu_now_ns();
		next = now + POLL_MAX_MS * 1000000ull;
		h->pfd[0] = (struct pollfd){ .fd = h->wake_fd, .events = POLLIN };
		/* no slot to take: the listening socket is not watched (its backlog holds the
		 * new connections) until one is free or may be evicted */
		h->pfd[1] =
			(struct pollfd){ .fd = h->listen_fd,
					 .events = now >= h->accept_after_ns &&
								   free_slot(h, now, &next, false) ?
							   POLLIN :
							   0 };
		if (now < h->accept_after_ns && h->accept_after_ns < next)
			next = h->accept_after_ns;
		for (i = 0, n = 2; i < h->max_clients; i++) {
			struct client *c = &h->clients[i];

			h->pfd[n] = (struct pollfd){ .fd = -1 };
			if (c->state != C_FREE) {
				h->pfd[n].fd = c->fd;
				h->pfd[n].events = c->state == C_REPLYING ? POLLOUT : POLLIN;
				if (c->deadline_ns < next)
					next = c->deadline_ns;
			}
			n++;
		}
		ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
		if (poll(h->pfd, n, ms) < 0 && errno != EINTR)
			usleep(10000); /* cannot be: the arguments are ours. Do not spin on it. */
		if (h->pfd[0].revents)
			break;
		now = xpu_now_ns();
		for (i = 0; i < h->max_clients; i++) {
			struct client *c = &h->clients[i];
			short ev = h->pfd[2 + i].revents;

			if (c->state == C_FREE || h->pfd[2 + i].fd != c->fd)
				continue;
			if (c->state == C_REPLYING && (ev & (POLLOUT | POLLERR | POLLHUP)))
				client__write(h, c);
			else if (c->state != C_REPLYING && (ev & (POLLIN | POLLERR | POLLHUP)))
				client__read(h, c, now);
			if (c->state != C_FREE && now >= c->deadline_ns) {
				if (c->state != C_DRAINING)
					count(&h->counts.timed_out);
				client__close(h, c);
			}
		}
		if (h->pfd[1].revents & POLLIN)
			accept_some(h, now);
	}
	return NULL;
}

struct metrics_http *metrics_http__start(const struct metrics_listen *l, unsigned int max_clients,
					 __u64 timeout_ns, char *why, size_t why_len)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	sigset_t all, old;
	int one = 1, err;
	unsigned int i;

	if (!h) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	h->listen_fd = h->wake_fd = -1;
	h->max_clients = max_clients;
	h->timeout_ns = timeout_ns;
	pthread_mutex_init(&h->lock, NULL);
	h->clients = calloc(max_clients, sizeof(*h->clients));
	h->pfd = calloc(max_clients + 2, sizeof(*h->pfd));
	if (!h->clients || !h->pfd) {
		err = ENOMEM;
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	for (i = 0; i < max_clients; i++)
		h->clients[i].fd = -1;
	h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h->listen_fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->wake_fd < 0 || h->listen_fd < 0) {
		err = errno;
		snprintf(why, why_len, "unable to make a socket: %s", strerror(err));
		goto fail;
	}
	/* a restarted sink binds again at once, past the old connections' TIME_WAIT */
	setsockopt(h->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->listen_fd, (const struct sockaddr *)&l->addr, l->len) ||
	    listen(h->listen_fd, BACKLOG)) {
		err = errno;
		snprintf(why, why_len, "unable to listen on %s: %s", l->text, strerror(err));
		goto fail;
	}
	/* the actor's signals (SIGTERM, SIGUSR1) are for its main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&h->thread, NULL, serve, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		snprintf(why, why_len, "unable to start the HTTP thread: %s", strerror(err));
		goto fail;
	}
	h->started = true;
	return h;
fail:
	metrics_http__stop(h);
	errno = err;
	return NULL;
}

int metrics_http__publish(struct metrics_http *h, const char *page, size_t len)
{
	struct page *p = malloc(sizeof(*p) + len), *old;

	if (!p)
		return -ENOMEM;
	p->refs = 1;
	p->len = len;
	memcpy(p->body, page, len);
	pthread_mutex_lock(&h->lock);
	old = h->page;
	h->page = p;
	pthread_mutex_unlock(&h->lock);
	page__put(h, old);
	return 0;
}

void metrics_http__counts(const struct metrics_http *h, struct metrics_http_counts *c)
{
	const __u64 *from = (const __u64 *)&h->counts;
	__u64 *to = (__u64 *)c;
	size_t i;

	for (i = 0; i < sizeof(*c) / sizeof(__u64); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}

void metrics_http__stop(struct metrics_http *h)
{
	__u64 one = 1;
	unsigned int i;

	if (!h)
		return;
	if (h->started) {
		/* the thread wakes on it at its next poll, at once */
		if (write(h->wake_fd, &one, sizeof(one)) != sizeof(one))
			pthread_cancel(h->thread); /* cannot be: a fresh eventfd takes one write */
		pthread_join(h->thread, NULL);
	}
	for (i = 0; h->clients && i < h->max_clients; i++)
		if (h->clients[i].state != C_FREE)
			client__close(h, &h->clients[i]);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	page__put(h, h->page);
	pthread_mutex_destroy(&h->lock);
	free(h->clients);
	free(h->pfd);
	free(h);
}
