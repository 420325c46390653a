// SPDX-License-Identifier: MIT
/*
 * xpusup: the command line. Exit codes: 0 success, 100 usage or configuration error,
 * 111 system failure. Errors read "xpusup: unable to <verb>: <reason>".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "cli/check.h"
#include "cli/gpu_env.h"
#include "cli/record.h"
#include "cli/session_ctl.h"
#include "cli/snapshot.h"
#include "cli/status_cmd.h"
#include "cli/subscribe.h"
#include "cli/usage.h"
#include "common/config.h"
#include "supervisor/session.h"
#include "supervisor/supervisor.h"

static const char usage_main[] =
	"usage: xpusup COMMAND [OPTIONS]\n"
	"\n"
	"Profile programs that use the CPU and NVIDIA GPUs together: which CPU code launched\n"
	"the GPU work that takes the time, and what the CPU and hardware did meanwhile.\n"
	"\n"
	"Commands:\n"
	"  start PIPELINE.conf   start a session running the pipeline in PIPELINE.conf\n"
	"  stop                  stop a session: sources first, so sinks finalise their files\n"
	"  status                actors, rings and counters of a running session\n"
	"  record -- CMD         profile CMD from start to exit with the built-in pipeline\n"
	"  run -- CMD            run CMD attached to a running session (GPU activity, ranges)\n"
	"  subscribe URL...      receive sessions' events from their publish sinks (many hosts)\n"
	"  check TRACE.json      check a trace's invariants: order, streams, nesting, flows\n"
	"  snapshot              write what a session's flight recorder (timeline ring) keeps\n"
	"\n"
	"`xpusup COMMAND --help` describes each command. Exit status: 0 success,\n"
	"100 usage or configuration error, 111 system failure.\n"
	"Documentation: README.md, docs/pipeline.md, docs/supervisor.md, docs/sinks.md.\n";

static const char usage_start[] =
	"usage: xpusup start PIPELINE.conf [--session NAME] [--foreground] [--check]\n"
	"\n"
	"Validate PIPELINE.conf completely, then start a supervisor that starts its actors\n"
	"(sinks, then correlators, then sources), restarts them by the configured policy and\n"
	"keeps the session until `xpusup stop`. Returns once every actor is ready.\n"
	"\n"
	"  -s, --session NAME  session name (default: default); its directory is\n"
	"                      /run/xpusup/NAME as root, $XDG_RUNTIME_DIR/xpusup/NAME otherwise\n"
	"  -f, --foreground    supervise in this process, logging to stderr, until SIGINT/SIGTERM\n"
	"  -c, --check         only validate PIPELINE.conf and the actor programs\n"
	"\n"
	"Configuration errors are printed as FILE:LINE: message (exit 100). The supervisor of a\n"
	"background session logs to /run/xpusup/NAME.log (or the $XDG_RUNTIME_DIR equivalent).\n";

static const char usage_stop[] =
	"usage: xpusup stop [--session NAME] [--timeout SECONDS]\n"
	"\n"
	"Ask the session's supervisor to stop (SIGTERM) and wait until it has: sources stop\n"
	"first, then correlators, then sinks, each within its shutdown_timeout_ms (then\n"
	"SIGKILL). Nothing is left behind: no process, ring or status file.\n"
	"\n"
	"  -s, --session NAME  session name (default: default)\n"
	"  -t, --timeout S     give up waiting after S seconds (default 60)\n";

static const char usage_status[] =
	"usage: xpusup status [--session NAME] [--json] [--watch [--interval MS]]\n"
	"\n"
	"Show the session's actors (kind, role, state, pid, restarts, last exit, uptime), its\n"
	"rings (records produced, consumed, lost by cause, corrupt, fill) and the counters each\n"
	"actor publishes.\n"
	"\n"
	"  -s, --session NAME  session name (default: default)\n"
	"  -j, --json          one JSON object (see docs/supervisor.md for the fields)\n"
	"  -w, --watch         redraw in place every interval until Ctrl-C\n"
	"  -i, --interval MS   redraw interval for --watch (default 1000)\n";

static const char usage_run[] =
	"usage: xpusup run [--session NAME] -- CMD [ARGS...]\n"
	"\n"
	"Run CMD attached to a running session whose pipeline has a cupti or inproc source:\n"
	"CMD's GPU activity (through the CUPTI injection library) and the ranges of\n"
	"libxpusup_annotate go into that session, beside whatever else it records. CMD replaces\n"
	"xpusup (exec), so its exit status is CMD's; the session goes on after it.\n"
	"\n"
	"CMD gets XPUSUP_SESSION_DIR (the session's directory) and, with a cupti source,\n"
	"CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH (the CUPTI injection library; one you\n"
	"set yourself is kept, and then GPU activity is not recorded).\n"
	"\n"
	"  -s, --session NAME  session name (default: default)\n"
	"\n"
	"Exit status: CMD's; 127 when CMD is not found, 126 when it cannot be run; 100 when the\n"
	"session has no in-process source; 111 when no session of that name is running or its\n"
	"in-process source failed.\n"
	"Example: xpusup start gpu.conf; xpusup run -- python train.py; xpusup stop\n";

static int cmd_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = SESSION_DEFAULT;
	char *progs[CONF_MAX_ACTORS] = { 0 }, *conf_arg;
	int foreground = 0, check = 0, c, code, err;
	struct conf *conf = NULL;
	struct session s;
	pid_t holder = 0;
	unsigned int i;

	while ((c = getopt_long(argc, argv, "s:fch", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			name = optarg;
			break;
		case 'f':
			foreground = 1;
			break;
		case 'c':
			check = 1;
			break;
		case 'h':
			fputs(usage_start, stdout);
			return 0;
		default:
			return cli__usage_error("start", "%s", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli__usage_error("start", "%s", "expected one PIPELINE.conf");
	if (session__paths(&s, name) == -EINVAL)
		return cli__usage_error("start",
					"bad session name '%s': use letters, digits, _ . -", name);
	/* An absolute path, so status shows where the config came from wherever it runs. */
	conf_arg = realpath(argv[optind], NULL);
	err = conf__load(conf_arg ? conf_arg : argv[optind], &conf, stderr);
	free(conf_arg);
	if (err)
		return err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
	code = XPUSUP_EXIT_SYSTEM;
	if (supervisor_find_programs(conf, progs))
		goto out;
	if (check) {
		printf("%s: ok: %u actors", conf->path, conf->n_actors);
		if (conf->n_formats) /* [format] sections: run by group sinks, not actors */
			printf(", %u formats", conf->n_formats);
		printf(", correlator shards: %u\n", conf->shards);
		code = 0;
		goto out;
	}
	if (session__paths(&s, name)) {
		fprintf(stderr,
			"xpusup: unable to start: not root and XDG_RUNTIME_DIR is not set\n");
		goto out;
	}

	if (foreground) {
		err = session__create(&s, conf, &holder);
		if (err) {
			if (err == -EBUSY)
				fprintf(stderr,
					"xpusup: unable to start: session %s is already "
					"running (pid %d)\n",
					s.name, (int)holder);
			else
				fprintf(stderr, "xpusup: unable to start: %s: %s\n", s.dir,
					strerror(-err));
			goto out;
		}
		code = supervisor_run(&s, conf, progs, -1);
		session__destroy(&s);
		goto out;
	}

	code = session_ctl__start(conf, progs, &s, name, false);
