/* SPDX-License-Identifier: MIT */
/*
 * The event map's fields (docs/wire.md, "Event"): one table that both the encoder
 * (common/wire_enc.c) and the decoder (common/wire_dec.c) are generated from, so that the two
 * cannot disagree on a key, a type, a width or a check, and adding a plain field to the wire
 * is one line here.
 *
 * XPU_WIRE_EVENT_FIELDS(X) calls X(key, type, member, presence, check, kinds) once per field,
 * in the order the encoder writes them (the order docs/wire.md lists them in):
 *
 *   key       the map key, a string literal of at most 8 bytes (the decoder compares keys
 *             as one 8-byte load)
 *   type      how the value is written and read:
 *               UINT   an unsigned member (__u16, __u32, __u64), written in the smallest
 *                      encoding, read in any encoding up to the member's maximum
 *               ENUM   an unsigned member whose range is its check's, not its width's: read
 *                      as any uint64, then checked
 *               FLOAT  a float member written as float32, a double as float64; either read
 *               and the fields with hand-written code (their shape is not one scalar):
 *               LINKS, TRIPLE (grid, block), NAME, NK, STACK, FRAMES, COUNTERS
 *   member    the struct xpu_cevent member it carries (for hand-written types, the one that
 *             names it; their code knows the rest)
 *   presence  REQ: always written, and a batch without it is malformed;
 *             OPT: written when not zero (a float: when != 0.0), zero when absent
 *   check     what a valid value is, checked by the encoder (-EINVAL) and the decoder
 *             (-EBADMSG) alike: NONE, KIND (a kind of event), CORR_TYPE (an enum
 *             xpu_corr_type), CONFIDENCE (0..1), DELTA (finite, >= 0)
 *   kinds     the kinds that carry it (docs/wire.md, "Which fields each kind uses"), a mask
 *             of WIRE_K(kind) bits; WIRE_K_ALL for the fields of every record's header. The
 *             codec writes a field on any kind when it is not zero and reads it on any kind
 *             (a newer correlator may fill more); wire_test checks this column against
 *             docs/wire.md.
 *
 * To add a plain field: a member in struct xpu_cevent (common/wire.h), a line here in the
 * place the encoder should write it, and its row in docs/wire.md's key and kind tables
 * (wire_test fails until the docs say the same). Nothing in wire_enc.c or wire_dec.c
 * changes. A field of a new shape needs its type's code in both (see LINKS there).
 */
#ifndef XPUSUP_COMMON_WIRE_FIELDS_H
#define XPUSUP_COMMON_WIRE_FIELDS_H

#include <float.h>
#include <stdbool.h>

#include "common/wire.h"

#define WIRE_K(kind) (1u << XPU_REC_##kind)
#define WIRE_K_ALL 0xffffffffu
#define WIRE_K_GPU                                                                         \
	(WIRE_K(GPU_KERNEL) | WIRE_K(GPU_MEMCPY) | WIRE_K(GPU_MEMSET) | WIRE_K(GPU_SYNC) | \
	 WIRE_K(GPU_MEMORY))
#define WIRE_K_STACK                                                                     \
	(WIRE_K(CPU_SAMPLE) | WIRE_K(LAUNCH) | WIRE_K(GPU_KERNEL) | WIRE_K(GPU_MEMCPY) | \
	 WIRE_K(GPU_MEMSET))
#define WIRE_K_COUNTERS (WIRE_K(GPU_KERNEL) | WIRE_K(RANGE))
#define WIRE_K_GRAPH (WIRE_K(GPU_KERNEL) | WIRE_K(GPU_MEMCPY) | WIRE_K(GPU_MEMSET))

