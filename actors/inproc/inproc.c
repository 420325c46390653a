/* SPDX-License-Identifier: MIT */
/*
 * xpusup-inproc and xpusup-cupti: the in-process source (kind = inproc, kind = cupti,
 * docs/inproc.md). One source file, built twice: INPROC_KIND_CUPTI selects the cupti build.
 *
 * Listens on SESSION/inproc.sock for the libraries loaded into profiled processes (the
 * annotate library, the CUPTI injection library). Each client says hello and gets a ring of
 * its own: a sealed memfd this actor created and formatted, passed back in SCM_RIGHTS. The
 * client produces into it; this actor is its consumer and copies every record, validated by
 * ring__consume, into the shard ring of the client's pid.
 *
 * Both kinds serve annotate clients. Only kind = cupti serves CUPTI clients: its section says
 * what they record (activities, launch_stacks), and the reply carries that in options; an
 * inproc source was not configured for GPU activity and refuses them (EPROTONOSUPPORT).
 *
 * One epoll loop: the listening socket and the clients' sockets wake it (hello, EOF), and
 * every DRAIN_MS it drains every client ring in batches, so no syscall is made per record.
 * A client's socket closing (exit, exec, crash) ends it: what is left in its ring is drained,
 * drops the client never got to report in-band are sent as LOSS records, and the ring is
 * freed. Nothing a client does can block or crash this actor: sockets are non-blocking, the
 * memfd's size is sealed, and every record is copied out before it is checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/actor.h"
#include "actors/inproc/inproc_options.h"
#include "common/config.h"
#include "common/topology.h"
#include "shm/inproc.h"
#include "common/status.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#ifdef INPROC_KIND_CUPTI
#define PROG "xpusup-cupti"
#define KIND "cupti"
#else
#define PROG "xpusup-inproc"
#define KIND "inproc"
#endif
#define DRAIN_MS 10 /* the longest a flushed record waits in a client ring */
#define BUSY_MS 1 /* the wait after a round that moved records */
#define DRAIN_BATCH 4096 /* records per ring__consume call */
#define DRAIN_BUDGET 65536 /* records per client per round, so one client cannot starve */
#define MAX_EVENTS 64

enum counter {
	C_CLIENTS,
	C_CLIENTS_TOTAL,
	C_RECORDS_OUT,
	C_RING_FULL,
	C_CLIENT_DROPPED,
	C_CORRUPT,
	C_REFUSED,
	C_CUPTI_DROPPED,
	C_LOSSY_PROCESSES,
	C_BAD_MESSAGES,
	C_LIB, /* the CUPTI libraries' counters (enum xpu_cupti_stat), from here on */
	C_N = C_LIB + XPU_CUPTI_STAT_N,
};

static const char *const counter_names[C_N] = {
	[C_CLIENTS] = "clients",
	[C_CLIENTS_TOTAL] = "clients_total",
	[C_RECORDS_OUT] = "records_out",
	[C_RING_FULL] = "ring_full",
	[C_CLIENT_DROPPED] = "client_dropped",
	[C_CORRUPT] = "corrupt",
	[C_REFUSED] = "refused",
	[C_CUPTI_DROPPED] = "cupti_dropped",
	[C_LOSSY_PROCESSES] = "lossy_processes",
	[C_BAD_MESSAGES] = "bad_messages",
	[C_LIB + XPU_CUPTI_STAT_BUFFERS_ASKED] = "lib_buffers_asked",
	[C_LIB + XPU_CUPTI_STAT_BUFFERS_MADE] = "lib_buffers_made",
	[C_LIB + XPU_CUPTI_STAT_BUFFERS_TWICE] = "lib_buffers_twice",
	[C_LIB + XPU_CUPTI_STAT_STACKS] = "lib_stacks",
	[C_LIB + XPU_CUPTI_STAT_STACKS_TRUNCATED] = "lib_stacks_truncated",
	[C_LIB + XPU_CUPTI_STAT_STACKS_FAILED] = "lib_stacks_failed",
	[C_LIB + XPU_CUPTI_STAT_RULE_MISSES] = "lib_stack_rule_misses",
	[C_LIB + XPU_CUPTI_STAT_PY_STACKS] = "lib_python_stacks",
	[C_LIB + XPU_CUPTI_STAT_CALLBACKS_REFUSED] = "lib_callbacks_refused",
	[C_LIB + XPU_CUPTI_STAT_BUFFERS_DIRTY] = "lib_buffers_dirty",
	[C_LIB + XPU_CUPTI_STAT_BUFFERS_REFUSED] = "lib_buffers_refused",
};

