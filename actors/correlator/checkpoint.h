/* SPDX-License-Identifier: MIT */
/*
 * A correlator shard's checkpoint: the file `correlator.N.ckpt` in the session directory,
 * which outlives the shard's process so that its next incarnation knows exactly where the
 * last one stood. With it a kill -9 loses nothing uncounted:
 *
 *   - the shard reads its rings in hold mode (ring__hold) and releases them only after a
 *     checkpoint names their read positions, so what it read after the last checkpoint is
 *     read again by the next incarnation, and what it read before is never read twice;
 *   - a checkpoint is written before each wire batch is sent and carries the wire sequence
 *     number (counted in events) of the next batch: a batch lost between the checkpoint and
 *     the sink shows at the sink as a sequence gap of exactly its events;
 *   - GPU records the join holds (waiting for their launch) and CPU samples it holds (for
 *     their thread's ranges) at a checkpoint have been read past and are not re-read: a
 *     kill loses them, and the checkpoint says how many.
 *
 * Fixed-width little-endian layout, no pointers. Two slots: a commit writes the slot that
 * is not current, then publishes it by storing gen + 1 (release); a reader loads gen
 * (acquire) and reads slot gen & 1. A writer killed half-way leaves gen, and so the last
 * complete slot, unchanged.
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_CHECKPOINT_H
#define XPUSUP_ACTORS_CORRELATOR_CHECKPOINT_H

#include <linux/types.h>

#define XPU_CKPT_MAGIC 0x3154504b43555058ull /* "XPUCKPT1" */
#define XPU_CKPT_VERSION 1
#define XPU_CKPT_RINGS_MAX 64 /* CONF_MAX_ACTORS */
#define XPU_CKPT_NAME_FMT "correlator.%u.ckpt"

struct xpu_ckpt_slot {
	__u64 seq_next; /* wire sequence number of the next batch: events sent so far */
	__u64 next_id; /* the next event id */
	__u64 held; /* records read past and held by the join (GPU records, CPU samples) */
	__u64 held_keys; /* pending join keys (launch sides) */
	__u64 lost; /* records lost with join state by earlier incarnations, in total */
	__u64 lost_keys; /* keys lost likewise */
	__u64 filtered; /* records dropped by source filter stages, in total */
	__u64 sampled_out; /* records dropped by source sample stages, in total */
	__u64 held_names; /* names in the shard's STRING table */
	__u64 lost_names; /* names lost likewise */
	__u32 n_rings;
	__u32 reserved;
	__u64 pos[XPU_CKPT_RINGS_MAX]; /* read position of each ring, in config order */
};

struct xpu_ckpt {
	__u64 magic;
	__u32 version;
	__u32 shard;
	__u64 gen; /* slot gen & 1 is current; 0: nothing committed yet */
	struct xpu_ckpt_slot slots[2];
};

_Static_assert(sizeof(struct xpu_ckpt_slot) == 88 + 8 * XPU_CKPT_RINGS_MAX, "ckpt slot");
_Static_assert(sizeof(struct xpu_ckpt) == 24 + 2 * sizeof(struct xpu_ckpt_slot), "ckpt");

struct checkpoint;

/*
 * checkpoint__open - open (creating it zeroed if absent) the checkpoint of shard in dirfd.
 * *last is the last committed slot, all zero when there is none or when the file belongs to
 * another layout or ring count (then *valid is 0 and the caller starts from the rings'
 * released positions). Returns 0 or -errno.
 */
int checkpoint__open(int dirfd, unsigned int shard, __u32 n_rings, struct checkpoint **cp,
		     struct xpu_ckpt_slot *last, int *valid);

/* checkpoint__commit - make s the current slot. */
void checkpoint__commit(struct checkpoint *cp, const struct xpu_ckpt_slot *s);

void checkpoint__close(struct checkpoint *cp);

#endif /* XPUSUP_ACTORS_CORRELATOR_CHECKPOINT_H */
