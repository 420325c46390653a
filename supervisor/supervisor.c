// SPDX-License-Identifier: MIT
/*
 * The supervisor's event loop and restart policy. docs/supervisor.md describes the
 * behaviour; this file is organised as:
 *
 *   spawn / signal / reap      one child's process
 *   on_exit                    what an exit means: restart type, intensity, strategy
 *   progress                   start what is due (one at a time, in order), stop in order
 *   supervisor_run             the loop
 *
 * Invariants: at most one child is STARTING at a time (start order is also readiness
 * order); a group restart (one_for_all, rest_for_one) starts nothing until every member it
 * stopped has exited; after stop begins nothing is started again.
 */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define MS 1000000ull
#define MAX_INTENSITY 1001

enum ev_type {
	EV_SIGNAL = 1,
	EV_TIMER = 2,
	EV_PIDFD = 3,
	EV_NOTIFY = 4,
	EV_OWNER = 5, /* the process whose session this is ($XPUSUP_OWNER_PID) ended */
};

struct child {
	const struct conf_actor *conf;
	const char *prog;
	struct xpu_actor_slot *slot;
	unsigned int index; /* start order */
	__u32 state; /* enum xpu_actor_state */
	pid_t pid;
	int pidfd;
	int notify_fd;
	__u32 gen; /* bumped per spawn: stale epoll events are recognised and ignored */
	__u64 deadline_ns; /* STARTING: start timeout; STOPPING: SIGKILL time */
	__u64 not_before_ns; /* BACKOFF: earliest restart */
	__u64 backoff_ns;
	__u64 last_restart_ns;
	__u64 spawned_ns;
	bool need_start;
	bool group_stop; /* stopped by us as part of a group restart */
	bool ever_started;
	bool left_out; /* an optional source that could not run here */
	const char *kill_reason; /* why we sent SIGKILL, for the exit message */
};

struct supervisor {
	const struct conf *conf;
	struct session *session;
	struct child children[CONF_MAX_ACTORS];
	unsigned int n;
	pid_t pid;
	int epfd, sigfd, timerfd;
	int owner_fd; /* pidfd of $XPUSUP_OWNER_PID, or -1 */
	int ready_fd;
	bool starting; /* initial start: any failure fails the session */
	bool stopping;
	bool done;
	int exit_code;
	__u64 restarts[MAX_INTENSITY]; /* ring of restart times, for intensity */
	unsigned int n_restarts;
};

static void sup_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sup_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld xpusup: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* Append the folders of a colon-separated list to dirs (at most max in all). */
static void add_dirs(char (*dirs)[PATH_MAX], unsigned int *n, unsigned int max, const char *list)
{
	const char *p = list;
	size_t l;

	while (p && *p && *n < max) {
		l = strcspn(p, ":");
		if (l)
			snprintf(dirs[(*n)++], PATH_MAX, "%.*s", (int)l, p);
		p += l + (p[l] == ':');
	}
}

/* Where actor programs are looked for, in order: $XPUSUP_ACTOR_PATH, beside the xpusup
 * binary, the build tree's actor folders (meson knows them: XPUSUP_BUILD_ACTOR_DIRS), the
 * installed libexec folder. self gets the xpusup binary's folder ("?" when unknown). */
static unsigned int program_dirs(char dirs[24][PATH_MAX], char *self, size_t self_size)
{
	unsigned int n_dirs = 0;
	ssize_t len;

	add_dirs(dirs, &n_dirs, 8, getenv("XPUSUP_ACTOR_PATH"));
	len = readlink("/proc/self/exe", self, self_size - 1);
	if (len > 0) {
		self[len] = 0;
		*strrchr(self, '/') = 0;
		snprintf(dirs[n_dirs++], PATH_MAX, "%s", self);
	} else {
		snprintf(self, self_size, "?");
	}
	add_dirs(dirs, &n_dirs, 23, XPUSUP_BUILD_ACTOR_DIRS);
	snprintf(dirs[n_dirs++], PATH_MAX, "%s", XPUSUP_LIBEXECDIR);
	return n_dirs;
}

/* The first xpusup-KIND among dirs, malloc'd, or NULL. */
static char *program_in(char dirs[24][PATH_MAX], unsigned int n_dirs, const char *kind)
{
	char path[PATH_MAX + 64];
	unsigned int d;

	for (d = 0; d < n_dirs; d++) {
		snprintf(path, sizeof(path), "%.4000s/xpusup-%s", dirs[d], kind);
		if (!access(path, X_OK))
			return strdup(path);
	}
	return NULL;
}

