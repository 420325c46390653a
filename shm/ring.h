/* SPDX-License-Identifier: MIT */
/*
 * Cross-process single-producer single-consumer ring of variable-length records.
 *
 * One ring per (source, shard): exactly one producer process and one consumer process,
 * each holding its own struct ring (a process-local handle over the shared mapping).
 *
 * Producer calling order:
 *	r = ring__open(dirfd, name, RING_PRODUCER);
 *	loop { p = ring__reserve(r, size); if (p) { fill p; ring__commit(r); } ... }
 *	ring__flush(r);			   publish the batch, wake the consumer if asleep
 *	ring__close(r);			   flushes first
 *
 * Consumer calling order:
 *	r = ring__open(dirfd, name, RING_CONSUMER);
 *	loop { n = ring__consume(r, on_record, ctx, max); if (!n) ring__wait(r, timeout); }
 *	ring__close(r);			   releases what was read
 *
 * The producer never blocks: a record that does not fit is dropped and counted by cause,
 * and a LOSS record is written in-band as soon as space returns. The consumer copies each
 * record out of shared memory before it validates it, and it trusts nothing the producer
 * wrote: every size and index is bounds-checked against geometry it cached at open time.
 *
 * Durability across restarts: a record is in the ring once the producer has flushed it; it
 * leaves the ring once the consumer has released it (ring__consume releases at the end of
 * each call). A consumer that dies re-reads, after restart, the records it had read but not
 * released; a producer that dies loses only what it had not flushed.
 */
#ifndef XPUSUP_SHM_RING_H
#define XPUSUP_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shm/ring_types.h"

struct ring;

enum ring_role {
	RING_PRODUCER = 1,
	RING_CONSUMER = 2,
	RING_OBSERVER = 3, /* read-only view of the counters, for `xpusup status` */
};

struct ring_stats {
	__u64 capacity;
	__u64 head;
	__u64 tail;
	__u64 produced;
	__u64 produced_bytes;
	__u64 lost_full;
	__u64 lost_too_big;
	__u64 reported; /* of lost_full + lost_too_big, how many LOSS records have told */
	__u64 loss_records;
	__u64 wakeups;
	__u64 consumed;
	__u64 consumed_bytes;
	__u64 corrupt;
	__u64 skipped_bytes;
	__u64 sleeps;
	__u32 producer_pid;
	__u32 consumer_pid;
	__u32 max_record;
};

/* The default max_record for a capacity: a quarter of it, at most XPU_REC_MAX_SIZE. */
__u32 ring__default_max_record(__u64 capacity);

/*
 * ring__create - create the ring file name in dirfd and format it.
 *
 * capacity must be a power of two in [XPU_RING_MIN_CAPACITY, XPU_RING_MAX_CAPACITY];
 * max_record 0 picks ring__default_max_record(). The file is created 0600 under a
 * temporary name and renamed into place fully formatted, so an opener never sees a
 * half-written header. dirfd must not be accessible to group or others.
 *
 * Returns 0, -EEXIST if name exists, -EPERM if dirfd is group/other accessible, -EINVAL
 * for a bad capacity or max_record, or another -errno from the file system.
 */
int ring__create(int dirfd, const char *name, __u64 capacity, __u32 max_record);

/* ring__unlink - remove the ring file name from dirfd. Returns 0 or -errno. */
int ring__unlink(int dirfd, const char *name);

/*
 * ring__open - map an existing ring file and attach as role.
 *
 * A producer or consumer takes an exclusive open-file-description lock on its side, so a
 * second live producer (or consumer) gets -EBUSY; the lock dies with its holder, so a
 * restarted actor re-attaches at once. The header is validated (magic, ABI, geometry, file
 * size) before anything else is read; indices found corrupt are reset by their owner.
 *
 * Returns the handle, or NULL with errno set: EBADMSG (not a valid ring file), EBUSY
 * (side already held), or the error of open/mmap. The caller owns the handle.
 */
struct ring *ring__open(int dirfd, const char *name, enum ring_role role);

/* ring__open_fd - as ring__open on an already open file (fd passing). Duplicates fd;
 * the caller keeps its own fd. */
struct ring *ring__open_fd(int fd, enum ring_role role);

/*
 * ring__format_mem / ring__open_mem - a ring in caller-provided memory of len bytes
 * (XPU_RING_HDR_SIZE + capacity, 8-byte aligned), for threads of one process and tests.
 * No locks are taken. ring__format_mem returns 0 or -EINVAL; ring__open_mem returns a
 * handle or NULL (errno EBADMSG). The memory stays the caller's and must outlive the handle.
 */
int ring__format_mem(void *mem, size_t len, __u64 capacity, __u32 max_record);
struct ring *ring__open_mem(void *mem, size_t len, enum ring_role role);

