// SPDX-License-Identifier: MIT
/*
 * xpusup record: profile one command with the built-in pipeline (or the user's), from start
 * to exit, and leave the outputs in a folder (docs/record.md).
 *
 * The order matters: the command is forked first and waits on a pipe, so its pid is known
 * when the session starts (the CPU source follows that process tree, `target = command`,
 * through $XPUSUP_RECORD_PID); once every actor is ready the command is let go, so its first
 * instructions are already sampled. When it exits the session is stopped the usual way
 * (sources, correlators, then sinks, which finish their files), and record exits with the
 * command's status.
 */
#include "cli/record.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "actors/sink/sink_options.h"
#include "cli/gpu_env.h"
#include "cli/session_ctl.h"
#include "cli/usage.h"
#include "common/config.h"
#include "shm/inproc.h"
#include "common/paths.h"
#include "common/status.h"
#include "supervisor/session.h"
#include "supervisor/supervisor.h"

#define OUT_DEFAULT "xpusup-out"
/* The timeline of a long run comes in windows, the oldest deleted past the cap: a trace
 * viewer opens one window (about 15-60 MB at a few hundred thousand events a second) where it
 * could not open the hour; a run shorter than a window still leaves one trace.json
 * (docs/record.md says why these values). */
#define RECORD_WINDOW_S "60"
#define RECORD_MAX_MB "1024"
#define TOP_FUNCTIONS 5

static const char usage_record[] =
	"usage: xpusup record [-c PIPELINE.conf] [-o DIR] [-F HZ] [--unwind MODE] [--no-python]\n"
	"                     [--session NAME] -- CMD [ARGS...]\n"
	"\n"
	"Profile CMD from start to exit: start a session, run CMD, stop the session when CMD\n"
	"exits, and leave in DIR the folded stacks and flame graph (flame.folded, flame.html),\n"
	"the timeline (trace.json, for Perfetto UI or speedscope) and statistics (stats.json,\n"
	"stats.txt). Exits with CMD's exit status (128+N when a signal N ended it).\n"
	"\n"
	"A run longer than " RECORD_WINDOW_S
	" s leaves its timeline in windows instead: trace-<UTC start>.json,\n"
	"one a minute, each a whole trace that opens on its own, listed in trace.index.json,\n"
	"the oldest deleted to keep them under " RECORD_MAX_MB " MB (docs/record.md).\n"
	"\n"
	"The built-in pipeline samples CPU stacks (eBPF, cpu-clock) and reads counters (perf\n"
	"events: those this machine has of cycles, instructions, cache and branch misses,\n"
	"task-clock, page faults, context switches, migrations) on CMD and every process it\n"
	"starts, through one correlator into one sink that writes the three outputs; it is\n"
	"written to DIR/pipeline.conf.\n"
	"Without the privileges for BPF or perf events (CAP_BPF, CAP_PERFMON) it goes on without\n"
	"that source and says so. Its cupti source records CMD's GPU activity (CMD gets\n"
	"CUDA_INJECTION64_PATH) and the ranges of programs linked with libxpusup_annotate.\n"
	"\n"
	"  -o, --output DIR     where the outputs go (default ./" OUT_DEFAULT ")\n"
	"  -F, --frequency HZ   CPU samples a second (default 99)\n"
	"  -u, --unwind MODE    how user stacks are unwound: auto (default: dwarf on x86-64),\n"
	"                       dwarf (copies of the stack unwound with the CFI of the files\n"
	"                       mapped: no frame pointers needed) or fp (frame pointers only;\n"
	"                       docs/unwind.md); for the built-in pipeline, -c has its own\n"
	"      --no-python      native frames only: do not read the Python frames of CPython\n"
	"                       3.11 to 3.13 processes (read by default, docs/python.md)\n"
	"  -c, --config FILE    run this pipeline instead of the built-in one; its sinks write\n"
	"                       where its paths say, and `target = command` is CMD's tree\n"
	"  -s, --session NAME   session name (default: record-PID)\n"
	"\n"
	"Example: xpusup record -o out -- ./train --epochs 1\n";