int supervisor_find_programs(const struct conf *conf, char **progs)
{
	char self[PATH_MAX], dirs[24][PATH_MAX];
	unsigned int i, n_dirs = program_dirs(dirs, self, sizeof(self));
	int err = 0;

	for (i = 0; i < conf->n_actors; i++) {
		const char *kind = conf->actors[i].kind;

		progs[i] = program_in(dirs, n_dirs, kind);
		if (!progs[i]) {
			fprintf(stderr,
				"xpusup: unable to start: no program xpusup-%s for actor %s "
				"(searched $XPUSUP_ACTOR_PATH, %s, the build tree, %s)\n",
				kind, conf->actors[i].name, self, XPUSUP_LIBEXECDIR);
			err = -ENOENT;
		}
	}
	return err;
}

char *supervisor_find_program(const char *kind)
{
	char self[PATH_MAX], dirs[24][PATH_MAX];
	unsigned int n_dirs = program_dirs(dirs, self, sizeof(self));
	char *prog = program_in(dirs, n_dirs, kind);

	if (!prog)
		errno = ENOENT;
	return prog;
}

static __u64 ev_data(enum ev_type type, __u32 gen, unsigned int index)
{
	return ((__u64)type << 56) | ((__u64)(gen & 0xffffff) << 32) | index;
}

static int child_signal(struct child *c, int sig)
{
	if (c->pidfd < 0)
		return -ESRCH;
	/* pidfd_send_signal: no race with pid reuse after the child is reaped. */
	return syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0) ? -errno : 0;
}

static void child_set_state(struct child *c, __u32 state)
{
	c->state = state;
	status_store(&c->slot->state, state);
}

static int child_spawn(struct supervisor *sup, struct child *c)
{
	char slot_arg[16];
	struct epoll_event ev;
	sigset_t none;
	int pipefd[2], nullfd;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	/* The actor-written half of the slot starts afresh for each incarnation. */
	status_store(&c->slot->n_counters, 0);
	status_store(&c->slot->heartbeat_ns, xpu_now_ns());
	if (c->ever_started)
		status_store(&c->slot->restarts, status_load(&c->slot->restarts) + 1);
	snprintf(slot_arg, sizeof(slot_arg), "%u", c->index);

	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		char *argv[] = { (char *)c->prog,	"--session", sup->session->dir, "--actor",
				 (char *)c->conf->name, "--slot",    slot_arg,		NULL };

		/* Nothing outlives the supervisor, even a SIGKILLed one. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != sup->pid)
			_exit(XPUSUP_EXIT_SYSTEM);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (pipefd[1] != 3) {
			if (dup2(pipefd[1], 3) < 0)
				_exit(XPUSUP_EXIT_SYSTEM);
		} else {
			fcntl(3, F_SETFD, 0);
		}
		nullfd = open("/dev/null", O_RDONLY);
		if (nullfd > 0) {
			dup2(nullfd, 0);
			if (nullfd != 3)
				close(nullfd);
		}
		setenv("XPUSUP_NOTIFY_FD", "3", 1);
		setenv("XPUSUP_SESSION", sup->session->dir, 1);
		/* the actor reads the session's copy of the file; relative names in it are
		 * relative to the original's folder */
		setenv("XPUSUP_CONF_DIR", sup->conf->base_dir, 1);
		execv(c->prog, argv);
		fprintf(stderr, "xpusup: unable to exec %s: %s\n", c->prog, strerror(errno));
		_exit(XPUSUP_EXIT_SYSTEM);
	}
	close(pipefd[1]);
	c->gen++;
	c->pid = pid;
	c->notify_fd = pipefd[0];
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	c->spawned_ns = xpu_now_ns();
	c->deadline_ns = c->spawned_ns + (__u64)c->conf->start_timeout_ms * MS;
	c->need_start = false;
	c->group_stop = false;
	c->kill_reason = NULL;
	c->ever_started = true;
	fcntl(c->notify_fd, F_SETFL, O_NONBLOCK);
	ev = (struct epoll_event){ .events = EPOLLIN,
				   .data.u64 = ev_data(EV_NOTIFY, c->gen, c->index) };
	epoll_ctl(sup->epfd, EPOLL_CTL_ADD, c->notify_fd, &ev);
	if (c->pidfd >= 0) {
		ev = (struct epoll_event){ .events = EPOLLIN,
					   .data.u64 = ev_data(EV_PIDFD, c->gen, c->index) };
		epoll_ctl(sup->epfd, EPOLL_CTL_ADD, c->pidfd, &ev);
	}
	status_store(&c->slot->started_ns, c->spawned_ns);
	status_store(&c->slot->ready_ns, 0);
	status_store(&c->slot->pid, (__u32)pid);
	child_set_state(c, XPU_ACTOR_STARTING);
	return 0;
}