/* ring__close - flush (producer) or release (consumer), unmap and free. Accepts NULL. */
void ring__close(struct ring *r);

/*
 * ring__reserve - reserve size bytes (a multiple of 8, header included) for one record.
 *
 * Returns a pointer to 8-byte aligned, exclusively owned ring memory, valid until the
 * matching ring__commit(); at most one reservation is outstanding. Returns NULL with
 * errno: ENOBUFS (no room: dropped and counted as ring_full), E2BIG (size > max_record:
 * counted as too_big), EINVAL (size not a multiple of 8, or below 8; not counted).
 * Not reserving after a NULL is the caller's "drop": nothing else needs undoing.
 */
void *ring__reserve(struct ring *r, __u32 size);

/*
 * ring__fits - whether ring__reserve(r, size) would succeed now (refreshes the producer's
 * view of the tail). For producers that may wait rather than drop (replay at full speed):
 * a failed ring__reserve is counted as a loss, a false ring__fits is not.
 */
bool ring__fits(struct ring *r, __u32 size);

/*
 * ring__try_reserve - as ring__reserve, for producers that would rather wait than drop:
 * when the record does not fit now it returns NULL with errno EAGAIN and counts nothing
 * (flush, let the consumer catch up, try again). E2BIG and EINVAL are as for ring__reserve.
 */
void *ring__try_reserve(struct ring *r, __u32 size);

/* ring__commit - make the reserved record part of the next publish. */
void ring__commit(struct ring *r);

/* ring__write - reserve, copy the size bytes at rec, commit. Returns 0 or the -errno
 * that ring__reserve would have set. */
int ring__write(struct ring *r, const void *rec, __u32 size);

/*
 * ring__flush - publish every committed record and wake the consumer if it sleeps.
 * Also writes pending LOSS records first when there is room. One store, one fence and
 * one load when the consumer is awake; a futex wake only when it sleeps. Returns 0.
 */
int ring__flush(struct ring *r);

typedef int (*ring_record_fn)(const void *rec, __u32 size, void *ctx);
typedef int (*ring_validate_fn)(const void *rec, size_t size);

/*
 * ring__set_validate - the check a consumer applies to each copied record before handing
 * it over; records that fail are counted in corrupt and skipped. The default is
 * xpu_rec__validate; NULL checks framing only (for raw payloads in tests and bench).
 */
void ring__set_validate(struct ring *r, ring_validate_fn validate);

/*
 * ring__read - copy the next record into buf (cap bytes, 8-byte aligned; cap >= max_record
 * always suffices) and advance past it. LOSS records are delivered like any other.
 *
 * Returns the record size, 0 when the ring is empty, or -EMSGSIZE when cap is too small
 * (nothing consumed). Corrupt input is never returned: it is counted and skipped.
 * The read position is released to the producer by ring__release (or automatically once a
 * quarter of the ring has been read).
 */
int ring__read(struct ring *r, void *buf, size_t cap);

/* ring__release - let the producer reuse the space of every record read so far. */
void ring__release(struct ring *r);

/*
 * ring__hold - with hold set, space is released only by an explicit ring__release: not
 * by ring__read past a quarter of the ring, not by ring__wait, not by ring__close. For a
 * consumer that must not give records back before it has made them durable elsewhere (the
 * correlator commits its output first): a consumer killed while holding re-reads from the
 * last release. The caller must release often enough (ring__unreleased) for the producer.
 */
void ring__hold(struct ring *r, bool hold);

/* ring__read_pos - the consumer's read position: free-running bytes, records end there. */
__u64 ring__read_pos(const struct ring *r);

/* ring__unreleased - bytes read and not yet released. */
__u64 ring__unreleased(const struct ring *r);

/*
 * ring__consume - read up to max records, calling fn(rec, size, ctx) on a private copy of
 * each, then release them all at once. fn returning non-zero stops early (that record
 * counts as consumed). Returns the number of records handed to fn, or -errno.
 */
int ring__consume(struct ring *r, ring_record_fn fn, void *ctx, unsigned int max);

/*
 * ring__wait - wait until the producer publishes or timeout_ns passes (0: do not wait,
 * -1 (~0ull): no timeout): poll for up to 20 us, then sleep on the futex. Releases what was
 * read first, so the producer is never kept waiting for space by a sleeping consumer. Returns 1 when records are readable, 0 on
 * timeout or signal (EINTR is not an error here: the caller's loop checks its flags).
 */
int ring__wait(struct ring *r, __u64 timeout_ns);

/* ring__readable - bytes published and not yet read, 0 when the head looks corrupt. */
__u64 ring__readable(struct ring *r);

/* ring__stats - a snapshot of the shared counters (relaxed loads: each value is exact,
 * the set is not one instant). Works for every role. */
void ring__stats(const struct ring *r, struct ring_stats *st);

#endif /* XPUSUP_SHM_RING_H */