/* One field a line (its kinds may wrap), columns aligned. */
/* clang-format off */
#define XPU_WIRE_EVENT_FIELDS(X)                                                                  \
	X("k",        ENUM,     kind,           REQ, KIND,       WIRE_K_ALL)                      \
	X("id",       UINT,     id,             REQ, NONE,       WIRE_K_ALL)                      \
	X("ts",       UINT,     ts_ns,          REQ, NONE,       WIRE_K_ALL)                      \
	X("pid",      UINT,     pid,            OPT, NONE,       WIRE_K_ALL)                      \
	X("tid",      UINT,     tid,            OPT, NONE,       WIRE_K_ALL)                      \
	X("cpu",      UINT,     cpu,            OPT, NONE,       WIRE_K(CPU_SAMPLE) |             \
	  WIRE_K(PMU_COUNTER))                                                                    \
	X("end",      UINT,     end_ns,         OPT, NONE,       WIRE_K_ALL)                      \
	X("flags",    UINT,     flags,          OPT, NONE,       WIRE_K_ALL)                      \
	X("corr",     UINT,     correlation_id, OPT, NONE,       WIRE_K(LAUNCH) |                 \
	  WIRE_K(CUDA_API) | WIRE_K_GPU | WIRE_K(RANGE))                                          \
	X("parent",   UINT,     parent_id,      OPT, NONE,       WIRE_K_ALL)                      \
	X("root",     UINT,     root_id,        OPT, NONE,       WIRE_K_ALL)                      \
	X("ct",       ENUM,     corr_type,      OPT, CORR_TYPE,  WIRE_K_ALL)                      \
	X("conf",     FLOAT,    confidence,     OPT, CONFIDENCE, WIRE_K_ALL)                      \
	X("links",    LINKS,    links,          OPT, NONE,       WIRE_K_ALL)                      \
	X("dev",      UINT,     device,         OPT, NONE,       WIRE_K_GPU)                      \
	X("ctx",      UINT,     context,        OPT, NONE,       WIRE_K_GPU)                      \
	X("str",      UINT,     stream,         OPT, NONE,       WIRE_K_GPU)                      \
	X("graph",    UINT,     graph_id,       OPT, NONE,       WIRE_K_GRAPH)                    \
	X("node",     UINT,     graph_node_id,  OPT, NONE,       WIRE_K_GRAPH)                    \
	X("grid",     TRIPLE,   grid,           OPT, NONE,       WIRE_K(GPU_KERNEL))              \
	X("block",    TRIPLE,   block,          OPT, NONE,       WIRE_K(GPU_KERNEL))              \
	X("regs",     UINT,     registers,      OPT, NONE,       WIRE_K(GPU_KERNEL))              \
	X("smem",     UINT,     shared_mem,     OPT, NONE,       WIRE_K(GPU_KERNEL))              \
	X("api",      UINT,     api_id,         OPT, NONE,       WIRE_K(LAUNCH) |                 \
	  WIRE_K(CUDA_API))                                                                       \
	X("sub",      UINT,     sub_kind,       OPT, NONE,       WIRE_K(CUDA_API) |               \
	  WIRE_K(GPU_MEMCPY) | WIRE_K(GPU_SYNC) | WIRE_K(GPU_MEMORY) | WIRE_K(PMU_COUNTER) |      \
	  WIRE_K(RANGE) | WIRE_K(CLOCK_SYNC) | WIRE_K(STRING) | WIRE_K(LOSS))                     \
	X("bytes",    UINT,     bytes,          OPT, NONE,       WIRE_K(GPU_MEMCPY) |             \
	  WIRE_K(GPU_MEMSET) | WIRE_K(GPU_MEMORY))                                                \
	X("addr",     UINT,     address,        OPT, NONE,       WIRE_K(GPU_MEMORY))              \
	X("val",      UINT,     value,          OPT, NONE,       WIRE_K(CPU_SAMPLE) |             \
	  WIRE_K(GPU_MEMSET) | WIRE_K(PMU_COUNTER) | WIRE_K(PROC_EXIT) | WIRE_K(CLOCK_SYNC) |     \
	  WIRE_K(STRING) | WIRE_K(LOSS))                                                          \
	X("delta",    UINT,     delta,          OPT, NONE,       WIRE_K(PMU_COUNTER))             \
	X("scale",    FLOAT,    scale,          OPT, NONE,       WIRE_K(PMU_COUNTER))             \
	X("name",     NAME,     name,           OPT, NONE,       WIRE_K(CPU_SAMPLE) |             \
	  WIRE_K(GPU_KERNEL) | WIRE_K(PMU_COUNTER) | WIRE_K(RANGE) | WIRE_K(PROC_EXEC) |          \
	  WIRE_K(PROC_EXIT) | WIRE_K(STRING))                                                     \
	X("nk",       NK,       n_kernel,       OPT, NONE,       WIRE_K(CPU_SAMPLE))              \
	X("stack",    STACK,    stack,          OPT, NONE,       WIRE_K_STACK)                    \
	X("frames",   FRAMES,   frames,         OPT, NONE,       WIRE_K_STACK)                    \
	X("counters", COUNTERS, counters,       OPT, NONE,       WIRE_K_COUNTERS)                 \
	X("cflags",   UINT,     counter_flags,  OPT, NONE,       WIRE_K_COUNTERS)                 \
	X("ipc",      FLOAT,    ipc,            OPT, DELTA,      WIRE_K_COUNTERS)
/* clang-format on */

/* The checks of the check column: the same test in both directions. */
#define WIRE_VALID_NONE(v) true
#define WIRE_VALID_KIND(v) ((v) >= XPU_REC_CPU_SAMPLE && (v) < XPU_REC_EVENT_END)
#define WIRE_VALID_CORR_TYPE(v) ((v) < XPU_CORR_TYPE_MAX)
/* written this way round so that NaN fails too; integer bounds so that a float member is
 * compared as a float, a double as a double */
#define WIRE_VALID_CONFIDENCE(v) ((v) >= 0 && (v) <= 1)
#define WIRE_VALID_DELTA(v) wire_delta__valid(v)

/* A counter delta or an ipc: finite and not negative. Written this way round so that NaN
 * fails too. */
static inline bool wire_delta__valid(double d)
{
	return d >= 0.0 && d <= DBL_MAX;
}

/* The field's index in the table, for the decoder's seen-key bits and its dispatch. */
enum wire_field {
#define WIRE_FIELD_ENUM(key, type, member, presence, check, kinds) WIRE_F_##member,
	XPU_WIRE_EVENT_FIELDS(WIRE_FIELD_ENUM)
#undef WIRE_FIELD_ENUM
		WIRE_F_COUNT,
};

_Static_assert(WIRE_F_COUNT <= 64, "the decoder's seen-key bits fit in a __u64");

#endif /* XPUSUP_COMMON_WIRE_FIELDS_H */