static void close_notify(struct supervisor *sup, struct child *c)
{
	if (c->notify_fd >= 0) {
		epoll_ctl(sup->epfd, EPOLL_CTL_DEL, c->notify_fd, NULL);
		close(c->notify_fd);
		c->notify_fd = -1;
	}
}

static void begin_stop(struct supervisor *sup, int exit_code);

static void report_ready(struct supervisor *sup, const char *line)
{
	if (sup->ready_fd >= 0) {
		if (write(sup->ready_fd, line, strlen(line)) < 0)
			sup_log("cannot report to the starting command: %s", strerror(errno));
		close(sup->ready_fd);
		sup->ready_fd = -1;
	}
}

static void fail_start(struct supervisor *sup, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail_start(struct supervisor *sup, int code, const char *fmt, ...)
{
	char msg[512], line[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sup_log("unable to start session %s: %s", sup->session->name, msg);
	snprintf(line, sizeof(line), "ERR %d %s\n", code, msg);
	report_ready(sup, line);
	begin_stop(sup, code);
}

/* The initial start is over once every actor runs, optional sources left out aside. */
static void check_started(struct supervisor *sup)
{
	unsigned int i, left_out = 0;

	if (!sup->starting)
		return;
	for (i = 0; i < sup->n; i++) {
		const struct child *c = &sup->children[i];

		if (c->left_out)
			left_out++;
		else if (c->state != XPU_ACTOR_RUNNING)
			return;
	}
	sup->starting = false;
	status_store(&sup->session->status->hdr.state, (__u32)XPU_SESSION_RUNNING);
	sup_log("session %s running: %u actors%s", sup->session->name, sup->n - left_out,
		left_out ? " (optional sources left out: see above)" : "");
	report_ready(sup, "OK\n");
}

/*
 * An optional source that cannot run here (exit 100 before it was ready: no privileges, no
 * BTF, no such hardware) is left out and the session starts without it. The starting
 * command gets a LEFT line with what the actor said, before OK.
 */
static void leave_out(struct supervisor *sup, struct child *c)
{
	char problem[256], line[512];

	status__get_problem(c->slot, problem, sizeof(problem));
	sup_log("%s cannot run here and is optional: the session goes on without it%s%s",
		c->conf->name, problem[0] ? ": " : "", problem);
	snprintf(line, sizeof(line), "LEFT %s: %s\n", c->conf->name,
		 problem[0] ? problem : "exited 100 before it was ready");
	if (sup->ready_fd >= 0 && write(sup->ready_fd, line, strlen(line)) < 0)
		sup_log("cannot report to the starting command: %s", strerror(errno));
	c->left_out = true;
	c->need_start = false;
	child_set_state(c, XPU_ACTOR_FAILED);
	check_started(sup);
}

static void on_ready(struct supervisor *sup, struct child *c)
{
	__u64 now = xpu_now_ns();

	close_notify(sup, c);
	if (c->state != XPU_ACTOR_STARTING)
		return;
	status_store(&c->slot->ready_ns, now);
	status_store(&c->slot->heartbeat_ns, now);
	child_set_state(c, XPU_ACTOR_RUNNING);
	sup_log("%s %s ready (pid %d) in %.1f ms",
		c->ever_started && status_load(&c->slot->restarts) ? "restarted" : "started",
		c->conf->name, (int)c->pid, (double)(now - c->spawned_ns) / 1e6);
	check_started(sup);
}

/* Restarts within the intensity period, this one included, over the limit? */
static bool intensity_exceeded(struct supervisor *sup, __u64 now)
{
	__u64 period = (__u64)sup->conf->intensity_period_ms * MS;
	unsigned int i, recent = 0, cap = sup->conf->intensity_max + 1;

	if (cap > MAX_INTENSITY)
		cap = MAX_INTENSITY;
	sup->restarts[sup->n_restarts++ % cap] = now;
	for (i = 0; i < cap && i < sup->n_restarts; i++)
		if (now - sup->restarts[i] <= period)
			recent++;
	return recent > sup->conf->intensity_max;
}

/* First restart at once (crash-to-ready is what users feel); later ones within the
 * intensity period back off exponentially up to backoff_max_ms. */
static __u64 next_backoff(struct supervisor *sup, struct child *c, __u64 now)
{
	__u64 period = (__u64)sup->conf->intensity_period_ms * MS;
	__u64 min = (__u64)sup->conf->backoff_min_ms * MS,
	      max = (__u64)sup->conf->backoff_max_ms * MS;

	if (!c->last_restart_ns || now - c->last_restart_ns > period)
		c->backoff_ns = 0;
	else if (!c->backoff_ns)
		c->backoff_ns = min;
	else
		c->backoff_ns = c->backoff_ns * 2 > max ? max : c->backoff_ns * 2;
	c->last_restart_ns = now;
	return c->backoff_ns;
}

static void stop_child(struct child *c, __u64 now, bool group)
{
	if (!c->pid || c->state == XPU_ACTOR_STOPPING)
		return;
	child_signal(c, SIGTERM);
	c->deadline_ns = now + (__u64)c->conf->shutdown_timeout_ms * MS;
	c->group_stop = group;
	child_set_state(c, XPU_ACTOR_STOPPING);
}

static void describe_exit(const siginfo_t *si, char *buf, size_t len)
{
	if (si->si_code == CLD_EXITED)
		snprintf(buf, len, "exit %d", si->si_status);
	else
		snprintf(buf, len, "signal %s", xpu_signal__name(si->si_status));
}

static void child_exited(struct supervisor *sup, struct child *c, const siginfo_t *si)
{
	const struct conf_actor *ca = c->conf;
	bool exited = si->si_code == CLD_EXITED, normal = exited && si->si_status == 0;
	__u64 now = xpu_now_ns(), delay;
	__u32 was = c->state;
	char how[64];
	unsigned int i;

	describe_exit(si, how, sizeof(how));
	close_notify(sup, c);
	if (c->pidfd >= 0) {
		epoll_ctl(sup->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
		close(c->pidfd);
		c->pidfd = -1;
	}
	c->pid = 0;
	status_store(&c->slot->pid, 0);
	status_store(&c->slot->last_exit_code, exited ? si->si_status : -1);
	status_store(&c->slot->last_signal, exited ? 0 : (__u32)si->si_status);
	status_store(&c->slot->last_exit_ns, now);

	if (sup->stopping) {
		sup_log("%s stopped (%s)", ca->name, how);
		child_set_state(c, XPU_ACTOR_STOPPED);
		return;
	}
	if (was == XPU_ACTOR_STOPPING && c->group_stop) {
		sup_log("%s stopped for a %s restart (%s)", ca->name,
			conf_strategy__name(sup->conf->strategy), how);
		child_set_state(c, c->need_start ? XPU_ACTOR_BACKOFF : XPU_ACTOR_STOPPED);
		return;
	}
	sup_log("%s exited (%s)%s%s", ca->name, how, c->kill_reason ? ": " : "",
		c->kill_reason ? c->kill_reason : "");
	if (sup->starting && exited && si->si_status == 100 && ca->optional) {
		leave_out(sup, c);
		return;
	}
	if (sup->starting) {
		fail_start(sup,
			   exited && si->si_status == 100 ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM,
			   "actor %s %s before it was ready (%s); see %s", ca->name,
			   c->kill_reason ? "was killed" : "exited",
			   c->kill_reason ? c->kill_reason : how, sup->session->log);
		child_set_state(c, XPU_ACTOR_FAILED);
		return;
	}
	if (exited && si->si_status == 100) {
		sup_log("%s failed permanently (exit 100): not restarted", ca->name);
		child_set_state(c, XPU_ACTOR_FAILED);
		return;
	}
	if (ca->restart == CONF_TEMPORARY || (ca->restart == CONF_TRANSIENT && normal)) {
		sup_log("%s is %s: not restarted", ca->name, conf_restart__name(ca->restart));
		child_set_state(c, normal ? XPU_ACTOR_EXITED : XPU_ACTOR_FAILED);
		return;
	}
	if (intensity_exceeded(sup, now)) {
		sup_log("unable to keep session %s running: restart intensity exceeded "
			"(more than %u restarts in %u ms) after %s exited (%s); stopping",
			sup->session->name, sup->conf->intensity_max,
			sup->conf->intensity_period_ms, ca->name, how);
		child_set_state(c, XPU_ACTOR_FAILED);
		begin_stop(sup, XPUSUP_EXIT_SYSTEM);
		return;
	}
	delay = next_backoff(sup, c, now);
	c->need_start = true;
	c->not_before_ns = now + delay;
	child_set_state(c, XPU_ACTOR_BACKOFF);
	if (sup->conf->strategy == CONF_ONE_FOR_ONE)
		return;
	/* one_for_all: every sibling; rest_for_one: those started after it. Stop them in
	 * reverse start order (signals go out together; progress() waits for all). */
	for (i = sup->n; i-- > 0;) {
		struct child *o = &sup->children[i];

		if (o == c || (sup->conf->strategy == CONF_REST_FOR_ONE && o->index < c->index))
			continue;
		if (o->pid) {
			o->need_start = o->conf->restart != CONF_TEMPORARY;
			o->not_before_ns = c->not_before_ns;
			stop_child(o, now, true);
		} else if (o->state == XPU_ACTOR_BACKOFF) {
			o->not_before_ns = c->not_before_ns;
		}
	}
}

static void reap(struct supervisor *sup, struct child *c)
{
	siginfo_t si = { 0 };

	if (!c->pid || c->pidfd < 0)
		return;
	if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) || !si.si_pid)
		return;
	child_exited(sup, c, &si);
}

/* SIGCHLD: as a child subreaper we also inherit orphaned grandchildren; reap those, and
 * hand our own children to reap() in case their pidfd event is still queued. */
static void reap_all(struct supervisor *sup)
{
	siginfo_t si;
	unsigned int i;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) || !si.si_pid)
			return;
		for (i = 0; i < sup->n; i++)
			if (sup->children[i].pid == si.si_pid)
				break;
		if (i < sup->n)
			reap(sup, &sup->children[i]);
		else
			waitpid(si.si_pid, NULL, 0);
	}
}

