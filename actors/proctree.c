// SPDX-License-Identifier: MIT
#include "actors/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parent of pid from /proc/PID/stat, or 0. comm may hold spaces and ')': the fields
 * after the last ')' are the fixed ones. */
static __u32 parent_of(__u32 pid)
{
	char path[64], buf[512], *p;
	unsigned int ppid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %u", &ppid) != 1)
		return 0;
	return ppid;
}

int proctree__walk(__u32 root, proctree_fn fn, void *ctx)
{
	struct proc {
		__u32 pid, ppid;
		bool in;
	} *procs = NULL;
	size_t n = 0, cap = 0, i, j;
	struct dirent *de;
	bool changed;
	int err = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned long pid = strtoul(de->d_name, NULL, 10);

		if (!pid)
			continue;
		if (n == cap) {
			void *grown = realloc(procs, (cap = cap ? 2 * cap : 256) * sizeof(*procs));

			if (!grown)
				break;
			procs = grown;
		}
		procs[n].pid = (__u32)pid;
		procs[n].ppid = parent_of((__u32)pid);
		procs[n].in = procs[n].pid == root;
		n++;
	}
	closedir(d);
	/* Mark children of marked processes until nothing changes: fine for the few thousand
	 * processes of a host, and it needs no order in /proc. */
	do {
		changed = false;
		for (i = 0; i < n && !err; i++) {
			if (procs[i].in)
				continue;
			for (j = 0; j < n; j++) {
				if (procs[j].in && procs[j].pid == procs[i].ppid) {
					procs[i].in = changed = true;
					err = fn(procs[i].pid, ctx);
					break;
				}
			}
		}
	} while (changed && !err);
	free(procs);
	return err;
}

int proctree__resolve(struct conf_target *t, char *why, size_t size)
{
	const char *env = getenv("XPUSUP_RECORD_PID");
	unsigned long long pid;
	unsigned int i;
	char path[64];

	if (t->command && !t->n_pids) {
		/* the command `xpusup record` runs, waiting for the session to be ready */
		if (conf_parse_uint(env ? env : "", 1, 0x3fffffff, &pid)) {
			snprintf(why, size,
				 "target = command is for sessions of `xpusup record` "
				 "(XPUSUP_RECORD_PID is not set)");
			return -EINVAL;
		}
		t->pids[t->n_pids++] = (unsigned int)pid;
	}
	for (i = 0; i < t->n_pids; i++) {
		snprintf(path, sizeof(path), "/proc/%u", t->pids[i]);
		if (access(path, F_OK)) {
			snprintf(why, size, "unable to follow pid %u: no such process", t->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}