/* The built-in pipeline of design.md section 7. The sources are optional: without the
 * privileges for BPF or perf events the session goes on without them. The cupti source
 * listens on the session's inproc.sock, which CMD finds through XPUSUP_SESSION_DIR: the CUPTI
 * injection library (CUDA_INJECTION64_PATH) sends CMD's GPU activity there, and a program
 * linked with libxpusup_annotate its ranges, without a pipeline of its own. The cpu source's
 * unwind is --unwind's (auto by default: stack copies unwound by the correlator, docs/unwind.md). */
static const char builtin_conf[] =
	"; the built-in pipeline of `xpusup record`, as it ran\n"
	"[source cpu]\n"
	"kind = cpu\n"
	"frequency_hz = %llu\n"
	"unwind = %s\n"
	"python = %s\n"
	"target = command\n"
	"optional = yes\n"
	"\n"
	"[source hw]\n"
	"kind = pmu\n"
	"target = command\n"
	"optional = yes\n"
	"\n"
	"[source gpu]\n"
	"kind = cupti\n"
	"optional = yes\n"
	"\n"
	"[correlator]\n"
	"shards = 1\n"
	"\n"
	"; one sink process runs the three outputs: one receive and one decode\n"
	"; of every batch for all of them (docs/sinks.md, group)\n"
	"[sink outputs]\n"
	"kind = group\n"
	"formats = flame, trace, stats\n"
	"\n"
	"[format flame]\n"
	"kind = folded\n"
	"path = flame.folded\n"
	"\n"
	"[format trace]\n"
	"kind = timeline\n"
	"path = trace.json\n"
	"window_s = " RECORD_WINDOW_S "\n"
	"max_mb = " RECORD_MAX_MB "\n"
	"\n"
	"[format stats]\n"
	"kind = stats\n"
	"path = stats.json\n";

static volatile sig_atomic_t child_pid;

/* SIGTERM and SIGHUP go on to the command, which decides when it ends; so does SIGINT sent
 * to us alone. A Ctrl-C at the terminal already reached the command (same process group). */
static void forward_signal(int sig)
{
	if (child_pid > 0 && (sig != SIGINT || tcgetpgrp(STDIN_FILENO) != getpgrp()))
		kill((pid_t)child_pid, sig);
}

/*
 * Fork CMD, stopped before exec until *go is written to (or closed: then it exits 127).
 * env is applied in CMD only (XPUSUP_SESSION_DIR, where the annotate and CUPTI libraries find
 * the session's in-process socket, docs/inproc.md; the CUDA injection variables): the actors
 * never try to profile into their own session.
 */
static pid_t spawn_waiting(char **cmd, int *go, const struct gpu_env *env)
{
	int pipefd[2];
	pid_t pid;
	char byte;

	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &byte, 1) != 1)
			_exit(127); /* the session did not start: never run */
		close(pipefd[0]);
		if (gpu_env__apply(env))
			_exit(126);
		/* ours is ignored (record.c's start), and an ignored signal stays so across
		 * exec: the command gets the default, as it would without us */
		signal(SIGPIPE, SIG_DFL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "xpusup: unable to run %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pipefd[0]);
	*go = pipefd[1];
	return pid;
}

/* A file execvp can run: executable, and not a folder (which access(X_OK) passes). */
static bool exec_file(const char *path)
{
	struct stat st;

	return !access(path, X_OK) && !stat(path, &st) && !S_ISDIR(st.st_mode);
}

/* Whether execvp would find cmd: checked before a session is started for nothing. */
static bool runnable(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[PATH_MAX];

	if (strchr(cmd, '/'))
		return exec_file(cmd);
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), end == p ? "." : p, cmd) <
			    (int)sizeof(buf) &&
		    exec_file(buf))
			return true;
	}
	return false;
}

static int write_builtin(const char *dir, unsigned long long hz, const char *unwind, bool python,
			 char *path, size_t size)
{
	FILE *f;

	if (snprintf(path, size, "%s/pipeline.conf", dir) >= (int)size)
		return -ENAMETOOLONG;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, builtin_conf, hz, unwind, python ? "yes" : "no");
	if (fclose(f))
		return -errno;
	return 0;
}

/* The problems already on the terminal, per status slot. */
static char shown[XPU_STATUS_MAX_ACTORS][XPU_STATUS_PROBLEM_LEN + 1];

/* What a running actor says is wrong (a source counting without some of its events, a
 * Python interpreter it cannot read): on the terminal, where the session log would hide it,
 * at start and again when the command has ended, each text once. */
