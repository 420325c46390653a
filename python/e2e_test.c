/* SPDX-License-Identifier: MIT */
/*
 * python/ against the real interpreters on this machine (Debian's /usr/bin/python3 and
 * pyenv's 3.11, 3.12, 3.13): each runs a script whose main thread and a second thread block
 * in known nested functions. The test detects the layout, walks the threads and frames the
 * way the BPF program does (runtime -> interpreters.head -> threads.head -> each thread's
 * current frame -> previous ..., skipping the C stack's shim frames), names every frame with
 * py_codes and expects the exact chain with its lines. Then the refusals: pyenv's 3.10
 * (-ENOTSUP naming 3.10), a copy of sleep named python3 (-ENOENT), a process that has exited
 * (-ESRCH), a str's address given as a code object (-EINVAL); then a cached code object
 * checked again after a real second (unchanged; then its process gone: -ESRCH), and an
 * interpreter deleted while it runs (read through map_files, the same layout twice).
 *
 * An interpreter that is not installed is reported and not checked; none at all skips (77).
 */
#include "python/python.h"
#include "python/internal.h"

#include "tests/tap.h"
#include "xpusup/event.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char script[] = "import sys, threading, time\n" /* 1 */
			     "def inner():\n" /* 2 */
			     "    time.sleep(1000)\n" /* 3 */
			     "def outer():\n" /* 4 */
			     "    inner()\n" /* 5 */
			     "def main():\n" /* 6 */
			     "    outer()\n" /* 7 */
			     "def winner(ready):\n" /* 8 */
			     "    ready.set()\n" /* 9 */
			     "    time.sleep(1000)\n" /* 10 */
			     "def wouter(ready):\n" /* 11 */
			     "    winner(ready)\n" /* 12 */
			     "def worker(ready):\n" /* 13 */
			     "    wouter(ready)\n" /* 14 */
			     "ready = threading.Event()\n" /* 15 */
			     "threading.Thread(target=worker, args=(ready,), daemon=True).start()\n"
			     "ready.wait()\n" /* 17 */
			     "print('ready', id('a str, not a code'), flush=True)\n" /* 18 */
			     "main()\n"; /* 19 */

#define MAX_CHAIN 32
#define NAME_MAX_LEN 1400

struct chain {
	unsigned n;
	char names[MAX_CHAIN][NAME_MAX_LEN];
	__u64 codes[MAX_CHAIN];
};

struct child {
	pid_t pid;
	FILE *out; /* its stdout */
	bool reaped;
};

static void child__start(struct child *ch, char *const argv[])
{
	int fds[2];

	ch->pid = -1;
	ch->out = NULL;
	ch->reaped = false;
	if (pipe(fds))
		return;
	ch->pid = fork();
	if (ch->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	ch->out = fdopen(fds[0], "r");
}

static void child__stop(struct child *ch)
{
	if (ch->pid > 0 && !ch->reaped) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
	}
	if (ch->out)
		fclose(ch->out);
	ch->pid = -1;
	ch->out = NULL;
}

static int rd64(pid_t pid, __u64 a, __u64 *v)
{
	return py_mem__read((__u32)pid, a, v, sizeof(*v));
}

/* The Python frames of thread tid, innermost first, named; 0 or -errno. */
static int walk_thread(pid_t pid, const struct py_layout *l, struct py_codes *c, __u64 tid,
		       struct chain *out)
{
	__u64 interp, ts, frame = 0, v;
	unsigned n_ts;

