/* SPDX-License-Identifier: MIT */
#include "shm/inproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shm/ring.h"
#include "xpusup/event.h"

static int say(char *why, size_t why_len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int say(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on sock until deadline (ms, CLOCK_MONOTONIC). 0 or -ETIMEDOUT/-errno. */
static int wait_for(int sock, short events, long long deadline)
{
	struct pollfd p = { .fd = sock, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return p.revents & (events | POLLHUP | POLLERR) ? 0 : -EIO;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Receive the reply and, with status 0, exactly one fd. */
static int recv_reply(int sock, struct xpu_inproc_reply *reply, int *fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = reply, .iov_len = sizeof(*reply) };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && *fd < 0)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	}
	if (n == 0)
		return -ECONNRESET;
	if ((size_t)n != sizeof(*reply) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPROTO;
	return 0;
}

int inproc__connect(__u32 kind, int timeout_ms, int *sock_out, struct ring **ring_out,
		    __u32 *options, char *why, size_t why_len)
{
	const char *dir = getenv(XPU_INPROC_ENV);
	long long deadline = now_ms() + timeout_ms;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct xpu_inproc_hello hello = {
		.magic = XPU_INPROC_MAGIC,
		.version = XPU_INPROC_VERSION,
		.pid = (__u32)getpid(),
		.kind = kind,
	};
	struct xpu_inproc_reply reply;
	struct ring *ring;
	int sock, fd = -1, err;

	*sock_out = -1;
	*ring_out = NULL;
	if (!dir || !*dir)
		return say(why, why_len, -ENOENT, "no session (%s is not set)", XPU_INPROC_ENV);
	if (dir[0] != '/')
		return say(why, why_len, -EINVAL, "%s=%s is not an absolute path", XPU_INPROC_ENV,
			   dir);
	if (snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, XPU_INPROC_SOCK) >=
	    (int)sizeof(addr.sun_path))
		return say(why, why_len, -ENAMETOOLONG, "session path %s is too long", dir);
	prctl(PR_GET_NAME, hello.comm);

	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return say(why, why_len, -errno, "socket: %s", strerror(errno));
	/* A Unix socket connects at once or fails at once (EAGAIN: the backlog is full, the
	 * actor is not accepting); there is no connection in progress to wait for. */
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		say(why, why_len, err, "no session at %s: %s", addr.sun_path, strerror(-err));
		goto err_close;
	}
	if (send(sock, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(hello)) {
		err = -errno;
		say(why, why_len, err, "unable to greet the session: %s", strerror(-err));
		goto err_close;
	}
	err = wait_for(sock, POLLIN, deadline);
	if (!err)
		err = recv_reply(sock, &reply, &fd);
	if (err) {
		say(why, why_len, err, "the session did not answer in %d ms: %s", timeout_ms,
		    strerror(-err));
		goto err_fd;
	}
	if (reply.magic != XPU_INPROC_MAGIC || reply.version != XPU_INPROC_VERSION) {
		err = say(why, why_len, -EPROTO, "the session speaks another protocol");
		goto err_fd;
	}
	if (reply.status) {
		err = say(why, why_len, -(int)reply.status, "the session refused: %s",
			  strerror((int)reply.status));
		goto err_fd;
	}
	if (fd < 0) {
		err = say(why, why_len, -EPROTO, "the session sent no ring");
		goto err_close;
	}
	ring = ring__open_fd(fd, RING_PRODUCER);
	if (!ring) {
		struct xpu_ring_hdr h;

		err = -errno;
		/* a library of another build than the session's: say which layouts differ */
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
		    h.magic == XPU_RING_MAGIC && h.event_abi != XPU_EVENT_ABI)
			say(why, why_len, err,
			    "the session's ring holds records of event ABI %u, this library writes "
			    "ABI %u: use the library of the xpusup that runs the session",
			    h.event_abi, XPU_EVENT_ABI);
		else
			say(why, why_len, err, "unable to map the ring: %s", strerror(-err));
		goto err_fd;
	}
	close(fd); /* the handle holds its own duplicate */
	*sock_out = sock;
	*ring_out = ring;
	if (options)
		*options = reply.options;
	return 0;

err_fd:
	if (fd >= 0)
		close(fd);
err_close:
	close(sock);
	return err;
}

int inproc__send_stats(int sock, const __u64 *values, unsigned int n)
{
	struct xpu_inproc_stats m = { .magic = XPU_INPROC_MAGIC,
				      .version = XPU_INPROC_VERSION,
				      .type = XPU_INPROC_MSG_STATS };

	if (n > XPU_INPROC_STATS_N)
		return -EINVAL;
	memcpy(m.values, values, n * sizeof(*values));
	if (send(sock, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		return errno ? -errno : -EIO;
	return 0;
}

int inproc__send_reply(int sock, const struct xpu_inproc_reply *reply, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = { .iov_base = (void *)reply, .iov_len = sizeof(*reply) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof(control.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(*reply))
		return errno ? -errno : -EIO;
	return 0;
}

int inproc__create_ring(__u64 capacity, __u32 max_record)
{
	size_t len = XPU_RING_HDR_SIZE + (size_t)capacity;
	void *map;
	int fd, err;

	if (capacity < XPU_RING_MIN_CAPACITY || capacity > XPU_RING_MAX_CAPACITY ||
	    (capacity & (capacity - 1)))
		return -EINVAL;
	fd = memfd_create("xpusup-inproc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len)) {
		err = -errno;
		goto err_close;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	err = ring__format_mem(map, len, capacity, max_record);
	munmap(map, len);
	if (err)
		goto err_close;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return err;
}