static void show_problems(struct session *s)
{
	char problem[XPU_STATUS_PROBLEM_LEN + 1];
	__u32 i, n;

	if (session__open(s))
		return;
	n = s->status->hdr.n_actors;
	for (i = 0; i < n && i < XPU_STATUS_MAX_ACTORS; i++) {
		status__get_problem(&s->status->slots[i], problem, sizeof(problem));
		if (!problem[0] || status_load(&s->status->slots[i].state) != XPU_ACTOR_RUNNING ||
		    !strcmp(problem, shown[i]))
			continue;
		fprintf(stderr, "xpusup: %s: %s\n", s->status->slots[i].name, problem);
		memcpy(shown[i], problem, sizeof(problem));
	}
	session__close(s);
}

struct leaf {
	char name[128];
	unsigned long long weight;
};

/* The functions with the most self time in a folded file: a first answer on the terminal. */
static void show_top(const char *folded)
{
	static struct leaf leaves[1024];
	unsigned long long total = 0, w;
	unsigned int n = 0, i, j, k;
	char line[16384], *sp, *leaf;
	FILE *f = fopen(folded, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sp = strrchr(line, ' ');
		if (!sp || sscanf(sp + 1, "%llu", &w) != 1)
			continue;
		*sp = '\0';
		leaf = strrchr(line, ';');
		leaf = leaf ? leaf + 1 : line;
		total += w;
		for (i = 0; i < n && strncmp(leaves[i].name, leaf, sizeof(leaves[i].name) - 1); i++)
			;
		if (i == n) {
			if (n == sizeof(leaves) / sizeof(leaves[0]))
				continue;
			snprintf(leaves[n].name, sizeof(leaves[n].name), "%.127s", leaf);
			leaves[n++].weight = 0;
		}
		leaves[i].weight += w;
	}
	fclose(f);
	if (!total)
		return;
	fprintf(stderr, "xpusup: hottest functions (self time):\n");
	for (k = 0; k < TOP_FUNCTIONS && k < n; k++) {
		for (j = k, i = k + 1; i < n; i++)
			if (leaves[i].weight > leaves[j].weight)
				j = i;
		struct leaf t = leaves[k];
		leaves[k] = leaves[j];
		leaves[j] = t;
		fprintf(stderr, "  %5.1f%%  %s\n", 100.0 * (double)leaves[k].weight / (double)total,
			leaves[k].name);
	}
}

/* A timeline in windows (DIR/trace.index.json beside the path DIR/trace.json): where they
 * are and how many. false when there is no index. */
/* Whether path was written since this run started (the output folder may hold an earlier
 * run's files under the same names). */
static bool fresh(const char *path, const struct timespec *since, struct stat *st)
{
	return !stat(path, st) &&
	       (st->st_mtim.tv_sec > since->tv_sec ||
		(st->st_mtim.tv_sec == since->tv_sec && st->st_mtim.tv_nsec >= since->tv_nsec));
}

/* The windows of timeline a (path its path), when this run wrote its index. */
static bool show_windows(const struct conf_actor *a, const char *path, const struct timespec *since)
{
	char index[PATH_MAX], *line = NULL;
	struct timeline_options o;
	size_t cap = 0;
	unsigned int n = 0, listed = 0;
	char more[64] = "";
	struct stat st;
	FILE *f;

	if (timeline_index__path(path, index, sizeof(index)) || !fresh(index, since, &st) ||
	    !(f = fopen(index, "r")))
		return false;
	/* this run's windows: opened since it started (the index may also list an earlier
	 * run's, taken over) */
	while (getline(&line, &cap, f) > 0) {
		const char *at = strstr(line, "\"start_ns\":");

		listed += !strncmp(line, "{\"file\":", 8);
		n += !strncmp(line, "{\"file\":", 8) && at &&
		     strtoull(at + 11, NULL, 10) >=
			     (unsigned long long)since->tv_sec * 1000000000ull +
				     (unsigned long long)since->tv_nsec;
	}
	free(line);
	fclose(f);
	/* its own window_s: a -c pipeline's may be any */
	if (conf_actor__options(a, &o, sizeof(o)))
		o.window_s = 0;
	if (listed > n)
		snprintf(more, sizeof(more), "; %u listed with an earlier run's", listed);
	fprintf(stderr,
		"  %-10s %s (%u windows of up to %llu s, each a trace of its own%s,\n  %-10s beside "
		"it as %.*s-<UTC start>.json)\n",
		"timeline", index, n, (unsigned long long)o.window_s, more, "",
		(int)(strlen(index) - strlen(".index.json")), index);
	return true;
}

