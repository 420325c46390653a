/* SPDX-License-Identifier: MIT */
/*
 * A session: its directory (/run/xpusup/NAME as root, $XDG_RUNTIME_DIR/xpusup/NAME
 * otherwise, mode 0700), the lock that makes it exclusive, and what the supervisor creates
 * in it before any actor starts: the validated config snapshot, the status block and the
 * (source x shard) ring mesh. docs/supervisor.md has the directory's contents.
 */
#ifndef XPUSUP_SUPERVISOR_SESSION_H
#define XPUSUP_SUPERVISOR_SESSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/status.h"

#define SESSION_NAME_MAX 48
#define SESSION_DEFAULT "default"

struct session {
	char name[SESSION_NAME_MAX];
	char base[4096]; /* parent of the session directory */
	char dir[4200];
	char log[4200]; /* supervisor log, beside the directory so it outlives a stop */
	int dirfd;
	int lockfd; /* held (flock) for the life of the supervisor */
	struct xpu_status_block *status;
};

/* session_name_valid - [A-Za-z0-9_.-]{1,47}, not starting with '.'. */
bool session_name_valid(const char *name);

/*
 * session__paths - fill name, base, dir and log for name (no file system changes).
 * Returns 0, -EINVAL for a bad name, -ENOENT when not root and XDG_RUNTIME_DIR is unset.
 */
int session__paths(struct session *s, const char *name);

/*
 * session__create - create the directory, take the lock, clean what a dead supervisor left,
 * write the config snapshot, the status block (one slot per actor) and the ring mesh.
 * Returns 0; -EBUSY when a live session holds the name (*holder = its pid); -errno otherwise.
 * On failure nothing is left behind but the directory of a live session.
 */
int session__create(struct session *s, const struct conf *conf, pid_t *holder);

/*
 * session__open - for `status`/`stop`: open the directory of a running session and map the
 * status block read-only. Returns 0; -ENOENT when no session of that name runs (a stale
 * directory left by a killed supervisor counts as none); -errno otherwise.
 */
int session__open(struct session *s);

/* session__pid - the supervisor pid of a running session (from its pid file), or 0. */
pid_t session__pid(const struct session *s);

/* session__destroy - remove every file, the directory, release the lock. Accepts a session
 * that was only partly created. */
void session__destroy(struct session *s);

/* session__close - unmap and close without removing anything (readers). */
void session__close(struct session *s);

#endif /* XPUSUP_SUPERVISOR_SESSION_H */
