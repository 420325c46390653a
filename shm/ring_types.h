/* SPDX-License-Identifier: MIT */
/*
 * Layout of a shared-memory ring file. Shared between processes of different lifetimes
 * (and versions), so: fixed-width little-endian fields, no pointers, explicit padding.
 *
 *   offset 0     struct xpu_ring_hdr (XPU_RING_HDR_SIZE bytes, one page)
 *   offset 4096  data area, capacity bytes, capacity a power of two
 *
 * The header is split into cache-line pairs by writer so that the producer's and the
 * consumer's hot stores never share a line (128 bytes: the adjacent-line prefetcher pulls
 * lines in pairs on x86). See docs/ring.md for the protocol and the ordering argument.
 */
#ifndef XPUSUP_SHM_RING_TYPES_H
#define XPUSUP_SHM_RING_TYPES_H

#include <linux/types.h>

#define XPU_RING_MAGIC 0x31474e4952555058ull /* "XPURING1" in little-endian byte order */
#define XPU_RING_ABI 1
#define XPU_RING_HDR_SIZE 4096u
#define XPU_RING_MIN_CAPACITY 4096ull
#define XPU_RING_MAX_CAPACITY (1ull << 30)

struct xpu_ring_hdr {
	/* [0, 128): immutable once the file is renamed into place by its creator. */
	__u64 magic;
	__u32 abi; /* XPU_RING_ABI */
	__u32 event_abi; /* XPU_EVENT_ABI of the records inside */
	__u32 hdr_size; /* offset of the data area */
	__u32 align; /* record alignment, 8 */
	__u64 capacity; /* data bytes, power of two */
	__u32 max_record; /* largest record the producer may write */
	__u32 creator_pid;
	__u64 created_ns; /* CLOCK_MONOTONIC */
	__u8 reserved0[128 - 48];

	/* [128, 256): written by the producer only. */
	__u64 head; /* bytes ever published; free-running */
	__u64 produced; /* records published (LOSS and PAD records not counted) */
	__u64 produced_bytes;
	__u64 lost_full; /* records dropped because the ring had no room */
	__u64 lost_too_big; /* records dropped because size > max_record */
	__u64 reported_full; /* of lost_full, how many LOSS records already told */
	__u64 reported_too_big;
	__u64 loss_records; /* LOSS records written */
	__u64 wakeups; /* futex wakes issued */
	__u64 producer_resets; /* times a producer found head corrupt at attach and reset it */
	__u32 producer_pid; /* last attached producer, for status only */
	__u32 producer_attaches;
	__u8 reserved1[128 - 88];

	/* [256, 384): written by the consumer only. */
	__u64 tail; /* bytes ever released by the consumer; free-running */
	__u64 consumed; /* records delivered to the consumer's caller */
	__u64 consumed_bytes;
	__u64 corrupt; /* corrupt records or headers detected */
	__u64 skipped_bytes; /* bytes skipped to resynchronise after corruption */
	__u64 sleeps; /* times the consumer slept on the futex */
	__u32 consumer_pid;
	__u32 consumer_attaches;
	__u8 reserved2[128 - 56];

	/* [384, 512): the futex word, written by both sides (see docs/ring.md). */
	__u32 consumer_waiting; /* 1 while the consumer is (about to be) asleep */
	__u32 reserved3;
	__u8 reserved4[128 - 8];

	__u8 reserved5[XPU_RING_HDR_SIZE - 512];
};

_Static_assert(sizeof(struct xpu_ring_hdr) == XPU_RING_HDR_SIZE, "ring header is one page");
_Static_assert(__builtin_offsetof(struct xpu_ring_hdr, head) == 128, "producer line");
_Static_assert(__builtin_offsetof(struct xpu_ring_hdr, tail) == 256, "consumer line");
_Static_assert(__builtin_offsetof(struct xpu_ring_hdr, consumer_waiting) == 384, "futex line");
_Static_assert(__builtin_offsetof(struct xpu_ring_hdr, producer_pid) == 208, "producer pid");
_Static_assert(__builtin_offsetof(struct xpu_ring_hdr, consumer_pid) == 304, "consumer pid");

#endif /* XPUSUP_SHM_RING_TYPES_H */