static void begin_stop(struct supervisor *sup, int exit_code)
{
	unsigned int i;

	if (sup->stopping)
		return;
	sup->stopping = true;
	sup->exit_code = exit_code;
	status_store(&sup->session->status->hdr.state, (__u32)XPU_SESSION_STOPPING);
	sup_log("stopping session %s", sup->session->name);
	for (i = 0; i < sup->n; i++) {
		sup->children[i].need_start = false;
		if (!sup->children[i].pid && sup->children[i].state == XPU_ACTOR_BACKOFF)
			child_set_state(&sup->children[i], XPU_ACTOR_STOPPED);
	}
}

/* Deadlines: start timeouts, shutdown timeouts, frozen actors. */
static void check_deadlines(struct supervisor *sup, __u64 now)
{
	__u64 watchdog = (__u64)sup->conf->watchdog_ms * MS, beat;
	unsigned int i;

	for (i = 0; i < sup->n; i++) {
		struct child *c = &sup->children[i];

		if (!c->pid || c->kill_reason)
			continue;
		if (c->state == XPU_ACTOR_STARTING && now >= c->deadline_ns) {
			c->kill_reason = "not ready within start_timeout_ms";
			sup_log("%s not ready after %u ms: killing it", c->conf->name,
				c->conf->start_timeout_ms);
			child_signal(c, SIGKILL);
		} else if (c->state == XPU_ACTOR_STOPPING && now >= c->deadline_ns) {
			c->kill_reason = "ignored SIGTERM for shutdown_timeout_ms";
			sup_log("%s did not stop within %u ms: killing it", c->conf->name,
				c->conf->shutdown_timeout_ms);
			child_signal(c, SIGKILL);
		} else if (c->state == XPU_ACTOR_RUNNING) {
			beat = status_load(&c->slot->heartbeat_ns);
			if (now > beat && now - beat > watchdog) {
				c->kill_reason = "frozen: no heartbeat within watchdog_ms";
				sup_log("%s frozen: no heartbeat for %llu ms: killing it",
					c->conf->name, (unsigned long long)((now - beat) / MS));
				child_signal(c, SIGKILL);
			}
		}
	}
}

