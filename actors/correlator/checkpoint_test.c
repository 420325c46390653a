// SPDX-License-Identifier: MIT
/* The correlator checkpoint: a commit survives the process, a torn commit does not count,
 * a file of another ring count or layout is started over. */
#include "actors/correlator/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

int main(void)
{
	struct xpu_ckpt_slot last, c = { 0 };
	struct checkpoint *cp;
	struct xpu_ckpt *m;
	char dir[64];
	int dirfd = tr_make_dir(dir), valid, fd;

	if (dirfd < 0)
		tap_bail("cannot make a temporary directory");
	tap_ok(checkpoint__open(dirfd, 3, 2, &cp, &last, &valid) == 0 && !valid,
	       "a new checkpoint file has nothing committed");
	c.seq_next = 4096;
	c.next_id = 77;
	c.held = 5;
	c.pos[0] = 1024;
	c.pos[1] = 2048;
	checkpoint__commit(cp, &c);
	checkpoint__close(cp);
	tap_ok(checkpoint__open(dirfd, 3, 2, &cp, &last, &valid) == 0 && valid &&
		       last.seq_next == 4096 && last.next_id == 77 && last.held == 5 &&
		       last.pos[1] == 2048 && last.n_rings == 2,
	       "a reopened checkpoint has the last commit");
	c.seq_next = 8192;
	checkpoint__commit(cp, &c);
	checkpoint__close(cp);

	/* A writer killed while filling the next slot: the slot changed, gen did not. */
	fd = openat(dirfd, "correlator.3.ckpt", O_RDWR);
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	tap_ok(m != MAP_FAILED && m->gen == 2, "two commits, generation 2");
	m->slots[(m->gen + 1) & 1].seq_next = 999999;
	munmap(m, sizeof(*m));
	tap_ok(checkpoint__open(dirfd, 3, 2, &cp, &last, &valid) == 0 && valid &&
		       last.seq_next == 8192,
	       "a torn commit is not seen: the last complete one is");
	checkpoint__close(cp);

	tap_ok(checkpoint__open(dirfd, 3, 3, &cp, &last, &valid) == 0 && !valid &&
		       last.seq_next == 0,
	       "a checkpoint of another ring count is started over");
	checkpoint__close(cp);
	tap_ok(checkpoint__open(dirfd, 3, 3, &cp, &last, &valid) == 0 && !valid,
	       "and holds nothing until the next commit");
	checkpoint__close(cp);
	tap_ok(checkpoint__open(dirfd, 3, XPU_CKPT_RINGS_MAX + 1, &cp, &last, &valid) == -EINVAL,
	       "more rings than a slot holds is EINVAL");
	tr_remove_dir(dir, dirfd);
	return tap_done();
}