struct client {
	struct client *prev, *next;
	int sock;
	__u32 pid; /* from SO_PEERCRED: the only pid its records may carry */
	__u32 kind;
	struct ring *ring; /* NULL until the hello is accepted */
	__u64 records;
	__u64 loss_seen[XPU_LOSS_CAUSE_MAX]; /* drops the client reported in-band */
	__u64 corrupt_reported; /* the ring's corrupt count already added to C_CORRUPT */
	bool lossy; /* counted in C_LOSSY_PROCESSES */
	__u64 lib[XPU_CUPTI_STAT_N]; /* a CUPTI client's totals, as its last stats message said */
	char comm[XPU_COMM_LEN + 1];
};

struct inproc {
	struct actor *a;
	unsigned long long ring_kib, max_processes;
	__u32 cupti_options; /* reply.options for CUPTI clients (kind = cupti only) */
	struct ring *rings[CONF_MAX_SHARDS];
	__u32 shards;
	int listen_fd, epoll_fd;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct client *clients; /* every connection, hello pending or not */
	unsigned long long n_clients, n_pending;
	int counter[C_N];
	__u64 count[C_N];
};

static int load_keys(struct inproc *p)
{
	struct inproc_options o;
	int err;

	err = conf_actor__options(p->a->self, &o, sizeof(o));
	p->ring_kib = o.ring_kib;
	p->max_processes = o.max_processes;
#ifdef INPROC_KIND_CUPTI
	p->cupti_options = XPU_INPROC_OPT_SET | o.activities;
	if (o.launch_stacks == LAUNCH_STACKS_INPROC)
		p->cupti_options |= XPU_CUPTI_OPT_LAUNCH_INPROC;
	else if (o.launch_stacks == LAUNCH_STACKS_MARKER)
		p->cupti_options |= XPU_CUPTI_OPT_LAUNCH_STACKS;
	if (o.api_queries)
		p->cupti_options |= XPU_CUPTI_OPT_API_QUERIES;
#endif
	return err ? -EINVAL : 0;
}

/* A process lost records (its ring's drops, or CUPTI's): say so in the status problem line,
 * once per process, so `xpusup status` shows it while the session runs. */
static void client__lost(struct inproc *p, struct client *c)
{
	unsigned long long n;

	if (c->lossy)
		return;
	c->lossy = true;
	n = ++p->count[C_LOSSY_PROCESSES];
	/* under XPU_STATUS_PROBLEM_LEN: the counts are in the counters and the log */
	actor__problem(p->a, "records lost in %llu process%s (latest pid %u %s); see the log", n,
		       n == 1 ? "" : "es", c->pid, c->comm);
}

