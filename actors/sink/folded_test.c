// SPDX-License-Identifier: MIT
/*
 * The folded format without a session: hand-made correlated events with and without frame
 * names in, flame.folded out, compared line by line: names where the events have them (';'
 * and line breaks replaced), hex where not, a stack named by a later event, two addresses of
 * one function merged into one line, and a restarted sink reading its long lines back.
 * tests/sink_test.sh checks whole sessions against golden files.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

static char path[256];
static bool resume;

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
	err = fmt_folded.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	fmt_folded.free(st);
	return tap_slurp(path);
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
	e[n] = (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
				    .pid = 42,
				    .ts_ns = 1000,
				    .end_ns = 1100,
				    .name = "vecAdd",
				    .name_len = 6,
				    .stack = late,
				    .frames = launch,
				    .n_user = 1 };
	n++;
	text = run(e, n);
	want = "train;0x600000 7\n"
	       "train;dup 3\n"
	       "train;later 10\n"
	       "train;main_x_y_;0x401000;sys_read_[k] 20\n"
	       "train;void launch<float>(int, char);[gpu] vecAdd 100\n";
	if (!tap_ok(text && !strcmp(text, want),
		    "names where the events have them, hex where not, ';' and control bytes "
		    "replaced"))
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
	return tap_done();
}
