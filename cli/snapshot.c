// SPDX-License-Identifier: MIT
/*
 * xpusup snapshot: the request to a flight recorder (docs/timeline.md, "Flight recorder").
 *
 * The sinks to ask are the timeline sinks with mode = ring in the session's own config
 * snapshot. For each: a request file in the session directory (common/topology.h), renamed
 * into place so the sink never reads half of it, then SIGUSR1 to the sink's pid; the sink
 * answers in its reply file as the snapshot starts and again when it is written or failed.
 * Both files are named by an id of ours (our pid and the time), so two commands asking at
 * once each get their own answer.
 */
#include "cli/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "actors/sink/sink_options.h"
#include "cli/usage.h"
#include "common/config.h"
#include "common/status.h"
#include "common/topology.h"
#include "supervisor/session.h"
#include "supervisor/supervisor.h"

#define POLL_MS 20

const char snapshot_usage[] =
	"usage: xpusup snapshot [--session NAME] [--sink NAME] [-o FILE] [--timeout S]\n"
	"\n"
	"Ask the session's flight recorders (timeline sinks with mode = ring) to write the\n"
	"events they keep, the last keep_s seconds before the newest, as a Chrome trace, and\n"
	"wait until it is written. The sink goes on recording meanwhile. Sending the sink\n"
	"SIGUSR1 does the same without waiting; so does a trigger of its config, and stop.\n"
	"\n"
	"  -s, --session NAME  session name (default: default)\n"
	"      --sink NAME     only this sink (default: every timeline sink with mode = ring)\n"
	"  -o, --output FILE   write here (one sink only); default: beside the sink's path,\n"
	"                      PATHSTEM-snapshot-<UTC time>.json\n"
	"  -t, --timeout S     give up waiting after S seconds (default 120)\n"
	"\n"
	"Prints the file of each snapshot. Exit status: 0 written, 100 usage or no flight\n"
	"recorder in the session, 111 no such session, or the snapshot failed (why is printed\n"
	"and shown in `xpusup status`), e.g. because one is being written already.\n";

struct target {
	const struct conf_actor *actor;
	pid_t pid;
	int slot; /* its status slot, -1: none */
	char id[64];
	int state; /* 0 asked, 1 started, 2 done, -1 failed */
	/* the -o file as it was before the request (0: none): the sink renames a new one into
	 * place, a new inode (file times are too coarse to tell) */
	dev_t out_dev;
	ino_t out_ino;
};

static volatile sig_atomic_t interrupted; /* SIGINT or SIGTERM: stop waiting, clean up */

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static bool is_ring(const struct conf_actor *a)
{
	struct timeline_options o;

	return a->role == CONF_ROLE_SINK && !strcmp(a->kind, "timeline") &&
	       !conf_actor__options(a, &o, sizeof(o)) && o.mode == TIMELINE_RING;
}

/* Write the request of t and signal the sink. 0 or -errno (said). */
static int ask(const struct session *s, struct target *t, const char *out)
{
	char name[192], tmp[208];
	struct timespec now;
	struct stat st;
	FILE *f;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (out && !stat(out, &st)) {
		t->out_dev = st.st_dev;
		t->out_ino = st.st_ino;
	}
	snprintf(t->id, sizeof(t->id), "%d-%lld%09ld", (int)getpid(), (long long)now.tv_sec,
		 now.tv_nsec);
	snprintf(name, sizeof(name), XPU_SNAPSHOT_REQ_FMT "%s", t->actor->name, t->id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "xpusup: unable to snapshot: cannot write in %s: %s\n", s->dir,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	fprintf(f, "%s\n", out ? out : "");
	if (fclose(f) || renameat(s->dirfd, tmp, s->dirfd, name)) {
		fprintf(stderr, "xpusup: unable to snapshot: cannot write in %s: %s\n", s->dir,
			strerror(errno));
		unlinkat(s->dirfd, tmp, 0);
		return -EIO;
	}
	if (sigqueue(t->pid, SIGUSR1, (union sigval){ .sival_int = XPU_SNAPSHOT_SIGVAL })) {
		fprintf(stderr, "xpusup: unable to snapshot: sink %s (pid %d): %s\n",
			t->actor->name, (int)t->pid, strerror(errno));
		unlinkat(s->dirfd, name, 0);
		return -errno;
	}
	return 0;
}

/* Read t's reply and say what changed; the reply file goes once it is final. */
static void poll_reply(const struct session *s, struct target *t)
{
	char name[192], buf[8192], *path, *words, *nl;
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), XPU_SNAPSHOT_REPLY_FMT, t->actor->name, t->id);
	fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	path = strchr(buf, '\n');
	if (!path)
		return;
	*path++ = 0;
	words = strchr(path, '\n');
	if (!words)
		return;
	*words++ = 0;
	nl = strchr(words, '\n');
	if (nl)
		*nl = 0;
	if (!strcmp(buf, "started") && t->state == 0) {
		t->state = 1;
		fprintf(stderr, "xpusup: sink %s is writing its snapshot...\n", t->actor->name);
	} else if (!strcmp(buf, "done")) {
		t->state = 2;
		printf("%s\n", path);
		fprintf(stderr, "xpusup: snapshot of sink %s written: %s (%s)\n", t->actor->name,
			path, words);
	} else if (!strcmp(buf, "error")) {
		t->state = -1;
		fprintf(stderr, "xpusup: unable to snapshot sink %s: %s\n", t->actor->name, words);
	}
	if (t->state == 2 || t->state == -1)
		unlinkat(s->dirfd, name, 0);
}

