// SPDX-License-Identifier: MIT
/*
 * Sink output files with io_uring: two 1 MiB buffers, one filling while the other is in the
 * kernel; one write submitted per full buffer, so a file costs a system call per MiB. The two
 * are one 2 MiB block, a huge page where the kernel gives one: the CPU of the process for a
 * line of 225 bytes written directly, its copy included, went from 23.5 to 16.5 ns here
 * (docs/performance.md).
 * Short writes are resubmitted for the rest.
 *
 * Where the file system takes it, the file is opened O_DIRECT: the full buffers (aligned, 1
 * MiB at offsets of whole MiB) go from our memory to the disk without the page cache. A
 * buffered write costs the CPU about 1.5 ns a byte here (copying into the page cache, then
 * writeback), which for the timeline was more than its own formatting; direct, nearly
 * nothing (docs/performance.md). The last, partial buffer is written buffered (O_DIRECT
 * cleared with fcntl once nothing is in flight), as is anything after a direct write the file
 * system refused (EINVAL) or cut short.
 */
#include "actors/sink/out.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>

#include "common/big_alloc.h"
#include "common/paths.h"

#define OUT_BUF (1u << 20)
#define OUT_ALIGN 4096u /* O_DIRECT: buffers, sizes and offsets are multiples of it */
#define OUT_PATH_MAX 4096

struct out {
	struct io_uring ring;
	int fd;
	char path[OUT_PATH_MAX];
	char partial[OUT_PATH_MAX + 16];
	char *buf[2];
	size_t fill; /* bytes in buf[cur] */
	int cur;
	bool in_flight; /* buf[!cur] is being written */
	bool direct; /* fd is O_DIRECT */
	size_t flight_len, flight_done;
	__u64 flight_off;
	__u64 off; /* file offset of buf[cur]'s first byte */
	size_t bytes;
	int err;
	char why[OUT_PATH_MAX + 96];
};

static int fail(struct out *o, int err, const char *what)
{
	if (!o->err) {
		o->err = err;
		snprintf(o->why, sizeof(o->why), "unable to %s %s: %s", what, o->path,
			 strerror(-err));
	}
	return o->err;
}

/* 0, or the sticky error with nothing in flight: a write that did not reach the kernel
 * must not be waited for, or wait_flight would wait for ever. */
static int submit(struct out *o)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&o->ring);
	int ret;

	/* one write in flight at most, and the queue has room for it */
	io_uring_prep_write(sqe, o->fd, o->buf[!o->cur] + o->flight_done,
			    (unsigned int)(o->flight_len - o->flight_done),
			    o->flight_off + o->flight_done);
	do
		ret = io_uring_submit(&o->ring);
	while (ret == -EINTR);
	if (ret >= 0)
		return 0;
	o->in_flight = false;
	return fail(o, ret, "write");
}

/* Write through the page cache from now on. 0, or -errno (then the file stays direct). */
static int buffered(struct out *o)
{
	int flags = fcntl(o->fd, F_GETFL);

	if (flags < 0 || fcntl(o->fd, F_SETFL, flags & ~O_DIRECT))
		return -errno;
	o->direct = false;
	return 0;
}

/* Wait for the write in flight to be whole (resubmitting after a short write). */
static int wait_flight(struct out *o)
{
	struct io_uring_cqe *cqe;
	int res, err;

	while (o->in_flight) {
		err = io_uring_wait_cqe(&o->ring, &cqe);
		if (err == -EINTR)
			continue;
		if (err) {
			o->in_flight = false;
			return fail(o, err, "write");
		}
		res = cqe->res;
		io_uring_cqe_seen(&o->ring, cqe);
		if ((res == -EINVAL || (res > 0 && (size_t)res + o->flight_done < o->flight_len)) &&
		    o->direct && !buffered(o)) {
			/* refused or cut short direct: the rest goes through the page cache */
			if (res > 0)
				o->flight_done += (size_t)res;
			submit(o);
			continue;
		}
		if (res < 0) {
			o->in_flight = false;
			return fail(o, res, "write");
		}
		if (res == 0) {
			o->in_flight = false;
			return fail(o, -EIO, "write");
		}
		o->flight_done += (size_t)res;
		if (o->flight_done < o->flight_len)
			submit(o); /* on failure: nothing in flight, the error stuck */
		else
			o->in_flight = false;
	}
	return o->err;
}

