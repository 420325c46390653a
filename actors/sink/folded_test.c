// SPDX-License-Identifier: MIT
/*
 * The folded format without a session: hand-made correlated events with and without frame
 * names in, flame.folded out, compared line by line: names where the events have them (';'
 * and line breaks replaced), hex where not, a stack named by a later event, two addresses of
 * one function merged into one line, a restarted sink reading its long lines back, and user
 * scopes: ranges as "[range] NAME" frames after the comm, outermost first, for samples and
 * for GPU work that arrives after its range closed; NVTX ranges as "[nvtx] NAME"; unknown and
 * forgotten ranges (the table keeps the newest 65536) leave the stack as it is, also for a
 * range whose scope the sink had already seen, and a parent that comes after its child joins
 * the chain. Python frames (common/pyframe.h) among native ones: "[py] QUALNAME (FILE)", one
 * function's lines one stack and one line, "[py] 0x<code>" unnamed, under a GPU leaf too.
 * The names table: a full one still finds what it holds. tests/sink_test.sh checks whole sessions against golden files.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/sink/flame_frames.h"
#include "actors/sink/fmt_test_env.h"
#include "common/pyframe.h"
#include "tests/tap.h"

#define RANGES 65536u /* folded.c's RANGES_MAX */

static char path[256];
static bool resume;
static __u64 last_stacks; /* the "stacks" counter of the last run, before finish */

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	if (!strcmp(key, "html"))
		return "none";
	return strcmp(key, "path") ? NULL : path;
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	if (strcmp(key, "path"))
		return -ENOENT;
	snprintf(buf, size, "%s", path);
	return 0;
}

static struct xpu_cevent sample(const __u64 *stack, const char *const *frames, __u16 n_kernel,
				__u16 n_user, __u64 weight)
{
	return (struct xpu_cevent){ .kind = XPU_REC_CPU_SAMPLE,
				    .pid = 42,
				    .tid = 42,
				    .stack = stack,
				    .frames = frames,
				    .n_kernel = n_kernel,
				    .n_user = n_user,
				    .value = weight };
}

static struct xpu_cevent range(__u64 id, __u32 phase, __u64 parent_id, const char *name,
			       __u16 flags)
{
	return (struct xpu_cevent){ .kind = XPU_REC_RANGE,
				    .id = id,
				    .pid = 42,
				    .tid = 42,
				    .flags = flags,
				    .sub_kind = phase,
				    .parent_id = parent_id,
				    .name = name,
				    .name_len = name ? (__u32)strlen(name) : 0 };
}

/* vecAdd's 100 ns, launched at stack (one user frame) */
static struct xpu_cevent vec_add(const __u64 *stack, const char *const *frames)
{
	return (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
				    .pid = 42,
				    .ts_ns = 1000,
				    .end_ns = 1100,
				    .name = "vecAdd",
				    .name_len = 6,
				    .stack = stack,
				    .frames = frames,
				    .n_user = 1 };
}

/* e inside range: its parent and its inside_range link, as the correlator sets them */
static struct xpu_cevent inside(struct xpu_cevent e, __u64 parent_id, __u64 range_id)
{
	e.parent_id = parent_id;
	e.links[e.n_links++] =
		(struct xpu_link){ .type = XPU_LINK_INSIDE_RANGE, .target = range_id };
	return e;
}

/* open, one batch, finish: the file's text (the caller frees it) */
static char *run(const struct xpu_cevent *ev, __u32 n)
{
	struct fmt_env env = { .get = env_get, .path = env_path, .resume = resume };
	struct xpu_wire_batch b = { .version = 1, .n_events = n };
	char why[512];
	void *st = NULL;
	int err;

	err = fmt_folded.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open: %s", err ? why : "ok"))
		return NULL;
	fmt_folded.batch(st, &b, ev);
	{
		const char *names[16];
		__u64 values[16];

		last_stacks = fmt_folded.counters(st, names, values, 16) ? values[0] : 0;
	}
	err = fmt_folded.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_folded.free(st);
	return tap_slurp(path);
}