/* t's request and reply files, once the wait is over without an answer: a request left
 * there would be served by the sink's next signal, into its file, and its reply would stay
 * until stop. */
static void forget(const struct session *s, const struct target *t)
{
	char name[192];

	snprintf(name, sizeof(name), XPU_SNAPSHOT_REQ_FMT "%s", t->actor->name, t->id);
	unlinkat(s->dirfd, name, 0);
	snprintf(name, sizeof(name), XPU_SNAPSHOT_REPLY_FMT, t->actor->name, t->id);
	unlinkat(s->dirfd, name, 0);
}

/* t's sink is gone (stopped, exited, restarted) while its answer was awaited: its reply may
 * have gone with the session's folder. The file asked for is there, a new one since the
 * request, when the sink wrote it (it is renamed into place whole): then it is done. */
static bool sink_gone(const struct session *s, struct target *t, const char *out)
{
	__u32 state = status_load(&s->status->slots[t->slot].state);
	struct stat st;

	if (status_load(&s->status->slots[t->slot].pid) == (__u32)t->pid &&
	    (state == XPU_ACTOR_RUNNING || state == XPU_ACTOR_STOPPING) &&
	    (kill(t->pid, 0) == 0 || errno != ESRCH))
		return false;
	poll_reply(s, t); /* it may have answered just before */
	if (t->state == 2 || t->state == -1)
		return true;
	if (out && !stat(out, &st) && (st.st_ino != t->out_ino || st.st_dev != t->out_dev)) {
		t->state = 2;
		printf("%s\n", out);
		fprintf(stderr,
			"xpusup: snapshot of sink %s written: %s (the sink stopped before its "
			"answer could be read)\n",
			t->actor->name, out);
		return true;
	}
	t->state = -1;
	fprintf(stderr,
		"xpusup: unable to snapshot sink %s: it ended or was restarted before answering "
		"(now %s)\n",
		t->actor->name, xpu_actor_state__name(state));
	return true;
}

