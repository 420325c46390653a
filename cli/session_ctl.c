// SPDX-License-Identifier: MIT
/* Starting a session in the background and stopping one: what `start`, `stop` and `record`
 * share (cli/session_ctl.h). */
#include "cli/session_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "supervisor/session.h"
#include "supervisor/supervisor.h"

/* After a failed start, the actors' own words (what they printed to the log, which is where
 * the reason is: "unable to open FILE", ...) rather than only "see the log". */
static void show_actor_messages(const char *log)
{
	char line[1024];
	unsigned int shown = 0;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && shown < 10) {
		/* the supervisor's own lines carry a time stamp and "xpusup:"; the rest is actors' */
		if (strstr(line, " xpusup: ") || line[0] == '\n')
			continue;
		fprintf(stderr, "  %s", line);
		if (!strchr(line, '\n'))
			fputc('\n', stderr);
		shown++;
	}
	fclose(f);
}

int session_ctl__start(const struct conf *conf, char **progs, struct session *sp, const char *name,
		       bool quiet)
{
	struct session s = *sp;
	int code = XPUSUP_EXIT_SYSTEM, err, pipefd[2];
	pid_t pid, holder = 0;
	FILE *in = NULL;
	char line[4400];

	/* Background: a child becomes the supervisor and tells us, over a pipe, when every
	 * actor is ready or why the session could not start. */
	if (pipe2(pipefd, O_CLOEXEC)) {
		fprintf(stderr, "xpusup: unable to start: pipe: %s\n", strerror(errno));
		return XPUSUP_EXIT_SYSTEM;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "xpusup: unable to start: fork: %s\n", strerror(errno));
		return XPUSUP_EXIT_SYSTEM;
	}
	if (pid == 0) {
		int logfd, devnull;

		close(pipefd[0]);
		/* Nothing of the caller's but the readiness pipe: `record` holds the pipe that
		 * lets its command run, and a supervisor keeping a copy would make that command
		 * wait for ever should record give up on it. */
		if (pipefd[1] > 3)
			close_range(3, (unsigned int)pipefd[1] - 1, 0);
		close_range((unsigned int)pipefd[1] + 1, ~0u, 0);
		setsid();
		devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		err = session__create(&s, conf, &holder);
		if (err) {
			if (err == -EBUSY)
				snprintf(line, sizeof(line),
					 "ERR 111 session %s is already running "
					 "(pid %d)\n",
					 s.name, (int)holder);
			else
				snprintf(line, sizeof(line), "ERR 111 %s: %s\n", s.dir,
					 strerror(-err));
			if (write(pipefd[1], line, strlen(line)) < 0)
				_exit(XPUSUP_EXIT_SYSTEM);
			_exit(XPUSUP_EXIT_SYSTEM);
		}
		/* Only the lock holder may truncate the log: another session's start must not. */
		logfd = open(s.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (logfd >= 0) {
			dup2(logfd, 1);
			dup2(logfd, 2);
			close(logfd);
		}
		code = supervisor_run(&s, conf, progs, pipefd[1]);
		session__destroy(&s);
		_exit(code);
	}
	close(pipefd[1]);
	if (!quiet)
		fprintf(stderr, "xpusup: starting session %s (%u actors)...\n", s.name,
			conf->n_actors);
	in = fdopen(pipefd[0], "r");
	/* LEFT NAME WHY: an optional source the session goes on without */
	line[0] = 0;
	while (in) {
		if (!fgets(line, sizeof(line), in)) {
			if (ferror(in) && errno == EINTR) { /* a signal to us, not the end */
				clearerr(in);
				continue;
			}
			break;
		}
		if (strncmp(line, "LEFT ", 5))
			break;
		line[strcspn(line, "\n")] = 0;
		fprintf(stderr, "xpusup: going on without %s\n", line + 5);
		line[0] = 0;
	}
	if (!in || !line[0]) {
		fprintf(stderr,
			"xpusup: unable to start: the supervisor died during start (see %s)\n",
			s.log);
	} else if (!strncmp(line, "OK", 2)) {
		if (!quiet)
			printf("xpusup: session %s running: %u actors; log %s\n"
			       "  xpusup status%s%s    xpusup stop%s%s\n",
			       s.name, conf->n_actors, s.log,
			       strcmp(name, SESSION_DEFAULT) ? " --session " : "",
			       strcmp(name, SESSION_DEFAULT) ? name : "",
			       strcmp(name, SESSION_DEFAULT) ? " --session " : "",
			       strcmp(name, SESSION_DEFAULT) ? name : "");
		code = 0;
	} else {
		char *msg = NULL;

		code = (int)strtol(line + 4, &msg, 10);
		line[strcspn(line, "\n")] = 0;
		fprintf(stderr, "xpusup: unable to start: %s\n", msg && *msg ? msg + 1 : line);
		if (code != XPUSUP_EXIT_USAGE)
			code = XPUSUP_EXIT_SYSTEM;
		waitpid(pid, NULL, 0); /* it stops its actors and cleans up before exiting */
		show_actor_messages(s.log);
	}
	if (in)
		fclose(in);
	return code;
}

int session_ctl__stop(const char *name, unsigned long long timeout_s)
{
	__u64 deadline, now;
	struct pollfd pfd;
	struct session s;
	int err, pidfd;
	pid_t pid;

	err = session__paths(&s, name);
	if (err == -EINVAL) {
		fprintf(stderr, "xpusup: unable to stop: bad session name '%s'\n", name);
		return XPUSUP_EXIT_USAGE;
	}
	if (err) {
		fprintf(stderr,
			"xpusup: unable to stop: not root and XDG_RUNTIME_DIR is not set\n");
		return XPUSUP_EXIT_SYSTEM;
	}
	err = session__open(&s);
	if (err && err != -EAGAIN) {
		fprintf(stderr, "xpusup: unable to stop: no session '%s' is running\n", s.name);
		return XPUSUP_EXIT_SYSTEM;
	}
	pid = session__pid(&s);
	session__close(&s);
	pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0)) {
		fprintf(stderr, "xpusup: unable to stop: cannot signal supervisor pid %d: %s\n",
			(int)pid, strerror(errno));
		return XPUSUP_EXIT_SYSTEM;
	}
	fprintf(stderr, "xpusup: stopping session %s (supervisor pid %d)...\n", s.name, (int)pid);
	pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	deadline = xpu_now_ns() + timeout_s * 1000000000ull;
	/* a signal (a second Ctrl-C, a closed terminal) does not end the wait: the stop goes on */
	do {
		now = xpu_now_ns();
		err = now < deadline ? poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) : 0;
	} while (err < 0 && errno == EINTR);
	close(pidfd);
	if (err <= 0) {
		fprintf(stderr,
			"xpusup: unable to stop: session %s still running after %llu s "
			"(supervisor pid %d; see %s)\n",
			s.name, timeout_s, (int)pid, s.log);
		return XPUSUP_EXIT_SYSTEM;
	}
	fprintf(stderr, "xpusup: session %s stopped\n", s.name);
	return 0;
}
