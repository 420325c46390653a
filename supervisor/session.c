// SPDX-License-Identifier: MIT
#include "supervisor/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/topology.h"
#include "shm/ring.h"

#define PID_FILE "supervisor.pid"
#define CONF_SNAPSHOT "pipeline.conf"

bool session_name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n >= SESSION_NAME_MAX || name[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') || strchr("_.-", name[i])))
			return false;
	return true;
}

int session__paths(struct session *s, const char *name)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	memset(s, 0, sizeof(*s));
	s->dirfd = -1;
	s->lockfd = -1;
	if (!session_name_valid(name))
		return -EINVAL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	if (geteuid() == 0)
		snprintf(s->base, sizeof(s->base), "/run/xpusup");
	else if (xdg && xdg[0] == '/')
		snprintf(s->base, sizeof(s->base), "%s/xpusup", xdg);
	else
		return -ENOENT;
	snprintf(s->dir, sizeof(s->dir), "%s/%s", s->base, name);
	snprintf(s->log, sizeof(s->log), "%s/%s.log", s->base, name);
	return 0;
}

/* Remove every file in the session directory (flat: we create no subdirectories). */
static void empty_dir(int dirfd)
{
	struct dirent *de;
	DIR *d;
	int fd = dup(dirfd);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	rewinddir(d); /* the dup shares its offset with dirfd: it may be at the end already */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

static int write_file(int dirfd, const char *name, const void *data, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static int snapshot_conf(int dirfd, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *in, *mem;
	int c, err;

	in = fopen(path, "re");
	if (!in)
		return -errno;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		fclose(in);
		return -ENOMEM;
	}
	while ((c = getc(in)) != EOF)
		putc(c, mem);
	fclose(in);
	fclose(mem);
	err = write_file(dirfd, CONF_SNAPSHOT, buf, len);
	free(buf);
	return err;
}

/* Lock the directory itself, and make sure it is still the one at s->dir: a supervisor
 * that was removing it when we opened it leaves us a lock on a deleted directory. */
static int lock_dir(struct session *s, pid_t *holder)
{
	struct stat a, b;
	int tries;

	for (tries = 0; tries < 10; tries++) {
		if (mkdir(s->dir, 0700) && errno != EEXIST)
			return -errno;
		s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (s->dirfd < 0)
			return -errno;
		if (flock(s->dirfd, LOCK_EX | LOCK_NB)) {
			if (holder)
				*holder = session__pid(s);
			close(s->dirfd);
			s->dirfd = -1;
			return errno == EWOULDBLOCK ? -EBUSY : -errno;
		}
		if (!fstat(s->dirfd, &a) && !stat(s->dir, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return 0;
		close(s->dirfd);
		s->dirfd = -1;
	}
	return -EAGAIN;
}

int session__create(struct session *s, const struct conf *conf, pid_t *holder)
{
	struct xpu_status_hdr *hdr;
	struct timespec rt;
	char buf[128];
	unsigned int i, k;
	int err;

	if (mkdir(s->base, 0700) && errno != EEXIST)
		return -errno;
	err = lock_dir(s, holder);
	if (err)
		return err;
	if (fchmod(s->dirfd, 0700)) {
		err = -errno;
		goto err_destroy;
	}
	empty_dir(s->dirfd); /* whatever a supervisor killed with -9 left */
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	err = write_file(s->dirfd, PID_FILE, buf, strlen(buf));
	if (err)
		goto err_destroy;
	err = snapshot_conf(s->dirfd, conf->path);
	if (err)
		goto err_destroy;

	s->status = status__create(s->dirfd);
	if (!s->status) {
		err = -errno;
		goto err_destroy;
	}
	hdr = &s->status->hdr;
	hdr->supervisor_pid = (__u32)getpid();
	hdr->shards = conf->shards;
	hdr->heartbeat_ms = conf->heartbeat_ms;
	clock_gettime(CLOCK_REALTIME, &rt);
	hdr->started_realtime_ns = (__u64)rt.tv_sec * 1000000000ull + (__u64)rt.tv_nsec;
	snprintf(hdr->session, sizeof(hdr->session), "%s", s->name);
	snprintf(hdr->config_path, sizeof(hdr->config_path), "%.255s", conf->path);
	for (i = 0; i < conf->n_actors; i++) {
		struct xpu_actor_slot *slot = &s->status->slots[i];

		snprintf(slot->name, sizeof(slot->name), "%s", conf->actors[i].name);
		snprintf(slot->kind, sizeof(slot->kind), "%s", conf->actors[i].kind);
		slot->role = conf->actors[i].role;
		slot->shard = conf->actors[i].shard;
		slot->last_exit_code = -1;
	}
	status_store(&hdr->n_actors, conf->n_actors);
	status_store(&hdr->state, (__u32)XPU_SESSION_STARTING);

	/* The mesh exists before any actor starts: a source never waits for its rings. */
	for (i = 0; i < conf->n_actors; i++) {
		if (conf->actors[i].role != CONF_ROLE_SOURCE)
			continue;
		for (k = 0; k < conf->shards; k++) {
			snprintf(buf, sizeof(buf), XPU_RING_NAME_FMT, conf->actors[i].name, k);
			err = ring__create(s->dirfd, buf, (__u64)conf->ring_kib * 1024, 0);
			if (err)
				goto err_destroy;
		}
	}
	return 0;

err_destroy:
	session__destroy(s);
	return err;
}

pid_t session__pid(const struct session *s)
{
	char path[4300], buf[32] = { 0 };
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" PID_FILE, s->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? (pid_t)atoi(buf) : 0;
}

int session__open(struct session *s)
{
	s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dirfd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	/* A shared lock we can take means no supervisor holds the exclusive one. */
	if (!flock(s->dirfd, LOCK_SH | LOCK_NB)) {
		flock(s->dirfd, LOCK_UN);
		close(s->dirfd);
		s->dirfd = -1;
		return -ENOENT;
	}
	s->status = status__map(s->dirfd, false);
	if (!s->status) {
		int err = -errno;

		close(s->dirfd);
		s->dirfd = -1;
		return err == -ENOENT ? -EAGAIN : err; /* starting: not created yet */
	}
	return 0;
}

void session__destroy(struct session *s)
{
	status__unmap(s->status);
	s->status = NULL;
	if (s->dirfd >= 0) {
		empty_dir(s->dirfd);
		rmdir(s->dir); /* still holding the lock: no one can be using it */
		close(s->dirfd);
		s->dirfd = -1;
	}
}

void session__close(struct session *s)
{
	status__unmap(s->status);
	s->status = NULL;
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
}
