/* SPDX-License-Identifier: MIT */
/*
 * Stacks copied by a source (XPU_STACK_F_COPY, include/xpusup/event.h) unwound in the
 * correlator: the CPU source's BPF program copies the user stack and registers of a sample or
 * a launch-marker hit; here the copy is walked (unwind/walk.h) with the CFI of the files the
 * process maps (symbolizer__rule), falling back to the frame pointer frame by frame, and the
 * record is rewritten as an ordinary one: its user frames are the walk's, the copy is gone.
 * docs/unwind.md has the design and its figures.
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_UNWIND_H
#define XPUSUP_ACTORS_CORRELATOR_UNWIND_H

#include <linux/types.h>

#include "actors/correlator/symbolize.h"
#include "unwind/walk.h"

/* What the unwinder did, since the shard started. */
struct stack_unwind_stats {
	__u64 stacks; /* copies unwound */
	__u64 ends[UNWIND_END_MAX]; /* ... by how their walk ended (walk.h) */
	__u64 frames_cfi, frames_fp; /* frames reached through CFI, through frame pointers */
	__u64 no_maps; /* walked with frame pointers only: the process's files were not known */
	__u64 ns; /* time spent, in total */
};

/*
 * stack_unwind__record - rewrite the CPU_SAMPLE or LAUNCH rec (validated, with a copy) into
 * out (cap bytes, 8-byte aligned) without it: a sample keeps its kernel frames and gets the
 * walk's user frames (at most XPU_MAX_FRAMES); a launch from the marker uprobe loses the
 * marker's own frame, so its stack starts at the return address into the launching code, as
 * before. sym may be NULL: the walk then follows frame pointers only (counted in no_maps).
 *
 * Returns the size of the record written, or -EINVAL (rec has no copy) / -ENOSPC (cap).
 */
int stack_unwind__record(struct symbolizer *sym, const void *rec, void *out, __u32 cap,
			 struct stack_unwind_stats *st);

#endif /* XPUSUP_ACTORS_CORRELATOR_UNWIND_H */
