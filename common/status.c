// SPDX-License-Identifier: MIT
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

__u64 xpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

struct xpu_status_block *status__create(int dirfd)
{
	struct xpu_status_block *block;
	int fd, err;

	fd = openat(dirfd, XPU_STATUS_FILE, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, sizeof(*block))) {
		err = errno;
		goto err_close;
	}
	block = mmap(NULL, sizeof(*block), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (block == MAP_FAILED) {
		err = errno;
		goto err_close;
	}
	close(fd);
	block->hdr.abi = XPU_STATUS_ABI;
	block->hdr.started_ns = xpu_now_ns();
	/* The magic last: a reader that sees it sees an initialised header. */
	__atomic_store_n(&block->hdr.magic, XPU_STATUS_MAGIC, __ATOMIC_RELEASE);
	return block;

err_close:
	close(fd);
	unlinkat(dirfd, XPU_STATUS_FILE, 0);
	errno = err;
	return NULL;
}

struct xpu_status_block *status__map(int dirfd, bool writable)
{
	struct xpu_status_block *block;
	struct stat st;
	int fd, err;

	fd = openat(dirfd, XPU_STATUS_FILE,
		    (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = errno;
		goto err_close;
	}
	if (st.st_size != (off_t)sizeof(*block)) {
		err = EBADMSG;
		goto err_close;
	}
	block = mmap(NULL, sizeof(*block), writable ? PROT_READ | PROT_WRITE : PROT_READ,
		     MAP_SHARED, fd, 0);
	if (block == MAP_FAILED) {
		err = errno;
		goto err_close;
	}
	close(fd);
	if (__atomic_load_n(&block->hdr.magic, __ATOMIC_ACQUIRE) != XPU_STATUS_MAGIC ||
	    block->hdr.abi != XPU_STATUS_ABI || block->hdr.n_actors > XPU_STATUS_MAX_ACTORS) {
		munmap(block, sizeof(*block));
		errno = EBADMSG;
		return NULL;
	}
	return block;

err_close:
	close(fd);
	errno = err;
	return NULL;
}

void status__unmap(struct xpu_status_block *block)
{
	if (block)
		munmap(block, sizeof(*block));
}

void status__set_problem(struct xpu_actor_slot *slot, const char *text, __u64 now_ns)
{
	__u32 seq = status_load(&slot->problem_seq);
	size_t i = 0;

	/* Odd while writing. Each text byte is a release store, so the odd count is visible
	 * before any of them; the final release store makes the even count visible after all
	 * of them (pairs with the reader's acquire loads). No fences: TSan does not model
	 * them. */
	status_store(&slot->problem_seq, seq | 1);
	for (; text[i] && i < sizeof(slot->problem) - 1; i++)
		__atomic_store_n(&slot->problem[i], text[i], __ATOMIC_RELEASE);
	for (; i < sizeof(slot->problem); i++)
		__atomic_store_n(&slot->problem[i], 0, __ATOMIC_RELEASE);
	status_store(&slot->problem_ns, now_ns);
	__atomic_store_n(&slot->problem_seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

void status__get_problem(const struct xpu_actor_slot *slot, char *buf, size_t size)
{
	__u32 before, after, tries;
	size_t i, n = size - 1 < sizeof(slot->problem) ? size - 1 : sizeof(slot->problem);

	for (tries = 0; tries < 100; tries++) {
		before = __atomic_load_n(&slot->problem_seq, __ATOMIC_ACQUIRE);
		if (before & 1)
			continue;
		/* acquire loads: the count is read again only after all of them */
		for (i = 0; i < n; i++)
			buf[i] = __atomic_load_n(&slot->problem[i], __ATOMIC_ACQUIRE);
		buf[n] = 0;
		after = __atomic_load_n(&slot->problem_seq, __ATOMIC_RELAXED);
		if (after == before)
			return;
	}
	buf[0] = 0;
}

const char *xpu_actor_state__name(__u32 state)
{
	static const char *const names[] = {
		[XPU_ACTOR_STOPPED] = "stopped", [XPU_ACTOR_STARTING] = "starting",
		[XPU_ACTOR_RUNNING] = "running", [XPU_ACTOR_STOPPING] = "stopping",
		[XPU_ACTOR_BACKOFF] = "backoff", [XPU_ACTOR_FAILED] = "failed",
		[XPU_ACTOR_EXITED] = "exited",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}

const char *xpu_signal__name(int sig)
{
	const char *name = sigabbrev_np(sig);

	return name ? name : "?";
}