	out->n = 0;
	if (rd64(pid, l->runtime + l->runtime_interpreters_head, &interp) || !interp ||
	    rd64(pid, interp + l->interp_threads_head, &ts))
		return -EFAULT;
	for (n_ts = 0; ts && n_ts < 64; n_ts++) {
		if (rd64(pid, ts + l->tstate_native_thread_id, &v))
			return -EFAULT;
		if (v == tid)
			break;
		if (rd64(pid, ts + l->tstate_next, &ts))
			return -EFAULT;
	}
	if (!ts || n_ts == 64)
		return -ENOENT;
	if (l->tstate_current_frame != PY_OFF_NONE) {
		if (rd64(pid, ts + l->tstate_current_frame, &frame))
			return -EFAULT;
	} else {
		__u64 cframe;

		if (rd64(pid, ts + l->tstate_cframe, &cframe) || !cframe ||
		    rd64(pid, cframe + l->cframe_current_frame, &frame))
			return -EFAULT;
	}
	while (frame && out->n < MAX_CHAIN) {
		__u64 code, instr;
		__u8 owner;
		__u32 lasti, line;
		const char *name;
		int err;

		if (py_mem__read((__u32)pid, frame + l->frame_owner, &owner, 1))
			return -EFAULT;
		if (owner != l->owner_cstack) {
			if (rd64(pid, frame + l->frame_code, &code) ||
			    rd64(pid, frame + l->frame_instr, &instr))
				return -EFAULT;
			lasti = (__u32)((__s64)(instr - (code + l->code_adaptive)) / 2);
			err = py_codes__line(c, (__u32)pid, l, code, lasti, &line);
			if (err)
				return err;
			name = py_codes__name(c, (__u32)pid, code, line);
			if (!name)
				return -ENOMEM;
			out->codes[out->n] = code;
			snprintf(out->names[out->n++], NAME_MAX_LEN, "%s", name);
		}
		if (rd64(pid, frame + l->frame_previous, &frame))
			return -EFAULT;
	}
	return 0;
}

/* The chain starts with want[] (all of it when exact). */
static bool chain__matches(const struct chain *ch, const char *const *want, unsigned n_want,
			   bool exact)
{
	unsigned i;

	if (ch->n < n_want || (exact && ch->n != n_want))
		return false;
	for (i = 0; i < n_want; i++)
		if (strcmp(ch->names[i], want[i]))
			return false;
	return true;
}

static void chain__print(const char *what, const struct chain *ch)
{
	unsigned i;

	printf("# %s:", what);
	for (i = 0; i < ch->n; i++)
		printf(" [%s]", ch->names[i]);
	printf("\n");
}