static void ranges(void)
{
	static const __u64 leaf[1] = { 0x401000 }, launch_at[1] = { 0x402000 };
	static const char *const leaf_name[1] = { "main" }, *const launch_name[1] = { "step" };
	struct xpu_cevent e[24], *many;
	char *text, *want;
	__u32 n = 0, i;

	e[n++] = (struct xpu_cevent){
		.kind = XPU_REC_PROC_EXEC, .pid = 42, .name = "train", .name_len = 5
	};
	e[n++] = range(100, XPU_RANGE_PUSH, 0, "epoch", 0);
	e[n++] = range(101, XPU_RANGE_PUSH, 100, "for;ward\n", 0);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 5), 101, 101);
	/* inside an API call: the call is the parent, the range the link */
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 7), 555, 100);
	e[n++] = range(102, XPU_RANGE_POP, 100, NULL, 0);
	e[n++] = range(103, XPU_RANGE_POP, 0, NULL, 0);
	/* the kernel of a launch inside "for;ward", after the range closed */
	e[n++] = inside(vec_add(launch_at, launch_name), 556, 101);
	e[n++] = range(104, XPU_RANGE_PUSH, 0, "nv", XPU_RANGE_F_NVTX);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 11), 104, 104);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 13), 999, 999); /* an unknown range */
	e[n++] = range(105, XPU_RANGE_PUSH, 0, NULL, 0);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 17), 105, 105);
	/* a range whose parent comes after it (the sink keeps a range's scope: it must see
	 * that the chain now goes on) */
	e[n++] = range(200, XPU_RANGE_PUSH, 201, "child", 0);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 19), 200, 200);
	e[n++] = range(201, XPU_RANGE_PUSH, 0, "late", 0);
	e[n++] = inside(sample(leaf, leaf_name, 0, 1, 23), 200, 200);
	text = run(e, n);
	want = "train;[nvtx] nv;main 11\n"
	       "train;[range] child;main 19\n"
	       "train;[range] epoch;[range] for_ward_;main 5\n"
	       "train;[range] epoch;[range] for_ward_;step;[gpu] vecAdd 100\n"
	       "train;[range] epoch;main 7\n"
	       "train;[range] late;[range] child;main 23\n"
	       "train;[range] unnamed;main 17\n"
	       "train;main 13\n";
	if (!tap_ok(text && !strcmp(text, want),
		    "ranges as frames after the comm, outermost first, kept past their end"))
		tap_diag("got:\n%s", text ? text : "(no file)");
	free(text);

	/* 65536 more ranges after "epoch": it is forgotten, its child still known (a chain
	 * starts at the oldest range known), the newest too */
	many = calloc(RANGES + 8, sizeof(*many));
	if (!tap_ok(many != NULL, "memory for %u ranges", RANGES))
		return;
	n = 0;
	many[n++] = e[0];
	many[n++] = range(100, XPU_RANGE_PUSH, 0, "epoch", 0);
	many[n++] = range(101, XPU_RANGE_PUSH, 100, "inner", 0);
	/* while "epoch" is known (the scope the sink keeps for "inner" must go with it) */
	many[n++] = inside(sample(leaf, leaf_name, 0, 1, 2), 101, 101);
	for (i = 0; i < RANGES - 1; i++)
		many[n++] = range(1000 + i, XPU_RANGE_PUSH, 0, "filler", 0);
	many[n++] = inside(sample(leaf, leaf_name, 0, 1, 3), 100, 100); /* forgotten */
	many[n++] = inside(sample(leaf, leaf_name, 0, 1, 5), 101, 101);
	many[n++] = inside(sample(leaf, leaf_name, 0, 1, 7), 1000 + RANGES - 2, 1000 + RANGES - 2);
	text = run(many, n);
	want = "train;[range] epoch;[range] inner;main 2\n"
	       "train;[range] filler;main 7\n"
	       "train;[range] inner;main 5\n"
	       "train;main 3\n";
	if (!tap_ok(text && !strcmp(text, want),
		    "a bounded table: the oldest ranges are forgotten"))
		tap_diag("got:\n%s", text ? text : "(no file)");
	free(text);
	free(many);
	unlink(path);
}

