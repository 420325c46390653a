// SPDX-License-Identifier: MIT
/*
 * The symbolizer against answer keys: processes that print their own functions' addresses
 * (testdata/symbolize_child.c: PIE, non-PIE, stripped with separate debug info, a dlopen()ed
 * library, C++), our own functions, /proc/kallsyms read here independently, and garbage.
 * Every name must be the function's name exactly; every pointer for the same text the same.
 *
 * Usage: symbolize_test CHILD_PIE CHILD_NOPIE CHILD_STRIPPED LIB.so CXX_CHILD|-
 */
#include "actors/correlator/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"

#define FNS_MAX 16
#define UNKNOWN SYMBOLIZER_UNKNOWN

struct fn {
	char name[512];
	__u64 addr;
};

struct child {
	pid_t pid;
	FILE *out; /* its stdout */
	int in; /* its stdin */
};

/* Our own functions, to be named in our own (PIE) process. */
int test_global_fn(int x);
void *test_caller(void);

static __attribute__((noinline)) int test_static_fn(int x)
{
	volatile int v = x;

	return v * 7 + 3;
}

__attribute__((noinline)) int test_global_fn(int x)
{
	volatile int v = x;

	return v + test_static_fn(x);
}

static __attribute__((noinline)) void *return_address(void)
{
	return __builtin_extract_return_addr(__builtin_return_address(0));
}

__attribute__((noinline)) void *test_caller(void)
{
	void *ret = return_address();

	__asm__ volatile("" ::: "memory"); /* no tail call: the return address stays inside */
	return ret;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static int child_start(struct child *c, const char *path)
{
	int out[2], in[2];

	if (pipe2(out, O_CLOEXEC) || pipe2(in, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(in[0]);
	c->out = fdopen(out[0], "r");
	c->in = in[1];
	return c->out ? 0 : -errno;
}

/* "fn NAME 0xADDRESS" lines (NAME may hold spaces) up to "ready": the number read, or -1. */
static int child_read(struct child *c, struct fn *fns, int max)
{
	char line[512], *sp;
	int n = 0;

	while (fgets(line, sizeof(line), c->out)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "ready"))
			return n;
		sp = strrchr(line, ' ');
		if (strncmp(line, "fn ", 3) || !sp || n == max) {
			tap_diag("child %d said: %s", c->pid, line);
			return -1;
		}
		*sp = '\0';
		snprintf(fns[n].name, sizeof(fns[n].name), "%s", line + 3);
		fns[n].addr = strtoull(sp + 1, NULL, 16);
		n++;
	}
	return -1;
}

static void child_send(struct child *c, const char *cmd)
{
	ssize_t len = (ssize_t)strlen(cmd);

	if (write(c->in, cmd, (size_t)len) != len)
		tap_diag("write to child %d: %s", c->pid, strerror(errno));
}

/* Let it exit and reap it: its exit status, or -1. */
static int child_end(struct child *c)
{
	int status;

	close(c->in);
	fclose(c->out);
	if (waitpid(c->pid, &status, 0) != c->pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Check every function of fns by name; returns how many resolved to their own name. */
static int check_fns(struct symbolizer *s, __u32 pid, const struct fn *fns, int n, const char *what)
{
	int i, good = 0;
	const char *got;

	for (i = 0; i < n; i++) {
		got = symbolizer__name(s, pid, fns[i].addr, false);
		if (!strcmp(got, fns[i].name))
			good++;
		else
			tap_diag("%s: %#llx: got \"%s\", want \"%s\"", what,
				 (unsigned long long)fns[i].addr, got, fns[i].name);
	}
	return good;
}

static const struct fn *fn_named(const struct fn *fns, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(fns[i].name, name))
			return &fns[i];
	return NULL;
}

static int elf_type(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, &eh, sizeof(eh));
	close(fd);
	return got == (ssize_t)sizeof(eh) ? eh.e_type : -1;
}

/* Whether path has a .symtab (or -1 when it cannot be read as ELF). */
static int has_symtab(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			found = 1;
	elf_end(elf);
	close(fd);
	return found;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, err = 0;
	ssize_t got;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while ((got = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)got) != got) {
			err = -EIO;
			break;
		}
	if (got < 0)
		err = -errno;
	close(in);
	close(out);
	return err;
}

static int data_word = 1; /* a data address: not a function */

int main(int argc, char **argv);