/* Where one sink or format a wrote since this run started, as the user will look for it. */
static void show_output(const struct conf *conf, const struct conf_actor *a,
			const struct timespec *since)
{
	char path[PATH_MAX], text[PATH_MAX];
	struct stat st;
	size_t len;

	if (conf_actor__path(conf, a, "path", path, sizeof(path)))
		return;
	/* windows when this run closed one, whatever an earlier run left under path */
	if (!strcmp(a->kind, "timeline") && show_windows(a, path, since))
		return;
	if (!fresh(path, since, &st))
		fprintf(stderr, "  %-10s %s (not written: see the session log)\n", a->kind, path);
	else
		fprintf(stderr, "  %-10s %s (%lld bytes)\n", a->kind, path, (long long)st.st_size);
	len = strlen(path);
	if (!strcmp(a->kind, "folded") && len > 7 && !strcmp(path + len - 7, ".folded") &&
	    snprintf(text, sizeof(text), "%.*s.html", (int)(len - 7), path) < (int)sizeof(text) &&
	    fresh(text, since, &st))
		fprintf(stderr, "  %-10s %s (open it in a browser)\n", "", text);
	if (!strcmp(a->kind, "stats") && len > 5 && !strcmp(path + len - 5, ".json") &&
	    snprintf(text, sizeof(text), "%.*s.txt", (int)(len - 5), path) < (int)sizeof(text) &&
	    fresh(text, since, &st))
		fprintf(stderr, "  %-10s %s\n", "", text);
}

/* The i-th of conf's outputs: its sinks, then its [format] sections (a group sink's). */
static const struct conf_actor *output_at(const struct conf *conf, unsigned int i)
{
	unsigned int k;

	for (k = 0; k < conf->n_actors; k++)
		if (conf->actors[k].role == CONF_ROLE_SINK && !i--)
			return &conf->actors[k];
	return i < conf->n_formats ? &conf->formats[i] : NULL;
}

/* Where each sink and format of conf wrote, then the top of the flame graph. */
static void show_outputs(const struct conf *conf, const struct timespec *since)
{
	const struct conf_actor *a;
	char path[PATH_MAX];
	unsigned int i;

	fprintf(stderr, "xpusup: outputs:\n");
	for (i = 0; (a = output_at(conf, i)); i++)
		show_output(conf, a, since);
	for (i = 0; (a = output_at(conf, i)); i++) {
		if (!strcmp(a->kind, "folded") &&
		    !conf_actor__path(conf, a, "path", path, sizeof(path))) {
			show_top(path);
			break;
		}
	}
}