/* A Python program's samples: the correlator's stacks, innermost first, Python frames
 * (tagged addresses, "QUALNAME (FILE:LINE)" names) between the interpreter's native ones. */
static void python(void)
{
	/* the code objects' addresses */
	const __u64 HOT = 0x7f0000001000ull, STEP = 0x7f0000002000ull, MAIN = 0x7f0000003000ull,
		    MOD = 0x7f0000004000ull, ANON = 0x7f0000005000ull;
	static __u64 at12[8], at13[8], anon[5], launch[1];
	static const char *const n12[8] = { "_PyObject_Malloc",	 "long_mul",
					    "hot_a (/w/p.py:9)", "train_step (/w/p.py:12)",
					    "main (/w/p.py:20)", "<module> (/w/p.py:30)",
					    "Py_RunMain",	 "main" };
	static const char *const n13[8] = { "_PyObject_Malloc",	 "long_mul",
					    "hot_a (/w/p.py:9)", "train_step (/w/p.py:13)",
					    "main (/w/p.py:20)", "<module> (/w/p.py:30)",
					    "Py_RunMain",	 "main" };
	/* a qualname with ';', an unnamed frame, a name the reader could not cut at a line */
	static const char *const nanon[5] = { "PyNumber_Add", NULL, "A;b.f (/w/p.py:4)", "<lambda>",
					      "<module> (/w/p.py:31)" };
	static const char *const nlaunch[1] = { "train_step (/w/p.py:14)" };
	struct xpu_cevent e[8];
	char *text, *want;
	__u32 n = 0;

	at12[0] = 0x401000;
	at12[1] = 0x401100;
	at12[2] = xpu_pyframe__ip(HOT, 9);
	at12[3] = xpu_pyframe__ip(STEP, 12);
	at12[4] = xpu_pyframe__ip(MAIN, 20);
	at12[5] = xpu_pyframe__ip(MOD, 30);
	at12[6] = 0x402000;
	at12[7] = 0x402100;
	memcpy(at13, at12, sizeof(at13));
	at13[3] = xpu_pyframe__ip(STEP, 13); /* the same function, another line */
	anon[0] = 0x403000;
	anon[1] = xpu_pyframe__ip(ANON, 7);
	anon[2] = xpu_pyframe__ip(HOT + 0x100, 4);
	anon[3] = xpu_pyframe__ip(HOT + 0x200, 5);
	anon[4] = xpu_pyframe__ip(MOD, 31);
	launch[0] = xpu_pyframe__ip(STEP, 14);
	e[n++] = (struct xpu_cevent){
		.kind = XPU_REC_PROC_EXEC, .pid = 42, .name = "python3", .name_len = 7
	};
	e[n++] = sample(at12, n12, 0, 8, 1);
	e[n++] = sample(at13, NULL, 0, 8, 2); /* named by the line-12 stack: one stack */
	e[n++] = sample(at13, n13, 0, 8, 4);
	e[n++] = sample(anon, nanon, 0, 5, 5);
	e[n++] = vec_add(launch, nlaunch);
	text = run(e, n);
	want = "python3;[py] <module> (/w/p.py);[py] <lambda>;[py] A_b.f (/w/p.py);"
	       "[py] 0x7f0000005000;PyNumber_Add 5\n"
	       "python3;[py] train_step (/w/p.py);[gpu] vecAdd 100\n"
	       "python3;main;Py_RunMain;[py] <module> (/w/p.py);[py] main (/w/p.py);"
	       "[py] train_step (/w/p.py);[py] hot_a (/w/p.py);long_mul;_PyObject_Malloc 7\n";
	if (!tap_ok(text && !strcmp(text, want),
		    "Python frames: \"[py] QUALNAME (FILE)\", lines merged, unnamed as code"))
		tap_diag("got:\n%s", text ? text : "(no file)");
	/* 4 if the stacks at lines 12 and 13 of train_step were apart */
	tap_ok(last_stacks == 3, "one function at two lines is one stack: %llu stacks",
	       (unsigned long long)last_stacks);
	free(text);
	unlink(path);
}

