// SPDX-License-Identifier: MIT
/*
 * Exit grace: a process that exited keeps its state (keys, streams, counter readings,
 * threads and their range history, graph node stacks, names) for exit_grace_ns, because its
 * GPU activity and CPU samples come after its PROC_EXIT. Table, allocated in exits__init:
 *
 *   gone[]      processes waiting out their exit grace, a ring in exit order (PROC_EXIT
 *               arrives in time order, so deadlines come out sorted): when one is due, each
 *               drop hook forgets it, in the order the hooks were added (join.c adds the
 *               engines', then the shard's gone callback, which drops its names)
 *
 * Bounded: with GONE_MAX processes waiting, one more exit makes the oldest go early.
 * Pending keys are not here: they have their own exit queue (join.c), which expires them
 * before the gone list runs, so a process's last GPU records have gone out, with their
 * stream links, when its streams go.
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <stdlib.h>

#define GONE_MAX 4096

struct gone {
	__u64 deadline;
	__u32 pid;
	__u32 reserved;
};

int exits__add_hook(struct exits *x, void (*drop_pid)(void *engine, __u32 pid), void *engine)
{
	if (x->n_hooks == EXIT_HOOKS_MAX)
		return -ENOSPC;
	x->hooks[x->n_hooks++] = (struct exit_hook){ drop_pid, engine };
	return 0;
}

static void gone_pop(struct exits *x)
{
	__u32 pid = x->gone[x->head].pid, i;

	x->head = (x->head + 1) % GONE_MAX;
	x->len--;
	for (i = 0; i < x->n_hooks; i++)
		x->hooks[i].drop_pid(x->hooks[i].engine, pid);
}

void exits__push(struct exits *x, __u32 pid, __u64 deadline)
{
	if (x->len == GONE_MAX)
		gone_pop(x); /* too many exits in one grace period: the oldest goes early */
	x->gone[(x->head + x->len) % GONE_MAX] = (struct gone){ deadline, pid, 0 };
	x->len++;
}

void exits__expire(struct exits *x, __u64 now_ns)
{
	while (x->len && x->gone[x->head].deadline <= now_ns)
		gone_pop(x);
}

int exits__init(struct exits *x)
{
	x->gone = calloc(GONE_MAX, sizeof(*x->gone));
	return x->gone ? 0 : -ENOMEM;
}

void exits__fini(struct exits *x)
{
	free(x->gone);
}