/* Start what is due, or move the stop along. */
static void progress(struct supervisor *sup, __u64 now)
{
	int role = -1;
	unsigned int i;
	int err;

	if (sup->stopping) {
		/* Stop by role, sources first: what they wrote drains through the correlators
		 * into the sinks before those are asked to stop. */
		for (i = 0; i < sup->n; i++)
			if (sup->children[i].pid && (int)sup->children[i].conf->role > role)
				role = (int)sup->children[i].conf->role;
		if (role < 0) {
			sup->done = true;
			return;
		}
		for (i = 0; i < sup->n; i++)
			if ((int)sup->children[i].conf->role == role)
				stop_child(&sup->children[i], now, false);
		return;
	}
	for (i = 0; i < sup->n; i++) {
		__u32 st = sup->children[i].state;

		if (st == XPU_ACTOR_STARTING ||
		    (st == XPU_ACTOR_STOPPING && sup->children[i].group_stop))
			return;
	}
	for (i = 0; i < sup->n; i++) {
		struct child *c = &sup->children[i];

		if (!c->need_start || c->pid)
			continue;
		if (now < c->not_before_ns)
			return; /* in order: nothing after it starts before it */
		err = child_spawn(sup, c);
		if (err) {
			sup_log("unable to start %s: %s", c->conf->name, strerror(-err));
			if (sup->starting)
				fail_start(sup, XPUSUP_EXIT_SYSTEM, "cannot fork %s: %s",
					   c->conf->name, strerror(-err));
			else
				begin_stop(sup, XPUSUP_EXIT_SYSTEM);
		}
		return;
	}
}