/* The names table folded and pprof keep their frames' names in: a full one still finds the
 * names it holds (it refused them, and their stacks turned to hex), and refuses new ones, by
 * count and by bytes. */
static void test_names_full(void)
{
	struct flame_names t = { .max = 3, .max_bytes = 64 };
	const char *a = flame_names__intern(&t, "alpha"), *b = flame_names__intern(&t, "beta");
	const char *c = flame_names__intern(&t, "gamma");

	tap_ok(a && b && c && flame_names__intern(&t, "beta") == b && !flame_names__intern(&t, "d"),
	       "names: a full table refuses a new name");
	tap_ok(flame_names__intern(&t, "alpha") == a && flame_names__intern(&t, "gamma") == c,
	       "names: and still finds every name it holds");
	flame_names__free(&t);
	t = (struct flame_names){ .max_bytes = 16 };
	a = flame_names__intern(&t, "0123456789");
	tap_ok(a && !flame_names__intern(&t, "abcdefghij") && flame_names__intern(&t, "abc") &&
		       flame_names__intern(&t, "0123456789") == a,
	       "names: the bytes kept are bounded too");
	flame_names__free(&t);
}

/* A flame graph page that would be the folded file itself is refused at open: path =
 * out/flame.html (whose page goes beside it, under the same name), or html = path. */
static void test_html_is_path(void)
{
	struct fmt_test_opt beside[] = { { "path", "/tmp/xpusup-folded-same.html" },
					 { NULL, NULL } };
	struct fmt_test_opt same[] = { { "path", "/tmp/xpusup-folded-same.folded" },
				       { "html", "/tmp/xpusup-folded-same.folded" },
				       { NULL, NULL } };
	struct fmt_env env = fmt_test_env(beside);
	char why[256] = "";
	void *st = NULL;
	int err = fmt_folded.open(&st, &env, why, sizeof(why));

	tap_ok(err == -EINVAL && strstr(why, "the same file as 'path'"),
	       "html: a page that would be path itself is refused (%s)", why);
	if (!err)
		fmt_folded.free(st);
	env = fmt_test_env(same);
	why[0] = 0;
	st = NULL;
	err = fmt_folded.open(&st, &env, why, sizeof(why));
	tap_ok(err == -EINVAL && strstr(why, "the same file as 'path'"),
	       "html: and so is html = path (%s)", why);
	if (!err)
		fmt_folded.free(st);
}

/* Past max_stacks, each process's further stacks go to its [more stacks] line; past half as
 * many such lines again, the rest go to one line, so that no weight is lost and the table
 * keeps free slots (it could fill to its last slot, and then dropped the weight). */
static void test_more_stacks(void)
{
	char p[64];
	struct fmt_test_opt o[] = { { "path", p }, { "max_stacks", "16" }, { NULL, NULL } };
	struct fmt_env env = fmt_test_env(o);
	struct xpu_wire_batch b = { .version = 1, .n_events = 36 };
	static __u64 stacks[36];
	struct xpu_cevent e[36];
	char why[256] = "", *text;
	void *st = NULL;
	unsigned int i;

	snprintf(p, sizeof(p), "/tmp/xpusup-folded-more-%d.folded", (int)getpid());
	if (fmt_folded.open(&st, &env, why, sizeof(why)))
		tap_bail("open: %s", why);
	for (i = 0; i < 36; i++) { /* 16 stacks of pid 1, then one each of 20 more pids */
		stacks[i] = 0x400000 + i;
		e[i] = sample(&stacks[i], NULL, 0, 1, 1);
		e[i].pid = i < 16 ? 1 : 100 + i;
	}
	fmt_folded.batch(st, &b, e);
	fmt_folded.finish(st, why, sizeof(why));
	fmt_folded.free(st);
	text = tap_slurp(p);
	tap_ok(text && strstr(text, "pid_116;[more stacks] 1\n") &&
		       strstr(text, "pid_123;[more stacks] 1\n") && !strstr(text, "pid_124;") &&
		       strstr(text, "[other_processes];[more stacks] 12\n"),
	       "more stacks: 8 lines of their own, then one for the 12 processes past them");
	free(text);
	unlink(p);
}

