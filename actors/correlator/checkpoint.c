// SPDX-License-Identifier: MIT
/* The correlator checkpoint file; layout and protocol in checkpoint.h. */
#include "actors/correlator/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct checkpoint {
	struct xpu_ckpt *map;
	__u32 n_rings;
};

int checkpoint__open(int dirfd, unsigned int shard, __u32 n_rings, struct checkpoint **out,
		     struct xpu_ckpt_slot *last, int *valid)
{
	struct checkpoint *cp;
	struct xpu_ckpt *m;
	char name[64];
	__u64 gen;
	int fd, err;

	memset(last, 0, sizeof(*last));
	*valid = 0;
	if (n_rings > XPU_CKPT_RINGS_MAX)
		return -EINVAL;
	snprintf(name, sizeof(name), XPU_CKPT_NAME_FMT, shard);
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Growing a new (or short) file zero-fills it: magic 0 reads as "nothing committed". */
	if (ftruncate(fd, sizeof(struct xpu_ckpt))) {
		err = -errno;
		goto close_fd;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto close_fd;
	}
	close(fd);
	cp = calloc(1, sizeof(*cp));
	if (!cp) {
		munmap(m, sizeof(*m));
		return -ENOMEM;
	}
	cp->map = m;
	cp->n_rings = n_rings;
	gen = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE); /* pairs with the release in commit */
	if (m->magic == XPU_CKPT_MAGIC && m->version == XPU_CKPT_VERSION && m->shard == shard &&
	    gen && m->slots[gen & 1].n_rings == n_rings) {
		*last = m->slots[gen & 1];
		*valid = 1;
	} else {
		/* Not ours (another layout, a changed ring set): start over from generation 0. */
		memset(m, 0, sizeof(*m));
		m->magic = XPU_CKPT_MAGIC;
		m->version = XPU_CKPT_VERSION;
		m->shard = shard;
	}
	*out = cp;
	return 0;
close_fd:
	close(fd);
	return err;
}

void checkpoint__commit(struct checkpoint *cp, const struct xpu_ckpt_slot *s)
{
	struct xpu_ckpt *m = cp->map;
	__u64 gen = m->gen + 1; /* only this process writes gen */

	m->slots[gen & 1] = *s;
	m->slots[gen & 1].n_rings = cp->n_rings;
	/* The slot's contents before the generation that makes them current: pairs with the
	 * acquire load in checkpoint__open of the next incarnation. */
	__atomic_store_n(&m->gen, gen, __ATOMIC_RELEASE);
}

void checkpoint__close(struct checkpoint *cp)
{
	if (!cp)
		return;
	munmap(cp->map, sizeof(*cp->map));
	free(cp);
}
