/* SPDX-License-Identifier: MIT */
/*
 * The session status block (layout in status_types.h): created by the supervisor, mapped by
 * actors (heartbeat, counters) and read by `xpusup status`.
 */
#ifndef XPUSUP_COMMON_STATUS_H
#define XPUSUP_COMMON_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status_types.h"

#define XPU_STATUS_FILE "status"

/* CLOCK_MONOTONIC in ns. */
__u64 xpu_now_ns(void);

/*
 * status__create - create and map `status` in dirfd (0600), zeroed with a valid header.
 * Returns the mapping (writable, owned by the caller: status__unmap) or NULL with errno.
 */
struct xpu_status_block *status__create(int dirfd);

/*
 * status__map - map an existing status file; writable for actors, read-only for readers.
 * The header is checked (magic, ABI, size). Returns the mapping or NULL with errno
 * (EBADMSG: not a status block).
 */
struct xpu_status_block *status__map(int dirfd, bool writable);

void status__unmap(struct xpu_status_block *block);

/* Relaxed atomic accessors for the block's scalar fields; the two places that publish more
 * than one scalar use release/acquire (status_types.h says which). */
#define status_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define status_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/*
 * status__set_problem - the actor's current problem, or "" when it has none (writer: the
 * actor in the slot). status__get_problem copies a consistent text into buf ("" while none,
 * or when a writer kept changing it); buf is NUL-terminated.
 */
void status__set_problem(struct xpu_actor_slot *slot, const char *text, __u64 now_ns);
void status__get_problem(const struct xpu_actor_slot *slot, char *buf, size_t size);

const char *xpu_actor_state__name(__u32 state);

/* "SEGV" for SIGSEGV; "?" for a number that is not a signal. */
const char *xpu_signal__name(int sig);

#endif /* XPUSUP_COMMON_STATUS_H */