static __u64 next_deadline(struct supervisor *sup, __u64 now)
{
	__u64 next = now + (__u64)sup->conf->heartbeat_ms * MS; /* watchdog tick */
	unsigned int i;

	for (i = 0; i < sup->n; i++) {
		struct child *c = &sup->children[i];

		if (c->pid && (c->state == XPU_ACTOR_STARTING || c->state == XPU_ACTOR_STOPPING) &&
		    c->deadline_ns < next)
			next = c->deadline_ns;
		if (!c->pid && c->need_start && c->not_before_ns < next)
			next = c->not_before_ns;
	}
	return next > now ? next : now + 1;
}

static void on_signal(struct supervisor *sup)
{
	struct signalfd_siginfo si;

	while (read(sup->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap_all(sup);
		} else {
			sup_log("received SIG%s", xpu_signal__name((int)si.ssi_signo));
			if (sup->starting)
				fail_start(sup, XPUSUP_EXIT_SYSTEM, "interrupted by SIG%s",
					   xpu_signal__name((int)si.ssi_signo));
			else
				begin_stop(sup, XPUSUP_EXIT_OK);
		}
	}
}

static void on_notify(struct supervisor *sup, struct child *c)
{
	char buf[64];
	ssize_t n = read(c->notify_fd, buf, sizeof(buf));

	if (n > 0)
		on_ready(sup, c); /* any line means ready; READY\n by convention */
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		close_notify(sup, c); /* closed without a word: the exit will tell */
}

static int setup_loop(struct supervisor *sup)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned long long pid;
	const char *owner;
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	/* Orphans of our actors become ours to reap, not init's. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return -errno;
	sup->epfd = epoll_create1(EPOLL_CLOEXEC);
	sup->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	sup->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sup->epfd < 0 || sup->sigfd < 0 || sup->timerfd < 0)
		return -errno;
	ev.data.u64 = ev_data(EV_SIGNAL, 0, 0);
	if (epoll_ctl(sup->epfd, EPOLL_CTL_ADD, sup->sigfd, &ev))
		return -errno;
	ev.data.u64 = ev_data(EV_TIMER, 0, 0);
	if (epoll_ctl(sup->epfd, EPOLL_CTL_ADD, sup->timerfd, &ev))
		return -errno;
	/* `xpusup record` owns its session: if it dies without stopping it (SIGKILL), the
	 * session stops by itself instead of running on with nobody to stop it. */
	owner = getenv("XPUSUP_OWNER_PID");
	if (owner && !conf_parse_uint(owner, 1, 0x3fffffff, &pid)) {
		/* The owner forked us: SIGTERM (into the signalfd) when it dies from now on, and
		 * if it died before that, our parent is no longer it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sup->owner_fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		ev.data.u64 = ev_data(EV_OWNER, 0, 0);
		if (sup->owner_fd < 0 || epoll_ctl(sup->epfd, EPOLL_CTL_ADD, sup->owner_fd, &ev))
			sup_log("cannot watch the owning process %llu: %s", pid, strerror(errno));
		if ((unsigned long long)getppid() != pid)
			raise(SIGTERM); /* gone already: stop as soon as the loop runs */
	}
	return 0;
}