/* Create the socket; a restarted actor finds its predecessor's file and replaces it. */
static int listen_socket(struct inproc *p)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, err;

	if (snprintf(p->sock_path, sizeof(p->sock_path), "%s/%s", p->a->dir, XPU_INPROC_SOCK) >=
	    (int)sizeof(p->sock_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, p->sock_path, sizeof(addr.sun_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (unlinkat(p->a->dirfd, XPU_INPROC_SOCK, 0) && errno != ENOENT) {
		err = -errno;
		goto err_close;
	}
	/* 0600 from the start: there is no moment when another user could connect */
	old = umask(077);
	err = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old);
	if (err)
		goto err_close;
	if (listen(fd, 128)) {
		err = -errno;
		goto err_unlink;
	}
	p->listen_fd = fd;
	return 0;

err_unlink:
	unlinkat(p->a->dirfd, XPU_INPROC_SOCK, 0);
err_close:
	close(fd);
	return err;
}

struct drain_ctx {
	struct inproc *p;
	struct client *c;
};

/* One record of client c, already copied out of its ring and validated by ring__consume. */
static int drain__record(const void *rec, __u32 size, void *arg)
{
	struct drain_ctx *d = arg;
	const struct xpu_rec *h = rec;
	struct client *c = d->c;
	struct inproc *p = d->p;

	/* A process speaks for itself only: a record naming another pid is refused, so a
	 * client cannot pose as another process (or route into another's shard). */
	if (h->pid != c->pid) {
		p->count[C_CORRUPT]++;
		return 0;
	}
	if (h->type == XPU_REC_LOSS) {
		const struct xpu_loss *l = rec;

		c->loss_seen[l->cause] += l->count; /* cause was checked by the validation */
		if (l->cause == XPU_LOSS_CUPTI && c->kind == XPU_INPROC_CUPTI)
			p->count[C_CUPTI_DROPPED] += l->count;
		if (l->count)
			client__lost(p, c);
	}
	if (ring__write(p->rings[xpu_shard_of(c->pid, p->shards)], rec, size)) {
		p->count[C_RING_FULL]++;
	} else {
		p->count[C_RECORDS_OUT]++;
		c->records++;
	}
	return 0;
}

/* Move up to about budget records of c into the shard rings; returns how many were read. */
static unsigned int client__drain(struct inproc *p, struct client *c, unsigned int budget)
{
	struct drain_ctx d = { .p = p, .c = c };
	struct ring_stats st;
	unsigned int done = 0;
	int n;

	if (!c->ring)
		return 0;
	do {
		n = ring__consume(c->ring, drain__record, &d, DRAIN_BATCH);
		if (n > 0)
			done += (unsigned int)n;
	} while (n == DRAIN_BATCH && done < budget);
	ring__stats(c->ring, &st);
	p->count[C_CORRUPT] += st.corrupt - c->corrupt_reported;
	c->corrupt_reported = st.corrupt;
	return done;
}

/* The client's drops that no in-band LOSS record reported (it exited while its ring was
 * still full), as LOSS records of its own pid. Returns the ring's drops in all. */
static __u64 client__report_losses(struct inproc *p, struct client *c)
{
	_Alignas(8) unsigned char rec[sizeof(struct xpu_loss)];
	struct ring_stats st;
	__u64 lost[XPU_LOSS_CAUSE_MAX] = { 0 }, now = xpu_now_ns();
	__u32 cause;

	ring__stats(c->ring, &st);
	lost[XPU_LOSS_RING_FULL] = st.lost_full;
	lost[XPU_LOSS_TOO_BIG] = st.lost_too_big;
	p->count[C_CLIENT_DROPPED] += st.lost_full + st.lost_too_big;
	for (cause = XPU_LOSS_RING_FULL; cause <= XPU_LOSS_TOO_BIG; cause++) {
		if (lost[cause] <= c->loss_seen[cause])
			continue;
		if (xpu_loss__build(rec, sizeof(rec), now, c->pid, cause,
				    lost[cause] - c->loss_seen[cause], now) < 0)
			continue;
		if (ring__write(p->rings[xpu_shard_of(c->pid, p->shards)], rec, sizeof(rec)))
			p->count[C_RING_FULL]++;
		else
			p->count[C_RECORDS_OUT]++;
	}
	return st.lost_full + st.lost_too_big;
}

/* The connection is over: drain what the client left, account for its drops, free it. */
static void client__close(struct inproc *p, struct client *c)
{
	__u64 ring_lost, cupti_lost;

	if (c->ring) {
		client__drain(p, c, ~0u);
		ring_lost = client__report_losses(p, c);
		cupti_lost = c->loss_seen[XPU_LOSS_CUPTI];
		ring__close(c->ring);
		p->n_clients--;
		/* The process's own account, one line when it goes: what it lost is told
		 * where the user looks for that process, not only in the totals. */
		fprintf(stderr,
			PROG ": pid %u (%s): %llu records, %llu dropped by the ring, %llu dropped "
			     "by CUPTI\n",
			c->pid, c->comm, (unsigned long long)c->records,
			(unsigned long long)ring_lost, (unsigned long long)cupti_lost);
		if (ring_lost || cupti_lost)
			client__lost(p, c);
	} else {
		p->n_pending--;
	}
	epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->sock, NULL);
	close(c->sock);
	if (c->prev)
		c->prev->next = c->next;
	else
		p->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

/* Answer a hello: a ring, or a refusal. Returns 0 when the client is attached. */
static int client__hello(struct inproc *p, struct client *c)
{
	struct xpu_inproc_reply reply = { .magic = XPU_INPROC_MAGIC,
					  .version = XPU_INPROC_VERSION };
	struct xpu_inproc_hello hello;
	__u64 capacity = p->ring_kib * 1024;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	ssize_t n;
	int fd = -1;

	n = recv(c->sock, &hello, sizeof(hello), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -EAGAIN;
	if (n <= 0)
		return -ECONNRESET;
	if ((size_t)n != sizeof(hello) || hello.magic != XPU_INPROC_MAGIC ||
	    hello.version != XPU_INPROC_VERSION || !hello.kind ||
	    hello.kind >= XPU_INPROC_KIND_MAX) {
		reply.status = EPROTO;
	} else if (getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		   (__u32)cred.pid != hello.pid) {
		reply.status = EPERM; /* in another pid namespace, or lying */
	} else if (hello.kind == XPU_INPROC_CUPTI && !p->cupti_options) {
		reply.status = EPROTONOSUPPORT; /* kind = inproc: not configured for GPU work */
	} else if (p->n_clients >= p->max_processes) {
		reply.status = EMFILE;
	} else {
		fd = inproc__create_ring(capacity, 0);
		if (fd < 0)
			reply.status = (__u32)-fd;
	}
	if (!reply.status) {
		c->ring = ring__open_fd(fd, RING_CONSUMER);
		if (!c->ring)
			reply.status = (__u32)errno;
	}
	if (!reply.status) {
		struct ring_stats st;

		ring__stats(c->ring, &st);
		reply.capacity = capacity;
		reply.max_record = st.max_record;
		/* annotate clients take no options: 0 leaves them their defaults */
		reply.options = hello.kind == XPU_INPROC_CUPTI ? p->cupti_options : 0;
		if (inproc__send_reply(c->sock, &reply, fd)) {
			ring__close(c->ring);
			c->ring = NULL;
			reply.status = EPIPE;
		}
	} else {
		inproc__send_reply(c->sock, &reply, -1);
	}
	if (fd >= 0)
		close(fd); /* the ring handle and the client hold their own */
	if (reply.status) {
		p->count[C_REFUSED]++;
		if (reply.status == EPROTONOSUPPORT)
			fprintf(stderr,
				PROG ": refused pid %u: a CUPTI client needs a source of kind = "
				     "cupti\n",
				hello.pid);
		else
			fprintf(stderr, PROG ": refused pid %u: %s\n", hello.pid,
				strerror(reply.status));
		return -(int)reply.status;
	}
	c->pid = hello.pid;
	c->kind = hello.kind;
	memcpy(c->comm, hello.comm, XPU_COMM_LEN);
	c->comm[XPU_COMM_LEN] = '\0';
	p->n_pending--;
	p->n_clients++;
	p->count[C_CLIENTS_TOTAL]++;
	return 0;
}

/* A stats message (shm/inproc.h): the client's running totals. The actor's counters are the
 * sum over its clients, those gone included, so each message adds what grew since the last.
 * A total that went down, a message of another size, type or kind: counted, not taken. */
static void client__stats(struct inproc *p, struct client *c, const struct xpu_inproc_stats *m,
			  size_t len)
{
	unsigned int i;

	if (len != sizeof(*m) || m->magic != XPU_INPROC_MAGIC || m->version != XPU_INPROC_VERSION ||
	    m->type != XPU_INPROC_MSG_STATS || c->kind != XPU_INPROC_CUPTI) {
		p->count[C_BAD_MESSAGES]++;
		return;
	}
	for (i = 0; i < XPU_CUPTI_STAT_N; i++)
		if (m->values[i] < c->lib[i]) {
			p->count[C_BAD_MESSAGES]++;
			return;
		}
	for (i = 0; i < XPU_CUPTI_STAT_N; i++) {
		p->count[C_LIB + i] += m->values[i] - c->lib[i];
		c->lib[i] = m->values[i];
	}
}

static void client__event(struct inproc *p, struct client *c, __u32 events)
{
	struct xpu_inproc_stats m;
	unsigned int i;
	int err;

	if (!c->ring) {
		err = client__hello(p, c);
		if (err && err != -EAGAIN)
			client__close(p, c);
		return;
	}
	/* An attached client sends only its counters (a CUPTI library); anything else is
	 * counted and discarded. Its EOF (or an error) is the end of the process. */
	if (events & EPOLLIN) {
		/* all that is queued, so a last message before the EOF (the totals at exit) is
		 * read before a hang-up closes it; bounded, so one client cannot hold the loop */
		for (i = 0; i < 64; i++) {
			ssize_t n = recv(c->sock, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				client__close(p, c);
				return;
			}
			if (n < 0)
				break;
			client__stats(p, c, &m, (size_t)n);
		}
		if (i == 64) /* more queued: read on at the next wake, before the hang-up */
			return;
	}
	if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
		client__close(p, c);
}

static void accept_clients(struct inproc *p)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct client *c;
	int fd;

	for (;;) {
		fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or out of fds: the backlog waits for the next round */
		/* hellos in flight are bounded too, so connections alone cannot exhaust fds */
		c = p->n_pending >= p->max_processes ? NULL : calloc(1, sizeof(*c));
		if (!c) {
			p->count[C_REFUSED]++;
			close(fd);
			continue;
		}
		c->sock = fd;
		ev.data.ptr = c;
		if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
			p->count[C_REFUSED]++;
			close(fd);
			free(c);
			continue;
		}
		c->next = p->clients;
		if (p->clients)
			p->clients->prev = c;
		p->clients = c;
		p->n_pending++;
	}
}