/* 1. Our own process: PIE, function starts and a return address in a middle. */
static void test_own(void)
{
	struct symbolizer *s = symbolizer__new();
	__u32 pid = (__u32)getpid();
	__u64 mid = (__u64)(uintptr_t)test_caller();
	const char *a, *b;

	if (!s)
		tap_bail("symbolizer__new: %s", strerror(errno));
	tap_ok(elf_type("/proc/self/exe") == ET_DYN, "the test itself is PIE (ET_DYN)");
	a = symbolizer__name(s, pid, (__u64)(uintptr_t)test_static_fn, false);
	tap_ok(!strcmp(a, "test_static_fn"), "own static function: %s", a);
	b = symbolizer__name(s, pid, (__u64)(uintptr_t)test_static_fn, false);
	tap_ok(a == b, "the same frame twice: the same pointer");
	a = symbolizer__name(s, pid, (__u64)(uintptr_t)test_global_fn, false);
	tap_ok(!strcmp(a, "test_global_fn"), "own global function: %s", a);
	tap_ok(mid > (__u64)(uintptr_t)test_caller, "the return address is past the start");
	a = symbolizer__name(s, pid, mid, false);
	b = symbolizer__name(s, pid, (__u64)(uintptr_t)test_caller, false);
	tap_ok(!strcmp(a, "test_caller"), "a return address in the middle of a function: %s", a);
	tap_ok(a == b, "start and middle of one function: the same pointer");
	a = symbolizer__name(s, pid, (__u64)(uintptr_t)&data_word, false);
	tap_ok(!strcmp(a, UNKNOWN), "a data address is not a function: %s", a);
	symbolizer__free(s);
}

/* 2. Children, PIE and non-PIE, a dlopen()ed library, exit before lookup, deleted binary. */
static void test_child(const char *path, const char *lib, bool pie)
{
	struct symbolizer *s = symbolizer__new(), *late = symbolizer__new();
	struct symbolizer_stats st0, st1;
	struct fn fns[FNS_MAX], lib_fns[FNS_MAX];
	const char *what = pie ? "PIE child" : "non-PIE child";
	char cmd[4200];
	struct child c;
	int n, n_lib = 0;
	__u32 pid;

	if (!s || !late)
		tap_bail("symbolizer__new: %s", strerror(errno));
	tap_ok(elf_type(path) == (pie ? ET_DYN : ET_EXEC), "%s: ELF type %s", what,
	       pie ? "ET_DYN" : "ET_EXEC");
	if (child_start(&c, path))
		tap_bail("unable to start %s", path);
	pid = (__u32)c.pid;
	n = child_read(&c, fns, FNS_MAX);
	tap_ok(n == 4, "%s: %d functions reported", what, n);
	tap_eq_u64(symbolizer__capture(late, pid), 0, "%s: capture", what);
	tap_eq_u64(check_fns(s, pid, fns, n, what), n, "%s: every function named (live)", what);
	if (pie) {
		const struct fn *child_main = fn_named(fns, n, "main");
		const char *a = child_main ? symbolizer__name(s, pid, child_main->addr, false) : "";
		const char *b = symbolizer__name(s, (__u32)getpid(), (__u64)(uintptr_t)main, false);

		/* Interned across files: "main" of the child and "main" of this test. */
		tap_ok(!strcmp(a, "main") && a == b, "\"main\" of two programs: one pointer");
		/* dlopen after the maps were read: a miss re-reads them (once 100 ms have
		 * passed since the last read). */
		symbolizer__stats(s, &st0);
		sleep_ms(150);
		snprintf(cmd, sizeof(cmd), "dlopen %s\n", lib);
		child_send(&c, cmd);
		n_lib = child_read(&c, lib_fns, FNS_MAX);
		tap_ok(n_lib == 4, "dlopen: %d library functions reported", n_lib);
		tap_eq_u64(check_fns(s, pid, lib_fns, n_lib, "dlopen"), n_lib,
			   "dlopen: library functions named after a re-read of the maps");
		symbolizer__stats(s, &st1);
		tap_eq_u64(st1.maps_reads - st0.maps_reads, 1, "dlopen: exactly one maps re-read");
	}
	tap_eq_u64(child_end(&c), 0, "%s: exited 0", what);
	/* Gone and reaped: maps from the capture, files read from their paths now. */
	tap_eq_u64(check_fns(late, pid, fns, n, what), n,
		   "%s: every function named after it exited (captured earlier)", what);
	symbolizer__stats(late, &st1);
	tap_eq_u64(st1.maps_reads, 1, "%s: the late symbolizer read the maps once", what);
	if (pie) {
		tap_eq_u64(check_fns(s, pid, lib_fns, n_lib, "dlopen"), n_lib,
			   "dlopen: library functions still named after exit");
		symbolizer__stats(s, &st0);
		symbolizer__forget(s, pid);
		symbolizer__stats(s, &st1);
		tap_eq_u64(st0.pids - st1.pids, 1, "forget: one process fewer");
		tap_ok(!strcmp(symbolizer__name(s, pid, fns[0].addr, false), UNKNOWN),
		       "forget: its frames are [unknown] (maps gone, process gone)");
		symbolizer__stats(s, &st0);
		tap_eq_u64(st0.maps_missing - st1.maps_missing, 1, "forget: the re-read failed");
	}
	symbolizer__free(late);
	symbolizer__free(s);
}