int supervisor_run(struct session *s, const struct conf *conf, char **progs, int ready_fd)
{
	static struct supervisor sup_storage;
	struct supervisor *sup = &sup_storage;
	struct epoll_event events[64];
	struct itimerspec its = { 0 };
	unsigned int i;
	__u64 now, next;
	int n, k, err;

	memset(sup, 0, sizeof(*sup));
	sup->conf = conf;
	sup->session = s;
	sup->pid = getpid();
	sup->ready_fd = ready_fd;
	sup->starting = true;
	sup->epfd = sup->sigfd = sup->timerfd = sup->owner_fd = -1;
	sup->n = conf->n_actors;
	for (i = 0; i < sup->n; i++) {
		struct child *c = &sup->children[i];

		c->conf = &conf->actors[i];
		c->prog = progs[i];
		c->slot = &s->status->slots[i];
		c->index = i;
		c->pidfd = c->notify_fd = -1;
		c->need_start = true;
	}
	err = setup_loop(sup);
	if (err) {
		fail_start(sup, XPUSUP_EXIT_SYSTEM, "cannot set up the event loop: %s",
			   strerror(-err));
		goto out;
	}
	sup_log("starting session %s: %u actors, config %s", s->name, sup->n, conf->path);

	while (!sup->done) {
		now = xpu_now_ns();
		check_deadlines(sup, now);
		progress(sup, now);
		if (sup->done)
			break;
		next = next_deadline(sup, now);
		its.it_value.tv_sec = (time_t)(next / 1000000000ull);
		its.it_value.tv_nsec = (long)(next % 1000000000ull);
		timerfd_settime(sup->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
		n = epoll_wait(sup->epfd, events, 64, -1);
		if (n < 0 && errno != EINTR) {
			sup_log("epoll_wait: %s", strerror(errno));
			begin_stop(sup, XPUSUP_EXIT_SYSTEM);
			continue;
		}
		for (k = 0; k < n; k++) {
			__u64 d = events[k].data.u64;
			enum ev_type type = (enum ev_type)(d >> 56);
			__u32 gen = (__u32)(d >> 32) & 0xffffff;
			unsigned int idx = (unsigned int)(d & 0xffffffffu);
			struct child *c = idx < sup->n ? &sup->children[idx] : NULL;
			__u64 ticks;

			switch (type) {
			case EV_SIGNAL:
				on_signal(sup);
				break;
			case EV_TIMER:
				if (read(sup->timerfd, &ticks, sizeof(ticks)) < 0)
					(void)0; /* EAGAIN: re-armed before it was read */
				break;
			case EV_PIDFD:
				if (c && (c->gen & 0xffffff) == gen)
					reap(sup, c);
				break;
			case EV_NOTIFY:
				if (c && (c->gen & 0xffffff) == gen && c->notify_fd >= 0)
					on_notify(sup, c);
				break;
			case EV_OWNER:
				epoll_ctl(sup->epfd, EPOLL_CTL_DEL, sup->owner_fd, NULL);
				sup_log("the process that owns session %s is gone: stopping",
					sup->session->name);
				begin_stop(sup, 0);
				break;
			}
		}
	}
out:
	/* Anything still alive (a setup failure) goes down with us. */
	for (i = 0; i < sup->n; i++)
		if (sup->children[i].pid) {
			child_signal(&sup->children[i], SIGKILL);
			waitpid(sup->children[i].pid, NULL, 0);
		}
	reap_all(sup);
	sup_log("session %s stopped (exit %d)", s->name, sup->exit_code);
	if (sup->ready_fd >= 0)
		report_ready(sup, "ERR 111 stopped before it was ready\n");
	if (sup->epfd >= 0)
		close(sup->epfd);
	if (sup->owner_fd >= 0)
		close(sup->owner_fd);
	if (sup->sigfd >= 0)
		close(sup->sigfd);
	if (sup->timerfd >= 0)
		close(sup->timerfd);
	return sup->exit_code;
}