out:
	for (i = 0; i < CONF_MAX_ACTORS; i++)
		free(progs[i]);
	conf__free(conf);
	return code;
}

static int cmd_stop(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = SESSION_DEFAULT;
	unsigned long long timeout_s = 60;
	struct session s;
	int c;

	while ((c = getopt_long(argc, argv, "s:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			name = optarg;
			break;
		case 't':
			if (conf_parse_uint(optarg, 1, 86400, &timeout_s))
				return cli__usage_error(
					"stop", "bad --timeout '%s': seconds 1..86400", optarg);
			break;
		case 'h':
			fputs(usage_stop, stdout);
			return 0;
		default:
			return cli__usage_error("stop", "%s", "bad option");
		}
	}
	if (optind != argc)
		return cli__usage_error("stop", "unexpected argument '%s'", argv[optind]);
	if (session__paths(&s, name) == -EINVAL)
		return cli__usage_error("stop", "bad session name '%s'", name);
	return session_ctl__stop(name, timeout_s);
}

static int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = SESSION_DEFAULT;
	unsigned long long interval = 1000;
	int c, json = 0, watch = 0;

	while ((c = getopt_long(argc, argv, "s:jwi:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			name = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'w':
			watch = 1;
			break;
		case 'i':
			if (conf_parse_uint(optarg, 50, 3600000, &interval))
				return cli__usage_error(
					"status", "bad --interval '%s': ms 50..3600000", optarg);
			break;
		case 'h':
			fputs(usage_status, stdout);
			return 0;
		default:
			return cli__usage_error("status", "%s", "bad option");
		}
	}
	if (optind != argc)
		return cli__usage_error("status", "unexpected argument '%s'", argv[optind]);
	return status_cmd(name, json, watch, (unsigned int)interval);
}

/* The in-process source of the running session s (opened): NULL, having said why, when it
 * has none or it is not running; *code is then the exit status. The caller frees *conf. */
static const struct conf_actor *run_source(struct session *s, struct conf **conf, int *code)
{
	const struct conf_actor *src;
	char path[4300], problem[XPU_STATUS_PROBLEM_LEN + 1];
	__u32 i, state;

	*code = XPUSUP_EXIT_SYSTEM;
	/* the snapshot the supervisor validated and the actors read */
	snprintf(path, sizeof(path), "%s/pipeline.conf", s->dir);
	if (conf__load(path, conf, stderr))
		return NULL;
	src = conf__in_process_source(*conf);
	if (!src) {
		fprintf(stderr,
			"xpusup: unable to run: session %s has no cupti or inproc source, so the "
			"command would send it nothing (add a [source gpu] with kind = cupti to its "
			"pipeline)\n",
			s->name);
		*code = XPUSUP_EXIT_USAGE;
		return NULL;
	}
	for (i = 0; i < s->status->hdr.n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		if (strncmp(s->status->slots[i].name, src->name, sizeof(s->status->slots[i].name)))
			continue;
		/* a source starting or in its restart backoff is back soon (the command's
		 * library connects once, at load: it may miss it, but it runs); a failed,
		 * exited or stopped one is gone for this session */
		state = status_load(&s->status->slots[i].state);
		if (state != XPU_ACTOR_FAILED && state != XPU_ACTOR_EXITED &&
		    state != XPU_ACTOR_STOPPED)
			break;
		status__get_problem(&s->status->slots[i], problem, sizeof(problem));
		fprintf(stderr,
			"xpusup: unable to run: source %s of session %s is not running (%s%s%s; "
			"see %s)\n",
			src->name, s->name, xpu_actor_state__name(state), problem[0] ? ": " : "",
			problem, s->log);
		return NULL;
	}
	return src;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = SESSION_DEFAULT;
	const struct conf_actor *src;
	struct conf *conf = NULL;
	struct gpu_env env;
	struct session s;
	int c, err, code;

	/* '+': CMD's own options are CMD's, with or without "--" */
	while ((c = getopt_long(argc, argv, "+s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			name = optarg;
			break;
		case 'h':
			fputs(usage_run, stdout);
			return 0;
		default:
			return cli__usage_error("run", "%s", "bad option");
		}
	}
	if (optind >= argc)
		return cli__usage_error("run", "%s",
					"no command given (xpusup run -- CMD [ARGS...])");
	err = session__paths(&s, name);
	if (err == -EINVAL)
		return cli__usage_error("run", "bad session name '%s'", name);
	if (err) {
		fprintf(stderr, "xpusup: unable to run: not root and XDG_RUNTIME_DIR is not set\n");
		return XPUSUP_EXIT_SYSTEM;
	}
	err = session__open(&s);
	if (err == -EAGAIN) {
		fprintf(stderr, "xpusup: unable to run: session %s is still starting\n", s.name);
		return XPUSUP_EXIT_SYSTEM;
	}
	if (err) {
		fprintf(stderr,
			"xpusup: unable to run: no session '%s' is running (start one with `xpusup "
			"start PIPELINE.conf%s%s`)\n",
			s.name, strcmp(name, SESSION_DEFAULT) ? " --session " : "",
			strcmp(name, SESSION_DEFAULT) ? name : "");
		return XPUSUP_EXIT_SYSTEM;
	}
	src = run_source(&s, &conf, &code);
	if (src)
		gpu_env__plan(&env, s.dir, !strcmp(src->kind, "cupti"));
	conf__free(conf);
	session__close(&s);
	if (!src)
		return code;
	if (gpu_env__apply(&env)) {
		fprintf(stderr, "xpusup: unable to run: setenv: %s\n", strerror(errno));
		return XPUSUP_EXIT_SYSTEM;
	}
	fflush(NULL);
	execvp(argv[optind], argv + optind);
	err = errno;
	fprintf(stderr, "xpusup: unable to run %s: %s\n", argv[optind], strerror(err));
	return err == ENOENT ? 127 : 126; /* as a shell says it */
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		if (cmd && !strcmp(cmd, "help") && argc > 2) {
			static char *help_argv[3];

			help_argv[0] = argv[2];
			help_argv[1] = (char *)"--help";

			argv = help_argv;
			argc = 2;
			cmd = argv[0];
			optind = 0;
			goto dispatch;
		}
		fputs(usage_main, cmd ? stdout : stderr);
		return cmd ? 0 : XPUSUP_EXIT_USAGE;
	}
	if (!strcmp(cmd, "--version")) {
		printf("xpusup %s\n", XPUSUP_VERSION);
		return 0;
	}
	argv++;
	argc--;
dispatch:
	optind = 0; /* full getopt reset: each command parses from its own argv[0] */
	if (!strcmp(cmd, "start"))
		return cmd_start(argc, argv);
	if (!strcmp(cmd, "stop"))
		return cmd_stop(argc, argv);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc, argv);
	if (!strcmp(cmd, "record"))
		return record_cmd(argc, argv);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "subscribe"))
		return subscribe_cmd(argc, argv);
	if (!strcmp(cmd, "check"))
		return check_cmd(argc, argv);
	if (!strcmp(cmd, "snapshot"))
		return snapshot_cmd(argc, argv);
	fprintf(stderr, "xpusup: unable to run '%s': unknown command (see `xpusup --help`)\n", cmd);
	return XPUSUP_EXIT_USAGE;
}
