/* SPDX-License-Identifier: MIT */
/*
 * What xpusup's flame graphs call a frame, for every format that writes stacks (folded's
 * flame.folded and flame.html, pprof's profile.proto), so that one stack reads the same in
 * each of them:
 *
 *   - GPU work's leaf: "[gpu] KERNEL NAME", "[gpu] memcpy HtoD" (DtoH, DtoD, other),
 *     "[gpu] memset" (flame_frame__gpu_leaf);
 *   - user scopes: the ranges (annotate API, NVTX) an event happened inside, "[range] NAME"
 *     or "[nvtx] NAME" frames outermost first (struct flame_scopes);
 *   - a process's comm, learnt from its CPU samples and execs (struct flame_comms);
 *   - names kept once each (struct flame_names).
 *
 * The correlator makes the innermost range open on a thread the parent of the samples,
 * launches and nested ranges inside it, and links a launch's GPU work to that range
 * (inside_range). struct flame_scopes remembers each range begin it sees (id -> name,
 * enclosing range) in a bounded table, the newest FLAME_RANGES_MAX of them, and keeps a range
 * past its end: GPU work arrives well after the range around its launch closed. An event
 * whose range is not (or no longer) known has no scope.
 *
 * Calling order: zero the struct and call __init (scopes, comms), then use; __free last (a
 * zeroed struct may be freed). Single-threaded, as a format is.
 */
#ifndef XPUSUP_ACTORS_SINK_FLAME_FRAMES_H
#define XPUSUP_ACTORS_SINK_FLAME_FRAMES_H

#include <stdbool.h>

#include <linux/types.h>

#include "common/wire.h"

#define FLAME_NAMES_MAX (1u << 24) /* distinct names a table keeps */
#define FLAME_NAMES_BYTES_MAX (256u << 20) /* the bytes of their copies, all together */
#define FLAME_RANGES_MAX 65536 /* range begins remembered, the newest */
#define FLAME_SCOPE_DEPTH_MAX 32 /* range frames per stack (the correlator nests 32 deep) */
#define FLAME_SCOPE_NAME_MAX 1024 /* bytes of a range's name kept (XPU_RANGE_NAME_MAX) */
/* a stack's range frames: "[range] NAME" each, ';' between */
#define FLAME_SCOPE_MAX (FLAME_SCOPE_DEPTH_MAX * (FLAME_SCOPE_NAME_MAX + 10))
#define FLAME_KERNEL_NAME_MAX 4096 /* bytes of a kernel's name kept in its leaf */
#define FLAME_GPU_LEAF_MAX (FLAME_KERNEL_NAME_MAX + 8)
#define FLAME_COMM_MAX 16
#define FLAME_COMMS_MAX 65536

/* Names, each kept once: open addressing, at most half full. */
struct flame_name_slot;
struct flame_names {
	struct flame_name_slot *slot;
	__u32 mask, n;
	size_t bytes; /* of the copies kept */
	/* 0: FLAME_NAMES_MAX and FLAME_NAMES_BYTES_MAX (a test sets smaller ones) */
	__u32 max;
	size_t max_bytes;
};

/*
 * flame_names__intern - the kept copy of name, made when it is new: equal texts are the same
 * pointer, valid until flame_names__free. A name kept is found whatever the room left; a new one
 * is NULL when there is no room (FLAME_NAMES_MAX names or FLAME_NAMES_BYTES_MAX bytes,
 * or no memory).
 */
const char *flame_names__intern(struct flame_names *t, const char *name);
void flame_names__free(struct flame_names *t);

struct flame_comm;
struct flame_comms {
	struct flame_comm *slot; /* 2 * FLAME_COMMS_MAX slots, pid -> comm */
	__u32 n;
};

/* flame_comms__init - the table, empty. 0 or -ENOMEM. */
int flame_comms__init(struct flame_comms *t);
void flame_comms__free(struct flame_comms *t);
/* flame_comms__learn - the comm of ev's process, from a CPU sample or an exec (ev->name);
 * the first FLAME_COMMS_MAX processes are kept. */
void flame_comms__learn(struct flame_comms *t, const struct xpu_cevent *ev);
/* flame_comms__get - pid's comm as it came (NUL-terminated, at most FLAME_COMM_MAX bytes),
 * or NULL when not known. Valid until the next learn. */
const char *flame_comms__get(struct flame_comms *t, __u32 pid);

/* The newest FLAME_RANGES_MAX range begins: a ring (the oldest is overwritten) with a chained
 * hash index over it, and a filter in front of the index: most lookups are of ids that are no
 * range (a GPU record's parent is its launch), and the filter answers them from 128 KiB
 * without walking a chain through the entries. A clear bit: not a known range; a set one may
 * be a range forgotten since, until the filter is made again from the entries (every
 * FLAME_RANGES_MAX begins), so at most 2 * FLAME_RANGES_MAX bits are set. */
#define FLAME_RANGES_FILTER_BITS (1u << 20)
struct flame_range;
struct flame_ranges {
	struct flame_range *e; /* FLAME_RANGES_MAX */
	__u32 *bucket; /* FLAME_RANGES_MAX heads: index + 1 of a chain's first entry */
	__u64 *filter; /* FLAME_RANGES_FILTER_BITS bits, by range_hash's high bits */
	__u32 head; /* the slot the next begin takes */
	__u32 added; /* begins taken, wrapping: ids for struct flame_range's ages */
};

struct flame_scopes {
	struct flame_ranges ranges;
	struct flame_names names; /* the ranges' frames and the scopes made of them */
	char *scope; /* FLAME_SCOPE_MAX bytes: the range frames being built */
	__u64 in_range; /* events found inside a known range */
};

/* flame_scopes__init - the tables, empty. 0 or -ENOMEM. */
int flame_scopes__init(struct flame_scopes *sc);
void flame_scopes__free(struct flame_scopes *sc);
/* flame_scopes__add - remember a range begin e (XPU_REC_RANGE, PUSH or START) of producer,
 * forgetting the oldest one when the table is full. */
void flame_scopes__add(struct flame_scopes *sc, __u32 producer, const struct xpu_cevent *e);
/*
 * flame_scopes__of - the frames of the ranges around e, "[range] outer;...;[range] inner"
 * (interned: equal chains are the same pointer; no frame holds a ';'), or NULL when e is in
 * no known range. The range is e's inside_range link, else its parent when that is a range
 * (never for GPU work, whose parent is what launched it). A chain whose outer part was
 * forgotten starts at the oldest range still known; one deeper than FLAME_SCOPE_DEPTH_MAX
 * (or a cycle, in broken input) keeps its innermost FLAME_SCOPE_DEPTH_MAX.
 */
const char *flame_scopes__of(struct flame_scopes *sc, __u32 producer, const struct xpu_cevent *e);

/*
 * flame_frame__gpu_leaf - the leaf frame of GPU work e into leaf (FLAME_GPU_LEAF_MAX bytes,
 * not NUL-terminated): "[gpu] KERNEL NAME" (up to its first NUL byte, at most
 * FLAME_KERNEL_NAME_MAX bytes), "[gpu] memcpy HtoD" (DtoH, DtoD, other), "[gpu] memset".
 * Returns its length.
 */
__u32 flame_frame__gpu_leaf(const struct xpu_cevent *e, char *leaf);

/* The frame under GPU work that has no launch stack. */
#define FLAME_NO_LAUNCH_STACK "[gpu] no launch stack"

#endif /* XPUSUP_ACTORS_SINK_FLAME_FRAMES_H */