/* A binary deleted while it runs: capture loads it then (through map_files), since its path
 * will not be there after it has exited. */
static void test_deleted(const char *path)
{
	char dir[] = "/tmp/symbolize_test.XXXXXX", copy[64];
	struct symbolizer *s = symbolizer__new();
	struct symbolizer_stats st;
	struct fn fns[FNS_MAX];
	struct child c;
	int n;

	if (!s || !mkdtemp(dir))
		tap_bail("set-up: %s", strerror(errno));
	snprintf(copy, sizeof(copy), "%s/child", dir);
	if (copy_file(path, copy) || child_start(&c, copy))
		tap_bail("unable to copy and start %s", path);
	n = child_read(&c, fns, FNS_MAX);
	unlink(copy);
	rmdir(dir);
	tap_eq_u64(symbolizer__capture(s, (__u32)c.pid), 0, "deleted binary: capture");
	symbolizer__stats(s, &st);
	tap_eq_u64(st.files_loaded, 1,
		   "deleted binary: it alone loaded at capture (the others can be read by path)");
	tap_eq_u64(child_end(&c), 0, "deleted binary: exited 0");
	tap_eq_u64(check_fns(s, (__u32)c.pid, fns, n, "deleted"), n,
		   "deleted binary: every function named after exit");
	symbolizer__free(s);
}

/* 3. Stripped, with a .gnu_debuglink to its debug file beside it. */
static void test_stripped(const char *path)
{
	char dir[] = "/tmp/symbolize_test.XXXXXX", copy[64];
	struct symbolizer *s = symbolizer__new();
	struct fn fns[FNS_MAX];
	const struct fn *st_fn;
	struct child c;
	int n;

	if (!s)
		tap_bail("symbolizer__new: %s", strerror(errno));
	tap_eq_u64(has_symtab(path), 0, "stripped child has no .symtab");
	if (child_start(&c, path))
		tap_bail("unable to start %s", path);
	n = child_read(&c, fns, FNS_MAX);
	tap_eq_u64(check_fns(s, (__u32)c.pid, fns, n, "stripped"), n,
		   "stripped child: every function named, static ones too (debug file)");
	tap_eq_u64(child_end(&c), 0, "stripped child: exited 0");

	/* The same binary without its debug file beside it: the static function is no longer
	 * named, so the names above came from the debug file. */
	if (!mkdtemp(dir))
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(copy, sizeof(copy), "%s/stripped", dir);
	if (copy_file(path, copy) || child_start(&c, copy))
		tap_bail("unable to copy and start %s", path);
	n = child_read(&c, fns, FNS_MAX);
	st_fn = n > 0 ? fn_named(fns, n, "child_static") : NULL;
	tap_ok(st_fn && strcmp(symbolizer__name(s, (__u32)c.pid, st_fn->addr, false),
			       "child_static"),
	       "stripped child without its debug file: child_static not named");
	child_end(&c);
	unlink(copy);
	rmdir(dir);
	symbolizer__free(s);
}

/* 4. C++: demangled in full, as perf shows it. */
static void test_cxx(const char *path)
{
	struct symbolizer *s;
	struct fn fns[FNS_MAX];
	struct child c;
	int n;

	if (!strcmp(path, "-")) {
		tap_ok(1, "C++ names # SKIP no C++ compiler when this was built");
		return;
	}
	s = symbolizer__new();
	if (!s || child_start(&c, path))
		tap_bail("unable to start %s", path);
	n = child_read(&c, fns, FNS_MAX);
	tap_ok(n == 3, "C++ child: %d functions reported", n);
	tap_eq_u64(check_fns(s, (__u32)c.pid, fns, n, "C++"), n,
		   "C++ child: every function named, demangled");
	tap_eq_u64(child_end(&c), 0, "C++ child: exited 0");
	symbolizer__free(s);
}

