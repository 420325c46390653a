/* SPDX-License-Identifier: MIT */
/*
 * The processes below a root, as /proc shows them now: for sources that follow a process
 * tree (`target = tree:PID` or `command`) and must take in the descendants it already has
 * before the kernel side follows new forks.
 */
#ifndef XPUSUP_ACTORS_PROCTREE_H
#define XPUSUP_ACTORS_PROCTREE_H

#include <linux/types.h>
#include <stddef.h>

#include "common/config.h"

typedef int (*proctree_fn)(__u32 pid, void *ctx);

/*
 * proctree__walk - call fn for each process descended from root (root itself not included)
 * found in one pass over /proc (pid and parent from /proc/PID/stat). A process that forks or
 * exits meanwhile may be seen or not; callers attach their fork tracking first so nothing is
 * missed. Stops at fn's first non-zero return and returns it; 0 otherwise, also when /proc
 * cannot be read (nothing found) or memory runs out (what was found so far was reported).
 */
int proctree__walk(__u32 root, proctree_fn fn, void *ctx);

/*
 * proctree__resolve - complete a source's target before use: `command` takes its root from
 * $XPUSUP_RECORD_PID (set by `xpusup record`), and every pid of the target must exist now.
 * Returns 0, or -EINVAL / -ESRCH with the reason, a sentence, in why.
 */
int proctree__resolve(struct conf_target *t, char *why, size_t size);

#endif /* XPUSUP_ACTORS_PROCTREE_H */