/* Hand the filling buffer to the kernel and start filling the other one. */
static int flip(struct out *o)
{
	if (wait_flight(o))
		return o->err;
	if (!o->fill)
		return 0;
	if (o->direct && o->fill % OUT_ALIGN && buffered(o))
		return fail(o, -errno, "write");
	o->cur = !o->cur;
	o->in_flight = true;
	o->flight_len = o->fill;
	o->flight_done = 0;
	o->flight_off = o->off;
	o->off += o->fill;
	o->fill = 0;
	return submit(o);
}

int out__open(struct out **out, const char *path, char *why, size_t why_len)
{
	struct out *o = calloc(1, sizeof(*o));
	int err;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	if (!o)
		return -ENOMEM;
	o->fd = -1;
	if (strlen(path) >= sizeof(o->path)) {
		free(o);
		return -ENAMETOOLONG;
	}
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->partial, sizeof(o->partial), "%s.partial", path);
	/* both buffers in one huge page where the kernel has one */
	o->buf[0] = xpu_big_alloc(2 * OUT_BUF);
	if (!o->buf[0]) {
		err = -ENOMEM;
		goto free_bufs;
	}
	o->buf[1] = o->buf[0] + OUT_BUF;
	err = io_uring_queue_init(4, &o->ring, 0);
	if (err)
		goto free_bufs;
	xpu_mkdir_parents(o->partial, 0755); /* if it fails, open says why */
	/* tmpfs and some others refuse O_DIRECT (EINVAL): buffered there; and where
	 * XPUSUP_OUT_BUFFERED is set (to compare, docs/performance.md) */
	o->direct = !getenv("XPUSUP_OUT_BUFFERED");
	o->fd = open(o->partial,
		     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (o->direct ? O_DIRECT : 0), 0644);
	o->direct = o->direct && o->fd >= 0;
	if (o->fd < 0 && errno == EINVAL)
		o->fd = open(o->partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->fd < 0) {
		err = -errno;
		goto exit_ring;
	}
	*out = o;
	return 0;
exit_ring:
	io_uring_queue_exit(&o->ring);
free_bufs:
	if (why && why_len)
		snprintf(why, why_len, "unable to create %s: %s", o->partial, strerror(-err));
	xpu_big_free(o->buf[0], 2 * OUT_BUF);
	free(o);
	return err;
}

int out__write(struct out *o, const void *data, size_t len)
{
	const char *p = data;
	size_t n;

	if (o->err)
		return o->err;
	o->bytes += len;
	while (len) {
		n = OUT_BUF - o->fill < len ? OUT_BUF - o->fill : len;
		memcpy(o->buf[o->cur] + o->fill, p, n);
		o->fill += n;
		p += n;
		len -= n;
		if (o->fill == OUT_BUF && flip(o))
			return o->err;
	}
	return 0;
}

int out__printf(struct out *o, const char *fmt, ...)
{
	char text[65536];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(o, -EINVAL, "format text for");
	return out__write(o, text, (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
}

static void release(struct out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	io_uring_queue_exit(&o->ring);
	xpu_big_free(o->buf[0], 2 * OUT_BUF);
	free(o);
}

int out__commit(struct out *o, char *why, size_t why_len)
{
	int err;

	flip(o);
	wait_flight(o);
	if (!o->err && fsync(o->fd))
		fail(o, -errno, "flush");
	if (!o->err && rename(o->partial, o->path))
		fail(o, -errno, "rename into place");
	err = o->err;
	if (err)
		unlink(o->partial);
	if (why && why_len)
		snprintf(why, why_len, "%s", o->why);
	release(o);
	return err;
}

void out__abort(struct out *o)
{
	if (!o)
		return;
	wait_flight(o);
	unlink(o->partial);
	release(o);
}

const char *out__error(const struct out *o)
{
	return o->why;
}

size_t out__bytes(const struct out *o)
{
	return o->bytes;
}