struct ksym {
	__u64 addr;
	char type;
	char name[128];
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The text symbols of /proc/kallsyms, sorted; their number, or -1. */
static long kallsyms_read(struct ksym **out, bool *any_address)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct ksym *v = NULL, *grown;
	unsigned long long addr;
	size_t n = 0, cap = 0;
	char type, name[128];

	*any_address = false;
	if (!f)
		return -1;
	while (fscanf(f, "%llx %c %127s%*[^\n]", &addr, &type, name) == 3) {
		if (!strchr("tTwW", type) || strlen(name) == sizeof(name) - 1) /* maybe cut */
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown)
				break;
			v = grown;
		}
		v[n].addr = addr;
		v[n].type = type;
		snprintf(v[n].name, sizeof(v[n].name), "%s", name);
		*any_address |= addr != 0;
		n++;
	}
	fclose(f);
	qsort(v, n, sizeof(*v), ksym_cmp);
	*out = v;
	return (long)n;
}

/* 5. Kernel: T symbols alone at their address resolve at addr and addr + 1. */
static void test_kernel(void)
{
	struct symbolizer *s = symbolizer__new();
	struct symbolizer_stats st;
	struct ksym *v = NULL;
	bool any_address;
	long n, i, picked = 0, good = 0, want[3];
	const char *a, *b;

	if (!s)
		tap_bail("symbolizer__new: %s", strerror(errno));
	n = kallsyms_read(&v, &any_address);
	if (n <= 0) {
		tap_ok(1, "kernel symbols # SKIP /proc/kallsyms unreadable");
		goto free_s;
	}
	if (!any_address) {
		a = symbolizer__name(s, 0, v[n / 2].addr | 0xffffffff81000000ull, true);
		symbolizer__stats(s, &st);
		tap_ok(!strcmp(a, UNKNOWN) && st.kernel_hidden == 1,
		       "kernel addresses hidden (kptr_restrict): [unknown], stats say hidden # SKIP "
		       "run as root for the kernel checks");
		goto free_v;
	}
	want[0] = n / 10;
	want[1] = n / 2;
	want[2] = n - n / 10;
	for (i = 1; i + 1 < n && picked < 3; i++) {
		if (i < want[picked] || v[i].type != 'T' || v[i - 1].addr == v[i].addr ||
		    v[i + 1].addr < v[i].addr + 2)
			continue;
		a = symbolizer__name(s, 0, v[i].addr, true);
		b = symbolizer__name(s, 12345, v[i].addr + 1, true);
		if (!strcmp(a, v[i].name) && a == b)
			good++;
		else
			tap_diag("kernel %#llx: got \"%s\" and \"%s\", want \"%s\"",
				 (unsigned long long)v[i].addr, a, b, v[i].name);
		picked++;
	}
	tap_eq_u64(picked, 3, "kernel: 3 T symbols alone at their address found");
	tap_eq_u64(good, picked, "kernel: addr and addr + 1 named (one pointer)");
	symbolizer__stats(s, &st);
	tap_eq_u64(st.kernel_frames, 2 * picked, "kernel: kernel frames counted");
	tap_ok(st.kernel_symbols > 1000 && st.kernel_hidden == 0, "kernel: %llu text symbols held",
	       (unsigned long long)st.kernel_symbols);
	a = symbolizer__name(s, 0, v[0].addr - 1, true);
	tap_ok(!strcmp(a, UNKNOWN), "kernel: below the first symbol: [unknown]");
free_v:
	free(v);
free_s:
	symbolizer__free(s);
}