static void publish(struct inproc *p)
{
	unsigned int i;

	p->count[C_CLIENTS] = p->n_clients;
	for (i = 0; i < p->shards; i++)
		ring__flush(p->rings[i]);
	for (i = 0; i < C_N; i++)
		actor__count(p->a, p->counter[i], p->count[i]);
}

/* Returns the records moved. */
static unsigned long drain_all(struct inproc *p)
{
	unsigned long moved = 0;
	struct client *c;

	for (c = p->clients; c; c = c->next)
		moved += client__drain(p, c, DRAIN_BUDGET);
	return moved;
}

int main(int argc, char **argv)
{
	struct inproc p = { .listen_fd = -1, .epoll_fd = -1 };
	struct epoll_event ev = { .events = EPOLLIN }, events[MAX_EVENTS];
	int code = ACTOR_EXIT_PERMANENT, n, i, err;
	bool busy = false;
	char what[CONF_VALUE_MAX + 128] = "";
	struct actor a;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	p.a = &a;
	/* the supervisor runs xpusup-KIND: another kind means a mislaid program */
	if (strcmp(a.self->kind, KIND)) {
		fprintf(stderr,
			PROG ": unable to start: [%s] is of kind %s, this program serves %s\n",
			a.self->section, a.self->kind, KIND);
		goto out;
	}
	if (load_keys(&p)) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a.self->section);
		goto out;
	}
	p.shards = a.conf->shards;
	if ((err = actor__open_rings(&a, p.rings))) {
		code = actor__rings_exit(err);
		goto out;
	}
	code = ACTOR_EXIT_RESTART;
	for (i = 0; i < C_N; i++) {
		/* CUPTI's drops and libraries are only ever counted by the cupti kind */
		if ((i == C_CUPTI_DROPPED || i >= C_LIB) && !p.cupti_options)
			p.counter[i] = -1;
		else
			p.counter[i] = actor__counter(&a, counter_names[i]);
	}
	p.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (p.epoll_fd < 0) {
		fprintf(stderr, PROG ": unable to create an epoll set: %s\n", strerror(errno));
		goto out;
	}
	err = listen_socket(&p);
	if (err) {
		fprintf(stderr, PROG ": unable to listen on %s: %s\n", p.sock_path, strerror(-err));
		goto out;
	}
	ev.data.ptr = NULL; /* NULL: the listening socket; clients have their struct */
	if (epoll_ctl(p.epoll_fd, EPOLL_CTL_ADD, p.listen_fd, &ev)) {
		fprintf(stderr, PROG ": unable to watch %s: %s\n", p.sock_path, strerror(errno));
		goto out;
	}
	if (p.cupti_options)
		snprintf(what, sizeof(what),
			 "; CUPTI activities: %s, launch stacks: %s, API queries: %s",
			 conf_actor__get(a.self, "activities"),
			 conf_actor__get(a.self, "launch_stacks"),
			 conf_actor__get(a.self, "api_queries"));
	fprintf(stderr, PROG ": listening on %s (rings of %llu KiB, up to %llu processes%s)\n",
		p.sock_path, p.ring_kib, p.max_processes, what);
	actor__ready(&a);

	while (!actor__stopping(&a)) {
		/* A client that just produced is likely to go on: drain it again soon, so a
		 * burst needs less of its ring. An idle actor wakes every DRAIN_MS. */
		n = epoll_wait(p.epoll_fd, events, MAX_EVENTS, busy ? BUSY_MS : DRAIN_MS);
		for (i = 0; i < n; i++) {
			if (!events[i].data.ptr)
				accept_clients(&p);
			else
				client__event(&p, events[i].data.ptr, events[i].events);
		}
		busy = drain_all(&p) > 0;
		publish(&p);
		actor__beat(&a);
	}
	/* SIGTERM: take no new clients, pass on what every ring holds. The clients' libraries
	 * go on producing into rings nobody reads: they drop and count, never block. */
	while (p.clients)
		client__close(&p, p.clients);
	publish(&p);
	code = 0;
out:
	while (p.clients)
		client__close(&p, p.clients);
	if (p.listen_fd >= 0) {
		close(p.listen_fd);
		unlinkat(a.dirfd, XPU_INPROC_SOCK, 0); /* a stopped session leaves no socket */
	}
	if (p.epoll_fd >= 0)
		close(p.epoll_fd);
	for (i = 0; i < CONF_MAX_SHARDS; i++)
		ring__close(p.rings[i]);
	actor__fini(&a);
	return code;
}