int main(void)
{
	static const __u64 stack[3] = { 0xffffffff81000010ull, 0x401000, 0x401100 };
	static const char *const names[3] = { "sys_read", NULL, "main;x\ny\x7f" };
	static const __u64 late[1] = { 0x500000 }, bare[1] = { 0x600000 };
	static const __u64 dup1[1] = { 0x700000 }, dup2[1] = { 0x700010 };
	static const char *const later[1] = { "later" }, *const dup[1] = { "dup" };
	static const char *const launch[1] = { "void launch<float>(int, char)" };
	static __u64 deep[XPU_WIRE_STACK_MAX];
	static const char *deep_names[XPU_WIRE_STACK_MAX];
	static char deep_text[XPU_WIRE_STACK_MAX][301];
	struct xpu_cevent e[16];
	char *text, *want;
	__u32 n = 0, i;

	test_names_full();
	test_html_is_path();
	test_more_stacks();
	snprintf(path, sizeof(path), "/tmp/xpusup-folded-test-%d.folded", (int)getpid());
	e[n++] = (struct xpu_cevent){
		.kind = XPU_REC_PROC_EXEC, .pid = 42, .name = "train", .name_len = 5
	};
	e[n++] = sample(stack, names, 1, 2, 10);
	e[n++] = sample(stack, NULL, 1, 2, 10); /* the same stack: the same line */
	e[n++] = sample(late, NULL, 0, 1, 5); /* named only by the next */
	e[n++] = sample(late, later, 0, 1, 5);
	e[n++] = sample(bare, NULL, 0, 1, 7);
	e[n++] = sample(dup1, dup, 0, 1, 1); /* one function at two addresses: one line */
	e[n++] = sample(dup2, dup, 0, 1, 2);
	e[n++] = vec_add(late, launch);
	e[n] = vec_add(late, launch); /* a kernel's name is a frame's: ';' and controls go too */
	e[n].name = "k;x\ty";
	e[n++].name_len = 6;
	/* the counts of a stack the decoder had no room for, without the stack: no frames */
	e[n++] = sample(NULL, NULL, 1, 2, 4);
	text = run(e, n);
	want = "train 4\n"
	       "train;0x600000 7\n"
	       "train;dup 3\n"
	       "train;later 10\n"
	       "train;main_x_y_;0x401000;sys_read_[k] 20\n"
	       "train;void launch<float>(int, char);[gpu] k_x_y 100\n"
	       "train;void launch<float>(int, char);[gpu] vecAdd 100\n";
	if (!tap_ok(text && !strcmp(text, want),
		    "names where the events have them, hex where not, ';' and control bytes "
		    "replaced; a sample without its stack is its process's alone"))
		tap_diag("got:\n%s", text ? text : "(no file)");
	free(text);

	/* a stack of 254 frames with names of 300 bytes: a line of 76 KB, read back whole
	 * by a restarted sink */
	for (i = 0; i < XPU_WIRE_STACK_MAX; i++) {
		deep[i] = 0x800000 + i;
		memset(deep_text[i], 'a' + i % 26, 300);
		deep_names[i] = deep_text[i];
	}
	e[1] = sample(deep, deep_names, 0, XPU_WIRE_STACK_MAX, 3);
	text = run(e, 2);
	tap_ok(text && strlen(text) > 300 * XPU_WIRE_STACK_MAX &&
		       !strcmp(text + strlen(text) - 3, " 3\n") && !strchr(text, '\n')[1],
	       "a line of %zu bytes, whole", text ? strlen(text) : 0);
	resume = true;
	e[1].value = 4;
	want = text;
	text = run(e, 2);
	tap_ok(text && want && strlen(text) == strlen(want) &&
		       !strncmp(text, want, strlen(want) - 3) &&
		       !strcmp(text + strlen(text) - 3, " 7\n"),
	       "a restarted sink reads the long line back and adds to it");
	free(want);
	free(text);
	unlink(path);
	resume = false;
	ranges();
	python();
	return tap_done();
}