/* 6. Garbage, re-read limits, exec, the stack call, interning, stats. */
static void test_garbage_and_stats(void)
{
	struct symbolizer *s = symbolizer__new();
	struct symbolizer_stats st0, st1;
	__u32 pid = (__u32)getpid(), bogus = 0x7ffffff0; /* above PID_MAX_LIMIT */
	__u64 frames = 0, ips[3], t0;
	bool slow;
	const char *u, *names[3], *a;

	if (!s)
		tap_bail("symbolizer__new: %s", strerror(errno));
	t0 = now_ms();
	tap_eq_u64(symbolizer__capture(s, pid), 0, "capture self");
	tap_eq_u64(symbolizer__capture(s, bogus), (__u64)-ENOENT, "capture a missing pid: -ENOENT");
	symbolizer__stats(s, &st0);
	u = symbolizer__name(s, pid, 0, false);
	tap_ok(!strcmp(u, UNKNOWN), "ip 0: [unknown]");
	tap_ok(symbolizer__name(s, pid, 0x10, false) == u, "ip 0x10: the same [unknown]");
	tap_ok(symbolizer__name(s, pid, ~0ull, false) == u, "ip ~0: the same [unknown]");
	tap_ok(symbolizer__name(s, bogus, 0x401000, false) == u, "a missing pid: [unknown]");
	tap_ok(symbolizer__name(s, bogus, 0x401010, false) == u, "and again: [unknown]");
	slow = now_ms() - t0 >= 90; /* the 100 ms re-read window was (nearly) over */
	tap_ok(symbolizer__name(s, 0, 0, true) == u, "kernel address 0: [unknown]");
	frames += 6;
	symbolizer__stats(s, &st1);
	tap_eq_u64(st1.frames - st0.frames, frames, "stats: 6 frames");
	tap_eq_u64(st1.unknown - st0.unknown, 6, "stats: 6 unknown");
	tap_eq_u64(st1.kernel_frames - st0.kernel_frames, 1, "stats: 1 kernel frame");
	if (slow) {
		tap_ok(1, "stats: re-reads within 100 ms # SKIP the frames took 90 ms or more");
	} else {
		tap_eq_u64(st1.maps_reads - st0.maps_reads, 0,
			   "stats: no maps re-read within 100 ms of the capture");
		tap_eq_u64(st1.maps_throttled - st0.maps_throttled, 5, "stats: 5 misses throttled");
	}
	tap_eq_u64(st1.pids, 2, "stats: 2 processes held (self and the missing one)");
	tap_ok(st1.resolve_ns > 0, "stats: resolve time counted (%llu ns)",
	       (unsigned long long)st1.resolve_ns);

	sleep_ms(120);
	t0 = now_ms();
	symbolizer__name(s, pid, 0x10, false);
	symbolizer__name(s, pid, 0x20, false);
	symbolizer__name(s, pid, 0x30, false);
	slow = now_ms() - t0 >= 90;
	symbolizer__stats(s, &st0);
	if (slow)
		tap_ok(st0.maps_reads - st1.maps_reads >= 1,
		       "3 garbage frames after 100 ms: re-read # SKIP (exactly once) they took 90 ms "
		       "or more");
	else
		tap_eq_u64(st0.maps_reads - st1.maps_reads, 1,
			   "3 garbage frames after 100 ms: one maps re-read, not three");

	symbolizer__exec(s, pid, 0);
	a = symbolizer__name(s, pid, (__u64)(uintptr_t)test_static_fn, false);
	symbolizer__stats(s, &st1);
	tap_ok(!strcmp(a, "test_static_fn"), "after exec: maps read again at once: %s", a);
	tap_eq_u64(st1.maps_reads - st0.maps_reads, 1, "after exec: one maps read");

	ips[0] = 0;
	ips[1] = (__u64)(uintptr_t)test_global_fn;
	ips[2] = (__u64)(uintptr_t)test_caller();
	symbolizer__stack(s, pid, ips, 1, 2, names);
	tap_ok(names[0] == u && !strcmp(names[1], "test_global_fn") &&
		       !strcmp(names[2], "test_caller"),
	       "stack: [unknown];test_global_fn;test_caller");
	symbolizer__stats(s, &st0);
	tap_eq_u64(st0.frames - st1.frames, 3, "stack: 3 frames counted");
	tap_eq_u64(st0.kernel_frames - st1.kernel_frames, 1, "stack: 1 kernel frame counted");

	symbolizer__stats(s, &st0);
	tap_ok(st0.files >= 1 && st0.names >= 4 && st0.bytes > 0,
	       "stats: %llu files, %llu names, %llu bytes", (unsigned long long)st0.files,
	       (unsigned long long)st0.names, (unsigned long long)st0.bytes);
	symbolizer__free(s);
}