int record_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "unwind", required_argument, NULL, 'u' },
		{ "no-python", no_argument, NULL, 'P' },
		{ "session", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = OUT_DEFAULT, *conf_path = NULL, *unwind = "auto";
	char *progs[CONF_MAX_ACTORS] = { 0 }, *dir = NULL;
	char name[64], conf_buf[PATH_MAX], envpid[32];
	unsigned long long hz = 99;
	bool python = true;
	struct conf *conf = NULL;
	int c, err, code, status = 0, go = -1;
	/* SA_RESTART: a forwarded signal must not cut short our own waits */
	struct sigaction sa = { .sa_handler = forward_signal, .sa_flags = SA_RESTART };
	struct timespec t0, t1, started;
	const struct conf_actor *in_process;
	struct session s = { 0 };
	struct gpu_env env;
	unsigned int i;
	pid_t pid;

	snprintf(name, sizeof(name), "record-%d", (int)getpid());
	/* what is older in the output is not ours (a second back: file times are coarse,
	 * and no output of ours is written within a second of this) */
	clock_gettime(CLOCK_REALTIME, &started);
	started.tv_sec--;
	/* a closed terminal or pipe must not kill us between start and stop */
	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "+c:o:F:u:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf_path = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'F':
			if (conf_parse_uint(optarg, 1, 100000, &hz)) {
				return cli__usage_error(
					"record", "bad --frequency '%s': 1..100000 Hz", optarg);
			}
			break;
		case 'u':
			if (strcmp(optarg, "auto") && strcmp(optarg, "dwarf") &&
			    strcmp(optarg, "fp")) {
				return cli__usage_error(
					"record", "bad --unwind '%s': auto, dwarf or fp", optarg);
			}
			unwind = optarg;
			break;
		case 'P':
			python = false;
			break;
		case 's':
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'h':
			fputs(usage_record, stdout);
			return 0;
		default:
			return cli__usage_error("record", "%s", "bad option");
		}
	}
	if (optind >= argc) {
		return cli__usage_error("record", "%s",
					"no command given (xpusup record -- CMD [ARGS...])");
	}
	if (session__paths(&s, name) == -EINVAL) {
		return cli__usage_error("record", "bad session name '%s'", name);
	}
	if (!runnable(argv[optind])) {
		fprintf(stderr,
			"xpusup: unable to record: %s: command not found or not executable\n",
			argv[optind]);
		return 127; /* as a shell says it */
	}

	code = XPUSUP_EXIT_SYSTEM;
	if (!conf_path) {
		err = xpu_mkdir_p(out, 0755);
		dir = err ? NULL : realpath(out, NULL);
		if (!dir) {
			fprintf(stderr, "xpusup: unable to record: cannot make %s: %s\n", out,
				strerror(err ? -err : errno));
			return XPUSUP_EXIT_SYSTEM;
		}
		err = write_builtin(dir, hz, unwind, python, conf_buf, sizeof(conf_buf));
		if (err) {
			fprintf(stderr,
				"xpusup: unable to record: cannot write %s/pipeline.conf: %s\n",
				dir, strerror(-err));
			goto out;
		}
		conf_path = conf_buf;
	}
	err = conf__load(conf_path, &conf, stderr);
	if (err) {
		code = err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
		goto out;
	}
	if (supervisor_find_programs(conf, progs))
		goto out;

	/* With -c, the GPU environment only when the pipeline has a cupti source to take it. */
	in_process = conf__in_process_source(conf);
	gpu_env__plan(&env, s.dir, in_process && !strcmp(in_process->kind, "cupti"));
	pid = spawn_waiting(argv + optind, &go, &env);
	if (pid < 0) {
		fprintf(stderr, "xpusup: unable to record: fork: %s\n", strerror(errno));
		goto out;
	}
	child_pid = pid;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The actors inherit it from the supervisor: `target = command` is this tree. */
	snprintf(envpid, sizeof(envpid), "%d", (int)pid);
	setenv("XPUSUP_RECORD_PID", envpid, 1);
	/* the supervisor stops the session by itself should we die before stopping it */
	snprintf(envpid, sizeof(envpid), "%d", (int)getpid());
	setenv("XPUSUP_OWNER_PID", envpid, 1);
	setenv("XPUSUP_SESSION", name, 1);

	fprintf(stderr, "xpusup: starting session %s...\n", name);
	code = session_ctl__start(conf, progs, &s, name, true);
	if (code) {
		close(go); /* the command never runs */
		waitpid(pid, NULL, 0);
		goto out;
	}
	show_problems(&s);
	fprintf(stderr, "xpusup: recording %s (pid %d); log %s\n", argv[optind], (int)pid, s.log);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (write(go, "g", 1) != 1)
		fprintf(stderr, "xpusup: unable to start %s: %s\n", argv[optind], strerror(errno));
	close(go);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	show_problems(&s);
	if (WIFSIGNALED(status))
		fprintf(stderr, "xpusup: %s ended by signal %d after %.2f s\n", argv[optind],
			WTERMSIG(status),
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	else
		fprintf(stderr, "xpusup: %s exited with status %d after %.2f s\n", argv[optind],
			WEXITSTATUS(status),
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);

	code = session_ctl__stop(name, 120);
	if (code) {
		fprintf(stderr, "xpusup: the outputs may be incomplete (see %s)\n", s.log);
		goto out;
	}
	show_outputs(conf, &started);
	code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
out:
	for (i = 0; i < CONF_MAX_ACTORS; i++)
		free(progs[i]);
	conf__free(conf);
	free(dir);
	return code;
}