int snapshot_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "sink", required_argument, NULL, 'k' },
		{ "output", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = SESSION_DEFAULT, *only = NULL, *out = NULL;
	char path[4300], cwd[PATH_MAX], outabs[PATH_MAX + 4200];
	unsigned long long timeout_s = 120;
	struct target t[CONF_MAX_ACTORS];
	struct conf *conf = NULL;
	struct session s;
	unsigned int n = 0, i, j, pending;
	__u32 state;
	int c, code = XPUSUP_EXIT_SYSTEM, err;
	__u64 waited = 0;

	while ((c = getopt_long(argc, argv, "s:o:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			name = optarg;
			break;
		case 'k':
			only = optarg;
			break;
		case 'o':
			out = optarg;
			/* the request is a line: its path must be one */
			if (strchr(out, '\n') || !*out)
				return cli__usage_error("snapshot",
							"bad -o: an empty name, or one with a line "
							"break");
			break;
		case 't':
			if (conf_parse_uint(optarg, 1, 86400, &timeout_s))
				return cli__usage_error(
					"snapshot", "bad --timeout '%s': seconds 1..86400", optarg);
			break;
		case 'h':
			fputs(snapshot_usage, stdout);
			return 0;
		default:
			return cli__usage_error("snapshot", "%s", "bad option");
		}
	}
	if (optind != argc)
		return cli__usage_error("snapshot", "unexpected argument '%s'", argv[optind]);
	err = session__paths(&s, name);
	if (err == -EINVAL)
		return cli__usage_error("snapshot", "bad session name '%s'", name);
	if (err) {
		fprintf(stderr,
			"xpusup: unable to snapshot: not root and XDG_RUNTIME_DIR is not set\n");
		return XPUSUP_EXIT_SYSTEM;
	}
	err = session__open(&s);
	if (err) {
		if (err == -EAGAIN)
			fprintf(stderr,
				"xpusup: unable to snapshot: session %s is still starting\n",
				s.name);
		else
			fprintf(stderr, "xpusup: unable to snapshot: no session '%s' is running\n",
				s.name);
		return XPUSUP_EXIT_SYSTEM;
	}
	/* the sink writes the file: a relative name is ours, not its working folder's */
	if (out && out[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "xpusup: unable to snapshot: getcwd: %s\n",
				strerror(errno));
			goto close;
		}
		snprintf(outabs, sizeof(outabs), "%s/%s", cwd, out);
		out = outabs;
	}
	snprintf(path, sizeof(path), "%s/pipeline.conf", s.dir);
	if (conf__load(path, &conf, stderr))
		goto close;
	for (i = 0; i < conf->n_actors; i++) {
		const struct conf_actor *a = &conf->actors[i];

		if (!is_ring(a) || (only && strcmp(a->name, only)))
			continue;
		t[n] = (struct target){ .actor = a, .slot = -1 };
		for (j = 0; j < s.status->hdr.n_actors && j < XPU_STATUS_MAX_ACTORS; j++) {
			if (strncmp(s.status->slots[j].name, a->name,
				    sizeof(s.status->slots[j].name)))
				continue;
			/* only a sink that is running or stopping (it answers what comes
			 * while it stops): its pid is published at the fork, before it
			 * handles SIGUSR1, whose default would end it and its ring */
			t[n].slot = (int)j;
			state = status_load(&s.status->slots[j].state);
			if (state == XPU_ACTOR_RUNNING || state == XPU_ACTOR_STOPPING)
				t[n].pid = (pid_t)status_load(&s.status->slots[j].pid);
		}
		n++;
	}
	if (!n) {
		code = XPUSUP_EXIT_USAGE;
		if (only)
			fprintf(stderr,
				"xpusup: unable to snapshot: session %s has no timeline sink %s "
				"with mode = ring\n",
				s.name, only);
		else
			fprintf(stderr,
				"xpusup: unable to snapshot: session %s has no flight recorder "
				"(a [sink] with kind = timeline and mode = ring; docs/timeline.md)\n",
				s.name);
		goto close;
	}
	if (out && n > 1) {
		code = cli__usage_error("snapshot",
					"-o names one file, and %s has several flight recorders: "
					"choose one with --sink",
					s.name);
		goto close;
	}
	for (i = 0; i < n; i++) {
		if (!t[i].pid) {
			fprintf(stderr,
				"xpusup: unable to snapshot: sink %s is not running (%s; see "
				"`xpusup status`)\n",
				t[i].actor->name,
				t[i].slot < 0 ? "not started" :
						xpu_actor_state__name(status_load(
							&s.status->slots[t[i].slot].state)));
			t[i].state = -1;
		} else if (ask(&s, &t[i], out)) {
			t[i].state = -1;
		}
	}
	sigaction(SIGINT, &(struct sigaction){ .sa_handler = on_interrupt }, NULL);
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_interrupt }, NULL);
	do {
		pending = 0;
		for (i = 0; i < n; i++) {
			if (t[i].state == 0 || t[i].state == 1)
				poll_reply(&s, &t[i]);
			if ((t[i].state == 0 || t[i].state == 1) && sink_gone(&s, &t[i], out))
				forget(&s, &t[i]);
			pending += t[i].state == 0 || t[i].state == 1;
		}
		if (!pending || interrupted)
			break;
		usleep(POLL_MS * 1000);
		waited += POLL_MS;
	} while (waited < timeout_s * 1000);
	code = 0;
	for (i = 0; i < n; i++) {
		if (t[i].state == 0 || t[i].state == 1) {
			if (interrupted)
				fprintf(stderr,
					"xpusup: unable to snapshot sink %s: interrupted before its "
					"answer\n",
					t[i].actor->name);
			else
				fprintf(stderr,
					"xpusup: unable to snapshot sink %s: no answer within %llu s "
					"(see %s)\n",
					t[i].actor->name, timeout_s, s.log);
			forget(&s, &t[i]);
		}
		if (t[i].state != 2)
			code = XPUSUP_EXIT_SYSTEM;
	}
close:
	conf__free(conf);
	session__close(&s);
	return code;
}