/* 9. A process gone before its maps were read: the mappings it reported of itself (MODULE
 * records: the CUPTI library's loaded images) name its frames and give its CFI. This
 * process's own executable mappings stand in, reported for a pid that cannot exist. */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void test_modules(void)
{
	struct symbolizer *s = symbolizer__new();
	__u32 self = (__u32)getpid(), gone = 0x7ffffff1; /* above PID_MAX_LIMIT */
	unsigned long long start, end, pgoff, ino;
	unsigned int major, minor, n = 0;
	struct symbolizer_stats st0, st1;
	const char *a, *b, *c;
	struct cfi_rule r;
	char line[4400], perms[8], path[4096];
	__u64 libc_fn = (__u64)(uintptr_t)dlsym(RTLD_DEFAULT, "qsort");
	FILE *f = fopen("/proc/self/maps", "r");

	if (!s || !f)
		tap_bail("symbolizer__new or /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &start, &end, perms,
			   &pgoff, &major, &minor, &ino, path) == 8 &&
		    perms[2] == 'x' && path[0] == '/')
			n += !symbolizer__module(s, gone, 100, start, end, pgoff,
						 makedev(major, minor), ino, path);
	fclose(f);
	symbolizer__stats(s, &st0);
	tap_ok(n >= 2 && st0.modules == n, "modules: %u executable mappings taken", n);
	a = symbolizer__name(s, gone, (__u64)(uintptr_t)test_static_fn, false);
	tap_ok(!strcmp(a, "test_static_fn"), "modules: the gone process's own function: %s", a);
	b = symbolizer__name(s, gone, libc_fn, false);
	c = symbolizer__name(s, self, libc_fn, false);
	tap_ok(libc_fn && b == c && strcmp(b, UNKNOWN),
	       "modules: a libc function as for a live "
	       "process: %s, %s",
	       b, c);
	tap_eq_u64(symbolizer__rule(s, gone, (__u64)(uintptr_t)test_static_fn, &r), 0,
		   "modules: the unwinder finds a CFI rule through them");
	symbolizer__stats(s, &st1);
	tap_ok(st1.module_frames >= 3 && st1.unknown == st0.unknown,
	       "modules: frames found through them counted (%llu), none unknown",
	       (unsigned long long)st1.module_frames);
	tap_eq_u64(symbolizer__module(s, gone, 101, (__u64)(uintptr_t)test_static_fn & ~4095ull,
				      ((__u64)(uintptr_t)test_static_fn & ~4095ull) + 4096, 0, 0, 0,
				      "relative"),
		   (__u64)-EINVAL, "modules: a relative path is -EINVAL");
	/* the same report again is known; one over another's range replaces it */
	symbolizer__stats(s, &st0);
	tap_eq_u64(symbolizer__module(s, gone, 102, 0x10000, 0x20000, 0, 0, 0, "/nonexistent/a"), 0,
		   "modules: a report at a free range is taken");
	tap_eq_u64(symbolizer__module(s, gone, 103, 0x10000, 0x20000, 0, 0, 0, "/nonexistent/a"), 0,
		   "modules: the same report again");
	tap_eq_u64(symbolizer__module(s, gone, 104, 0x18000, 0x30000, 0, 0, 0, "/nonexistent/b"), 0,
		   "modules: an overlapping report (dlclose, then dlopen there)");
	symbolizer__stats(s, &st1);
	tap_ok(st1.modules - st0.modules == 2 && st1.modules_known - st0.modules_known == 1,
	       "modules: 2 taken, 1 known again (%llu, %llu)",
	       (unsigned long long)(st1.modules - st0.modules),
	       (unsigned long long)(st1.modules_known - st0.modules_known));
	/* A live process's maps, read, show libc where a later report puts another file (a
	 * dlclose, then a dlopen at that address): the report answers there, not the stale maps */
	{
		__u64 exe_start = 0, exe_pgoff = 0, exe_dev = 0, exe_ino = 0, lc_start = 0, fn_off;
		__u64 fn = (__u64)(uintptr_t)test_static_fn, page, ip;
		char exe[4096] = "";

		f = fopen("/proc/self/maps", "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095s", &start, &end,
				   perms, &pgoff, &major, &minor, &ino, path) == 8 &&
			    perms[2] == 'x') {
				if (start <= fn && fn < end) {
					exe_start = start;
					exe_pgoff = pgoff;
					exe_dev = makedev(major, minor);
					exe_ino = ino;
					snprintf(exe, sizeof(exe), "%s", path);
				}
				if (start <= libc_fn && libc_fn < end)
					lc_start = start;
			}
		if (f)
			fclose(f);
		fn_off = fn - exe_start + exe_pgoff; /* test_static_fn's offset in its file */
		page = libc_fn & ~4095ull; /* a page of libc's text, taken by the test binary */
		ip = page + (fn_off & 4095);
		a = symbolizer__name(s, self, ip, false); /* reads self's maps: libc there */
		symbolizer__stats(s, &st0);
		tap_ok(lc_start && exe[0] == '/' &&
			       !symbolizer__module(s, self, now_ns() + 1, page, page + 4096,
						   fn_off & ~4095ull, exe_dev, exe_ino, exe),
		       "modules: another file reported over a range the maps show libc at");
		b = symbolizer__name(s, self, ip, false);
		symbolizer__stats(s, &st1);
		tap_ok(!strcmp(b, "test_static_fn") && strcmp(a, b) &&
			       st1.maps_superseded - st0.maps_superseded == 1,
		       "modules: named from the report, not the stale maps: %s, was %s", b, a);
		symbolizer__forget(s, self);
	}
	symbolizer__exec(s, gone, 50);
	a = symbolizer__name(s, gone, (__u64)(uintptr_t)test_static_fn, false);
	tap_ok(!strcmp(a, "test_static_fn"),
	       "modules: an exec older than the report (another ring, late) keeps them: %s", a);
	symbolizer__exec(s, gone, 200);
	a = symbolizer__name(s, gone, (__u64)(uintptr_t)test_static_fn, false);
	tap_ok(!strcmp(a, UNKNOWN), "modules: a newer exec drops them: %s", a);
	symbolizer__forget(s, gone);
	symbolizer__free(s);
}