static unsigned long long thread_other_than(pid_t pid)
{
	char path[64];
	struct dirent *d;
	unsigned long long tid = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.' && strtoull(d->d_name, NULL, 10) != (unsigned long long)pid)
			tid = strtoull(d->d_name, NULL, 10);
	closedir(dir);
	return tid;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * With the real clock: a cached code object checked again after a second, unchanged, is not
 * read again; once the process is gone, the check says so and the entry goes.
 */
static void test_recheck(struct py_codes *c, struct child *ch, const struct py_layout *l,
			 __u64 code)
{
	struct py_codes_stats st;
	__u32 line;
	int err;

	sleep_ms(1100);
	err = py_codes__line(c, (__u32)ch->pid, l, code, XPU_PY_LASTI_NONE, &line);
	py_codes__stats(c, &st);
	tap_ok(!err && line == 2 && st.revalidated == 0,
	       "checked again after a second, unchanged: %d, line %u, revalidated %llu", err, line,
	       (unsigned long long)st.revalidated);
	kill(ch->pid, SIGKILL);
	waitpid(ch->pid, NULL, 0);
	ch->reaped = true;
	sleep_ms(1100);
	err = py_codes__line(c, (__u32)ch->pid, l, code, XPU_PY_LASTI_NONE, &line);
	tap_ok(err == -ESRCH, "checked again after the process is gone: %d", err);
	tap_ok(!py_codes__name(c, (__u32)ch->pid, code, line), "and the entry is dropped");
}

static int test_interpreter(const char *python, const char *dir, unsigned want_minor, bool recheck)
{
	char prog[512], why[PY_WHY_MAX], line[256], want_buf[7][700];
	const char *want_main[4], *want_worker[3];
	struct py_layout *l = calloc(1, sizeof(*l));
	struct chain *main_chain = calloc(1, sizeof(*main_chain));
	struct chain *worker_chain = calloc(1, sizeof(*worker_chain));
	struct py_codes *c = py_codes__new(64);
	unsigned long long str_addr = 0, tid;
	struct child ch;
	bool main_ok = false, worker_ok = false;
	int err, tries;
	__u32 lno;
	FILE *f;

	snprintf(prog, sizeof(prog), "%s/prog.py", dir);
	f = fopen(prog, "w");
	fputs(script, f);
	fclose(f);
	snprintf(want_buf[0], 700, "inner (%s:3)", prog);
	snprintf(want_buf[1], 700, "outer (%s:5)", prog);
	snprintf(want_buf[2], 700, "main (%s:7)", prog);
	snprintf(want_buf[3], 700, "<module> (%s:19)", prog);
	snprintf(want_buf[4], 700, "winner (%s:10)", prog);
	snprintf(want_buf[5], 700, "wouter (%s:12)", prog);
	snprintf(want_buf[6], 700, "worker (%s:14)", prog);
	for (tries = 0; tries < 4; tries++)
		want_main[tries] = want_buf[tries];
	for (tries = 0; tries < 3; tries++)
		want_worker[tries] = want_buf[4 + tries];

	child__start(&ch, (char *const[]){ (char *)python, prog, NULL });
	if (!ch.out || !fgets(line, sizeof(line), ch.out) ||
	    sscanf(line, "ready %llu", &str_addr) != 1) {
		tap_ok(0, "%s: the script did not start", python);
		goto stop;
	}
	err = py_layout__detect((__u32)ch.pid, l, why, sizeof(why));
	tap_ok(!err, "%s: detect: %d (%s)", python, err, err ? why : "");
	if (err)
		goto stop;
	tap_ok((l->version >> 16) == (0x0300u | want_minor) && l->eval_start < l->eval_end &&
		       l->runtime && l->code_type,
	       "%s: version 0x%08x, eval [%llx, %llx)", python, l->version,
	       (unsigned long long)l->eval_start, (unsigned long long)l->eval_end);
	tap_ok(l->source == (want_minor >= 13 ? PY_LAYOUT_DEBUG_OFFSETS : PY_LAYOUT_TABLE),
	       "%s: layout from %s", python,
	       l->source == PY_LAYOUT_TABLE ? "table" : "debug offsets");

	/* The threads may still be on their way into the sleeps: try for a few seconds. */
	for (tries = 0; tries < 100 && !(main_ok && worker_ok); tries++) {
		if (tries)
			sleep_ms(50);
		tid = thread_other_than(ch.pid);
		err = walk_thread(ch.pid, l, c, (__u64)ch.pid, main_chain);
		main_ok = !err && chain__matches(main_chain, want_main, 4, true);
		err = tid ? walk_thread(ch.pid, l, c, tid, worker_chain) : -ENOENT;
		worker_ok = !err && chain__matches(worker_chain, want_worker, 3, false);
	}
	if (!main_ok)
		chain__print("main thread", main_chain);
	if (!worker_ok)
		chain__print("second thread", worker_chain);
	tap_ok(main_ok, "%s: main thread is inner, outer, main, <module> with their lines", python);
	tap_ok(worker_ok, "%s: second thread is winner, wouter, worker ...", python);

	err = py_codes__line(c, (__u32)ch.pid, l, str_addr, 0, &lno);
	tap_ok(err == -EINVAL, "%s: a str's address as a code object: %d", python, err);
	err = py_codes__line(c, (__u32)ch.pid, l, 8, 0, &lno);
	tap_ok(err == -EFAULT, "%s: address 8 as a code object: %d", python, err);
	if (recheck && main_ok)
		test_recheck(c, &ch, l, main_chain->codes[0]);
stop:
	py_codes__drop_pid(c, (__u32)ch.pid);
	child__stop(&ch);
	py_codes__collect(c);
	py_codes__free(c);
	free(worker_chain);
	free(main_chain);
	free(l);
	return 0;
}

static void test_refusals(const char *dir)
{
	static const char py310[] = "/root/.pyenv/versions/3.10.13/bin/python3.10";
	char fake[512], why[PY_WHY_MAX], line[64], cmd[1200];
	struct py_layout *l = calloc(1, sizeof(*l));
	struct child ch;
	pid_t pid;
	int err, i;

	if (access(py310, X_OK) == 0) {
		child__start(&ch, (char *const[]){ (char *)py310, "-c",
						   "import time; print('ready', flush=True); "
						   "time.sleep(1000)",
						   NULL });
		if (ch.out && fgets(line, sizeof(line), ch.out)) {
			err = py_layout__detect((__u32)ch.pid, l, why, sizeof(why));
			tap_ok(err == -ENOTSUP && strstr(why, "3.10") &&
				       strstr(why, "not supported"),
			       "3.10: %d (%s)", err, why);
		} else {
			tap_ok(0, "3.10 did not start");
		}
		child__stop(&ch);
	} else {
		tap_diag("%s is not installed: the 3.10 refusal is not checked", py310);
	}

	/* A program that is not an interpreter, named like one. */
	snprintf(fake, sizeof(fake), "%s/python3", dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s'", fake);
	tap_ok(system(cmd) == 0, "copy sleep to %s", fake);
	child__start(&ch, (char *const[]){ fake, "1000", NULL });
	for (i = 0; i < 200; i++) {
		char exe[600], path[64];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", ch.pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0 && (exe[n] = '\0', !strcmp(exe, fake)))
			break;
		sleep_ms(10);
	}
	sleep_ms(50); /* its libraries mapped */
	err = py_layout__detect((__u32)ch.pid, l, why, sizeof(why));
	tap_ok(err == -ENOENT, "sleep named python3: %d (%s)", err, why);
	child__stop(&ch);

	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	err = py_layout__detect((__u32)pid, l, why, sizeof(why));
	tap_ok(err == -ESRCH, "a process that has exited: %d (%s)", err, why);
	err = py_layout__detect((__u32)getpid(), l, NULL, 0);
	tap_ok(err == -ENOENT, "this test (no CPython) with no why: %d", err);
	free(l);
}

/*
 * An interpreter whose file was deleted after it started (a package upgrade) is read
 * through /proc/PID/map_files; detecting it again gives the same layout (from the cache).
 */
static void test_deleted(const char *dir)
{
	static const char src[] = "/usr/bin/python3.11";
	struct py_layout *l = calloc(2, sizeof(*l));
	char copy[512], cmd[1200], why[PY_WHY_MAX], line[64];
	struct child ch;
	int err;

	if (access(src, X_OK)) {
		tap_diag("%s is not installed: the deleted interpreter is not checked", src);
		free(l);
		return;
	}
	snprintf(copy, sizeof(copy), "%s/python3.11-deleted", dir);
	snprintf(cmd, sizeof(cmd), "cp %s '%s'", src, copy);
	tap_ok(system(cmd) == 0, "copy %s", src);
	child__start(&ch, (char *const[]){ copy, "-c",
					   "import time; print('ready', flush=True); "
					   "time.sleep(1000)",
					   NULL });
	if (ch.out && fgets(line, sizeof(line), ch.out)) {
		unlink(copy);
		err = py_layout__detect((__u32)ch.pid, &l[0], why, sizeof(why));
		tap_ok(!err && !strcmp(l[0].path, copy), "a deleted interpreter: %d (%s), %s", err,
		       err ? why : "", l[0].path);
		err = py_layout__detect((__u32)ch.pid, &l[1], why, sizeof(why));
		tap_ok(!err && !memcmp(&l[0], &l[1], sizeof(*l)),
		       "detected again: the same layout");
	} else {
		tap_ok(0, "%s did not start", copy);
	}
	child__stop(&ch);
	free(l);
}

int main(void)
{
	static const struct {
		const char *path;
		unsigned minor;
	} pythons[] = {
		{ "/usr/bin/python3.11", 11 },
		{ "/root/.pyenv/versions/3.11.7/bin/python3.11", 11 },
		{ "/root/.pyenv/versions/3.12.1/bin/python3.12", 12 },
		{ "/root/.pyenv/versions/3.13.0/bin/python3.13", 13 },
	};
	char dir[] = "/tmp/xpusup-py-e2e-XXXXXX", cmd[128];
	unsigned i, n_run = 0, n_checked = 0;

	for (i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++)
		n_run += !access(pythons[i].path, X_OK);
	if (!n_run)
		tap_skip_all("needs CPython 3.11, 3.12 or 3.13 (Debian's or pyenv's)");
	if (!mkdtemp(dir))
		tap_bail("unable to create %s: %s", dir, strerror(errno));
	for (i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		if (access(pythons[i].path, X_OK)) {
			tap_diag("%s is not installed: not checked", pythons[i].path);
			continue;
		}
		test_interpreter(pythons[i].path, dir, pythons[i].minor, !n_checked++);
	}
	test_refusals(dir);
	test_deleted(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		tap_diag("unable to remove %s", dir);
	return tap_done();
}
