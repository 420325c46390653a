// SPDX-License-Identifier: MIT
/*
 * inproc_abi_test: a library whose records differ from the session's (another build of
 * xpusup) is told why it cannot attach. The test is the session's side: it listens where
 * inproc__connect looks, answers the hello with a ring whose header says another event ABI,
 * and a child process connects as a profiled program's library does. Then the same with a
 * ring of this build's ABI, which must attach.
 */
#include "shm/inproc.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/ring.h"
#include "tests/tap.h"
#include "xpusup/event.h"

/* The child: connect, write what inproc__connect said (or "attached") to out. */
static int connect_child(int out)
{
	struct ring *ring;
	__u32 options;
	char why[256] = "attached";
	int sock, err;

	err = inproc__connect(XPU_INPROC_CUPTI, 5000, &sock, &ring, &options, why, sizeof(why));
	if (write(out, why, strlen(why)) < 0)
		return 3;
	if (!err) {
		ring__close(ring);
		close(sock);
	}
	return err ? 1 : 0;
}

/* The session's side of one connection: a ring whose header says event ABI abi. */
static int answer(int lsock, __u32 abi)
{
	struct xpu_inproc_hello hello;
	struct xpu_inproc_reply reply = { .magic = XPU_INPROC_MAGIC,
					  .version = XPU_INPROC_VERSION,
					  .capacity = 1 << 16 };
	int c, fd, err = -EPROTO;

	c = accept(lsock, NULL, NULL);
	if (c < 0)
		return -errno;
	if (recv(c, &hello, sizeof(hello), 0) != (ssize_t)sizeof(hello))
		goto close_conn;
	fd = inproc__create_ring(reply.capacity, 0);
	if (fd < 0) {
		err = fd;
		goto close_conn;
	}
	/* the header's event_abi as another build would have made it (the size is sealed,
	 * not the bytes) */
	if (pwrite(fd, &abi, sizeof(abi), offsetof(struct xpu_ring_hdr, event_abi)) !=
	    (ssize_t)sizeof(abi)) {
		err = -errno;
		close(fd);
		goto close_conn;
	}
	err = inproc__send_reply(c, &reply, fd);
	close(fd);
	/* hold the connection until the child has read the reply and decided */
	if (!err)
		(void)recv(c, &hello, sizeof(hello), 0);
close_conn:
	close(c);
	return err;
}

/* One attach attempt against a ring of event ABI abi: the child's exit status and words. */
static int attempt(int lsock, __u32 abi, char *said, size_t said_len)
{
	int pipefd[2], status = -1, err;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		_exit(connect_child(pipefd[1]));
	}
	close(pipefd[1]);
	err = pid < 0 ? -errno : answer(lsock, abi);
	n = read(pipefd[0], said, said_len - 1);
	said[n > 0 ? n : 0] = 0;
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (err)
		tap_diag("the session's side failed: %s", strerror(-err));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
	char dir[] = "/tmp/xpusup-inprocabi-XXXXXX", said[256], want[160];
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int lsock, rc;

	if (!mkdtemp(dir))
		tap_bail("mkdtemp: %s", strerror(errno));
	setenv(XPU_INPROC_ENV, dir, 1);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, XPU_INPROC_SOCK);
	lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) || listen(lsock, 4))
		tap_bail("listen on %s: %s", addr.sun_path, strerror(errno));

	rc = attempt(lsock, XPU_EVENT_ABI - 1, said, sizeof(said));
	snprintf(want, sizeof(want), "records of event ABI %u, this library writes ABI %u",
		 XPU_EVENT_ABI - 1, XPU_EVENT_ABI);
	tap_ok(rc == 1 && strstr(said, want) != NULL,
	       "a ring of another event ABI: refused, saying which (exit %d: %s)", rc, said);
	rc = attempt(lsock, XPU_EVENT_ABI, said, sizeof(said));
	tap_ok(rc == 0 && !strcmp(said, "attached"), "a ring of this ABI attaches (exit %d: %s)",
	       rc, said);

	close(lsock);
	unlink(addr.sun_path);
	rmdir(dir);
	return tap_done();
}