/* 10. The vDSO of a process gone before its maps were read: reported as "[vdso]" (the CUPTI
 * library finds it through AT_SYSINFO_EHDR), read from our own. This process's vDSO stands
 * in, found through the loader, which lists it as linux-vdso.so.1. */
static void test_modules_vdso(void)
{
	struct symbolizer *s = symbolizer__new();
	__u32 self = (__u32)getpid(), gone = 0x7ffffff2;
	unsigned long long start = 0, end = 0, a0, a1;
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	__u64 fn = h ? (__u64)(uintptr_t)dlsym(h, "__vdso_clock_gettime") : 0;
	char line[4400];
	const char *before, *after, *live;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!s || !f)
		tap_bail("symbolizer__new or /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " [vdso]") && sscanf(line, "%llx-%llx", &a0, &a1) == 2) {
			start = a0;
			end = a1;
		}
	fclose(f);
	tap_ok(fn && start && fn >= start && fn < end,
	       "modules: this process's vDSO [%#llx, %#llx) holds __vdso_clock_gettime (%#llx)",
	       start, end, (unsigned long long)fn);
	if (!fn || !start || fn < start || fn >= end) {
		symbolizer__free(s);
		return;
	}
	before = symbolizer__name(s, gone, fn, false);
	tap_eq_u64(symbolizer__module(s, gone, 100, start, end, 0, 0, 0, "[vdso]"), 0,
		   "modules: \"[vdso]\" is taken");
	after = symbolizer__name(s, gone, fn, false);
	live = symbolizer__name(s, self, fn, false);
	tap_ok(!strcmp(before, UNKNOWN), "modules: the vDSO of a gone process unreported: %s",
	       before);
	tap_ok(strstr(after, "clock_gettime") && after == live,
	       "modules: reported, named as a live process's: %s, %s", after, live);
	tap_eq_u64(symbolizer__module(s, gone, 101, start, end, 0, 0, 0, "[heap]"), (__u64)-EINVAL,
		   "modules: another bracketed name is -EINVAL");
	symbolizer__free(s);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: symbolize_test CHILD_PIE CHILD_NOPIE CHILD_STRIPPED LIB.so "
				"CXX_CHILD|-\n");
		return 100;
	}
	signal(SIGPIPE, SIG_IGN);
	test_own();
	test_child(argv[1], argv[4], true);
	test_child(argv[2], argv[4], false);
	test_deleted(argv[1]);
	test_stripped(argv[3]);
	test_cxx(argv[5]);
	test_kernel();
	test_garbage_and_stats();
	test_modules();
	test_modules_vdso();
	return tap_done();
}
