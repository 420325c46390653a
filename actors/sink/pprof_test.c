// SPDX-License-Identifier: MIT
/*
 * The pprof format without a session: hand-made correlated events in, the written file read
 * back (gunzip with zlib, profile.proto decoded by protobuf-c from the schema Debian ships)
 * and checked exactly: sample types, period, every sample's stack (leaf first, names through
 * location -> line -> function -> string) and values and labels; equal stacks and labels
 * merged into one sample, each string, function, location and mapping once; kernel frames
 * in the "[kernel.kallsyms]" mapping, a Python frame's file and line, the GPU leaf over its
 * launch stack as flame.folded names it, range frames outermost last; a name that is not
 * UTF-8 made UTF-8. Then: one file per interval, named by its start, each with what came in
 * it; tables past max_entries (events under "[pprof tables full]", no weight lost); bad keys;
 * a folder that cannot be made. tests/pprof_test.sh opens a session's files in pprof itself.
 */
#include "actors/sink/fmt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "common/pyframe.h"
#include "profile.pb-c.h"
#include "tests/tap.h"

typedef Perftools__Profiles__Profile Profile;

static char dir[200], path[512];
static const char *opt_labels = "team=ml,job=resnet", *opt_host = "testhost", *opt_max = NULL,
		  *opt_interval = NULL;

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	if (!strcmp(key, "path"))
		return path;
	if (!strcmp(key, "labels"))
		return opt_labels;
	if (!strcmp(key, "host"))
		return opt_host;
	if (!strcmp(key, "max_entries"))
		return opt_max;
	if (!strcmp(key, "interval_s"))
		return opt_interval;
	return NULL;
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	if (strcmp(key, "path"))
		return -ENOENT;
	snprintf(buf, size, "%s", path);
	return 0;
}

static struct fmt_env env = { .get = env_get, .path = env_path };

static void batch(void *st, const struct xpu_cevent *ev, __u32 n)
{
	struct xpu_wire_batch b = { .version = 1, .n_events = n };

	fmt_pprof.batch(st, &b, ev);
}

/* The files the format wrote in dir, sorted (their names sort by time). */
static int files(char names[][512], int max)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort), i, k = 0;

	for (i = 0; i < n; i++) {
		if (k < max && strstr(list[i]->d_name, ".pb.gz") && list[i]->d_name[0] != '.')
			snprintf(names[k++], 512, "%s/%s", dir, list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return k;
}

/* gunzip and decode a file; NULL when it is not a gzip'd profile. */
static Profile *load(const char *name)
{
	gzFile in = gzopen(name, "rb");
	size_t len = 0, cap = 1 << 16;
	unsigned char *buf = malloc(cap);
	Profile *p = NULL;
	int n;

	if (!in || !buf)
		goto out;
	while ((n = gzread(in, buf + len, (unsigned int)(cap - len))) > 0) {
		len += (size_t)n;
		if (len == cap && !(buf = realloc(buf, cap *= 2)))
			goto out;
	}
	if (n == 0)
		p = perftools__profiles__profile__unpack(NULL, len, buf);
out:
	if (in)
		gzclose(in);
	free(buf);
	return p;
}

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<bad string>";
}

static const Perftools__Profiles__Location *loc(const Profile *p, uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *fn(const Profile *p, uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	return NULL;
}

/* A sample as text: "frame;frame;... (leaf first) | k=v k=v | v0 v1 v2 v3", a frame its
 * function's name, with "@FILE:LINE" when it has a file, "#0xADDR" when it has no function,
 * "{MAPPING}" when it has a mapping. Labels in the file's order. */
static void sample_text(const Profile *p, const Perftools__Profiles__Sample *s, char *buf,
			size_t size)
{
	size_t len = 0, i, k;

#define PUT(...) len += (size_t)snprintf(buf + len, len < size ? size - len : 0, __VA_ARGS__)
	for (i = 0; i < s->n_location_id; i++) {
		const Perftools__Profiles__Location *l = loc(p, s->location_id[i]);

		PUT("%s", i ? ";" : "");
		if (!l) {
			PUT("<no location %" PRIu64 ">", s->location_id[i]);
			continue;
		}
		for (k = 0; k < l->n_line; k++) {
			const Perftools__Profiles__Function *f = fn(p, l->line[k]->function_id);

			PUT("%s", f ? str(p, f->name) : "<no function>");
			if (f && f->filename)
				PUT("@%s:%" PRId64, str(p, f->filename), l->line[k]->line);
		}
		if (!l->n_line)
			PUT("#0x%" PRIx64, l->address);
		if (l->mapping_id)
			PUT("{%s}", l->mapping_id <= p->n_mapping ?
					    str(p, p->mapping[l->mapping_id - 1]->filename) :
					    "<bad mapping>");
	}
	PUT(" |");
	for (i = 0; i < s->n_label; i++)
		PUT(" %s=%s", str(p, s->label[i]->key), str(p, s->label[i]->str));
	PUT(" |");
	for (i = 0; i < s->n_value; i++)
		PUT(" %" PRId64, s->value[i]);
#undef PUT
}

/* Whether the profile has exactly the samples want (texts as sample_text writes them, in any
 * order); the differences go to the diagnostics. */
static bool samples_are(const Profile *p, const char *const *want, size_t n_want)
{
	bool *seen = calloc(n_want, sizeof(*seen)), ok = p->n_sample == n_want;
	char text[4096];
	size_t i, k;

	for (i = 0; i < p->n_sample; i++) {
		sample_text(p, p->sample[i], text, sizeof(text));
		for (k = 0; k < n_want && (seen[k] || strcmp(want[k], text)); k++)
			;
		if (k == n_want) {
			tap_diag("unexpected sample: %s", text);
			ok = false;
		} else {
			seen[k] = true;
		}
	}
	for (k = 0; k < n_want; k++)
		if (!seen[k]) {
			tap_diag("missing sample: %s", want[k]);
			ok = false;
		}
	free(seen);
	return ok;
}

/* Whether every string is in the table once, "" first. */
static bool strings_once(const Profile *p)
{
	size_t i, k;

	if (!p->n_string_table || p->string_table[0][0])
		return false;
	for (i = 0; i < p->n_string_table; i++)
		for (k = i + 1; k < p->n_string_table; k++)
			if (!strcmp(p->string_table[i], p->string_table[k]))
				return false;
	return true;
}

/* Whether no two functions, locations or mappings are equal, and ids are 1, 2, ... */
static bool entries_once(const Profile *p)
{
	size_t i, k;

	for (i = 0; i < p->n_function; i++) {
		if (p->function[i]->id != i + 1)
			return false;
		for (k = i + 1; k < p->n_function; k++)
			if (p->function[i]->name == p->function[k]->name &&
			    p->function[i]->filename == p->function[k]->filename)
				return false;
	}
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *a = p->location[i];

		if (a->id != i + 1)
			return false;
		for (k = i + 1; k < p->n_location; k++) {
			const Perftools__Profiles__Location *b = p->location[k];

			if (a->address == b->address && a->mapping_id == b->mapping_id &&
			    a->n_line == b->n_line &&
			    (!a->n_line || (a->line[0]->function_id == b->line[0]->function_id &&
					    a->line[0]->line == b->line[0]->line)))
				return false;
		}
	}
	for (i = 0; i < p->n_mapping; i++)
		for (k = i + 1; k < p->n_mapping; k++)
			if (p->mapping[i]->filename == p->mapping[k]->filename)
				return false;
	return true;
}

static int64_t total(const Profile *p, size_t v)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < p->n_sample; i++)
		sum += p->sample[i]->value[v];
	return sum;
}

static void remove_files(void)
{
	char names[64][512];
	int n = files(names, 64), i;

	for (i = 0; i < n; i++)
		unlink(names[i]);
}

/* Finish and free st, then its one file decoded (NULL, said, when there is not one file or
 * it does not decode). */
static Profile *the_file(void *st, const char *what)
{
	char names[4][512], why[512];

	fmt_pprof.finish(st, why, sizeof(why));
	fmt_pprof.free(st);
	if (!tap_eq_u64(files(names, 4), 1, "%s: one file", what))
		return NULL;
	return load(names[0]);
}

static const __u64 user_stack[2] = { 0x401000, 0x400100 };
static const char *const user_names[2] = { "matmul", "main" };

static struct xpu_cevent cpu_sample(__u32 tid, const __u64 *stack, const char *const *frames,
				    __u16 n_kernel, __u16 n_user)
{
	return (struct xpu_cevent){ .kind = XPU_REC_CPU_SAMPLE,
				    .pid = 42,
				    .tid = tid,
				    .name = "train",
				    .name_len = 5,
				    .stack = stack,
				    .frames = frames,
				    .n_kernel = n_kernel,
				    .n_user = n_user,
				    .value = 10000000 };
}

static struct xpu_cevent gpu(__u16 kind, const char *name, __u64 ns, const __u64 *stack,
			     const char *const *frames, __u16 n_user)
{
	return (struct xpu_cevent){ .kind = kind,
				    .pid = 42,
				    .device = 1,
				    .stream = 7,
				    .ts_ns = 1000,
				    .end_ns = 1000 + ns,
				    .name = name,
				    .name_len = name ? (__u32)strlen(name) : 0,
				    .stack = stack,
				    .frames = frames,
				    .n_user = n_user };
}

/* Every kind of frame and label, dedup, one file at finish. */
static void one_file(void)
{
	static const __u64 kstack[3] = { 0xffffffff81000010ull, 0x401000, 0x400100 };
	static const char *const knames[3] = { "do_syscall_64", "matmul", "main" };
	static const __u64 unnamed[2] = { 0x401234, 0x400100 };
	static const char *const unnamed_names[2] = { NULL, "main" };
	__u64 py[2];
	static const char *const py_names[2] = { "step (train.py:17)", "main" };
	static const char *const want[] = {
		/* three samples of one stack and thread: one sample */
		"do_syscall_64{[kernel.kallsyms]};matmul;main | pid=42 thread=42 comm=train "
		"team=ml job=resnet host=testhost | 3 30000000 0 0",
		"matmul;main | pid=42 thread=43 comm=train team=ml job=resnet host=testhost | 1 "
		"10000000 0 0",
		"0x401234;main | pid=42 thread=42 comm=train team=ml job=resnet host=testhost | 1 "
		"10000000 0 0",
		"[py] step (train.py)@train.py:17;main | pid=42 thread=42 comm=train team=ml "
		"job=resnet host=testhost | 1 10000000 0 0",
		"matmul;main;[range] forward;[range] epoch | pid=42 thread=42 comm=train team=ml "
		"job=resnet host=testhost | 1 10000000 0 0",
		/* two launches of vecAdd from one stack: one sample */
		"[gpu] vecAdd;matmul;main | pid=42 comm=train device=1 stream=7 kernel=vecAdd "
		"team=ml job=resnet host=testhost | 0 0 300 0",
		"[gpu] memcpy HtoD;matmul;main | pid=42 comm=train device=1 stream=7 team=ml "
		"job=resnet host=testhost | 0 0 50 4096",
		"[gpu] vecAdd;[gpu] no launch stack | pid=42 comm=train device=1 stream=7 "
		"kernel=vecAdd team=ml job=resnet host=testhost | 0 0 70 0",
		"[gpu] k\xc3\xbf;matmul;main | pid=42 comm=train device=1 stream=7 kernel=k\xc3\xbf "
		"team=ml job=resnet host=testhost | 0 0 5 0",
	};
	struct xpu_cevent e[16];
	char names[4][512], why[512];
	const char *cn[16];
	__u64 cv[16];
	void *st = NULL;
	Profile *p;
	__u32 n = 0, i;
	int err;

	py[0] = xpu_pyframe__ip(0x7f00001234ull, 17);
	py[1] = 0x400100;
	e[n++] = cpu_sample(42, kstack, knames, 1, 2);
	e[n++] = cpu_sample(42, kstack, knames, 1, 2);
	e[n++] = cpu_sample(42, kstack, knames, 1, 2);
	e[n++] = cpu_sample(43, user_stack, user_names, 0, 2);
	e[n++] = cpu_sample(42, unnamed, unnamed_names, 0, 2);
	e[n++] = cpu_sample(42, py, py_names, 0, 2);
	e[n++] = (struct xpu_cevent){ .kind = XPU_REC_RANGE,
				      .id = 100,
				      .pid = 42,
				      .tid = 42,
				      .sub_kind = XPU_RANGE_PUSH,
				      .name = "epoch",
				      .name_len = 5 };
	e[n] = e[n - 1];
	e[n].id = 101;
	e[n].parent_id = 100;
	e[n].name = "forward";
	e[n++].name_len = 7;
	e[n] = cpu_sample(42, user_stack, user_names, 0, 2);
	e[n++].parent_id = 101;
	e[n++] = gpu(XPU_REC_GPU_KERNEL, "vecAdd", 100, user_stack, user_names, 2);
	e[n++] = gpu(XPU_REC_GPU_KERNEL, "vecAdd", 200, user_stack, user_names, 2);
	e[n] = gpu(XPU_REC_GPU_MEMCPY, NULL, 50, user_stack, user_names, 2);
	e[n].sub_kind = XPU_COPY_HTOD;
	e[n++].bytes = 4096;
	e[n++] = gpu(XPU_REC_GPU_KERNEL, "vecAdd", 70, NULL, NULL, 0);
	e[n++] = gpu(XPU_REC_GPU_KERNEL, "k\xff", 5, user_stack, user_names, 2);

	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "open: %s", err ? why : "ok"))
		return;
	batch(st, e, n);
	tap_eq_u64(fmt_pprof.tick(st, 1000000000ull, why, sizeof(why)), FMT_IDLE,
		   "the first tick starts the interval: nothing written");
	err = fmt_pprof.finish(st, why, sizeof(why));
	tap_ok(err == 0, "finish: %s", err ? why : "ok");
	n = fmt_pprof.counters(st, cn, cv, 16);
	tap_ok(n >= 3 && !strcmp(cn[0], "files_written") && cv[0] == 1 && cv[1] == 7 && cv[2] == 5,
	       "counters: 1 file, 7 CPU samples, 5 GPU events");
	fmt_pprof.free(st);

	tap_eq_u64(files(names, 4), 1, "finish wrote one file");
	p = load(names[0]);
	if (!tap_ok(p != NULL, "%s is a gzip'd profile.proto that protobuf-c decodes", names[0]))
		return;
	tap_ok(strstr(names[0], "/profile-") &&
		       strlen(strstr(names[0], "/profile-")) ==
			       strlen("/profile-20260101T000000.000Z.pb.gz"),
	       "named PATHSTEM-YYYYMMDDTHHMMSS.mmmZ.pb.gz (%s)", names[0]);
	tap_ok(p->n_sample_type == 4 && !strcmp(str(p, p->sample_type[0]->type), "samples") &&
		       !strcmp(str(p, p->sample_type[0]->unit), "count") &&
		       !strcmp(str(p, p->sample_type[1]->type), "cpu") &&
		       !strcmp(str(p, p->sample_type[1]->unit), "nanoseconds") &&
		       !strcmp(str(p, p->sample_type[2]->type), "gpu_time") &&
		       !strcmp(str(p, p->sample_type[2]->unit), "nanoseconds") &&
		       !strcmp(str(p, p->sample_type[3]->type), "copy_bytes") &&
		       !strcmp(str(p, p->sample_type[3]->unit), "bytes"),
	       "sample types: samples/count, cpu/ns, gpu_time/ns, copy_bytes/bytes");
	tap_ok(!strcmp(str(p, p->default_sample_type), "cpu") && p->period == 10000000 &&
		       p->period_type && !strcmp(str(p, p->period_type->type), "cpu") &&
		       !strcmp(str(p, p->period_type->unit), "nanoseconds"),
	       "default cpu; period 10 ms of cpu/nanoseconds, from the samples");
	tap_ok(p->time_nanos > 1600000000000000000ll && p->duration_nanos >= 0 &&
		       p->duration_nanos < 60000000000ll,
	       "time and duration: the interval in wall-clock time");
	tap_ok(samples_are(p, want, sizeof(want) / sizeof(want[0])),
	       "every sample: stack, labels and values exactly, equal ones merged");
	tap_ok(strings_once(p), "each string once, \"\" first (%zu strings)", p->n_string_table);
	tap_ok(entries_once(p), "each function, location and mapping once, ids 1, 2, ...");
	for (i = 0; i < p->n_function && strcmp(str(p, p->function[i]->name), "main"); i++)
		;
	tap_ok(i < p->n_function && p->n_mapping == 1 && p->mapping[0]->has_functions,
	       "one kernel mapping, marked symbolized");
	for (i = 0, n = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];
		const char *name = l->n_line ? str(p, fn(p, l->line[0]->function_id)->name) : "";

		n += !strcmp(name, "0x401234") && l->address == 0x401234;
		n += !strcmp(name, "do_syscall_64") && l->address == 0xffffffff81000010ull;
		n += !strcmp(name, "main") && l->address == 0x400100;
		n += !strncmp(name, "[gpu] ", 6) && l->address == 0;
	}
	tap_eq_u64(n, 7,
		   "native frames keep their address (an unnamed one is named by it, as in "
		   "flame.folded), four GPU frames have none");
	for (i = 0; i < p->n_function && !p->function[i]->system_name; i++)
		;
	tap_eq_u64(i, p->n_function, "no system_name: the mangled names are not known");
	tap_eq_u64(total(p, 1), 7 * 10000000ull, "the CPU time of all 7 samples");
	tap_eq_u64(total(p, 2), 100 + 200 + 50 + 70 + 5, "the GPU time of all 5 events");
	perftools__profiles__profile__free_unpacked(p, NULL);
	remove_files();
}

/* One file per interval, each with what came in it; an empty interval writes nothing. */
static void intervals(void)
{
	struct xpu_cevent e = cpu_sample(42, user_stack, user_names, 0, 2);
	char names[4][512], why[512];
	void *st = NULL;
	Profile *p;
	int err;

	opt_interval = "2";
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	opt_interval = NULL;
	if (!tap_ok(err == 0, "intervals: open: %s", err ? why : "ok"))
		return;
	tap_eq_u64(fmt_pprof.tick(st, 1000000000ull, why, sizeof(why)), FMT_IDLE,
		   "intervals: nothing before the first sample");
	batch(st, &e, 1);
	tap_eq_u64(fmt_pprof.tick(st, 2900000000ull, why, sizeof(why)), FMT_IDLE,
		   "intervals: nothing written before interval_s");
	tap_eq_u64(files(names, 4), 0, "intervals: no file yet");
	usleep(2000); /* the next file's name: a later millisecond */
	tap_eq_u64(fmt_pprof.tick(st, 3000000000ull, why, sizeof(why)), FMT_COMPLETE,
		   "intervals: at interval_s the file is written (complete)");
	tap_eq_u64(fmt_pprof.tick(st, 5100000000ull, why, sizeof(why)), FMT_COMPLETE,
		   "intervals: an interval with nothing writes no file, all is written");
	batch(st, &e, 1);
	batch(st, &e, 1);
	err = fmt_pprof.finish(st, why, sizeof(why));
	tap_ok(err == 0, "intervals: finish: %s", err ? why : "ok");
	fmt_pprof.free(st);
	if (!tap_eq_u64(files(names, 4), 2, "intervals: two files"))
		return;
	p = load(names[0]);
	tap_ok(p && p->n_sample == 1 && p->sample[0]->value[0] == 1,
	       "intervals: the first file has the first interval's sample");
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	p = load(names[1]);
	tap_ok(p && p->n_sample == 1 && p->sample[0]->value[0] == 2,
	       "intervals: the last file the two that came after it");
	if (p) {
		char text[4096];

		sample_text(p, p->sample[0], text, sizeof(text));
		tap_ok(!strncmp(text, "matmul;main |", 13),
		       "intervals: its stack made again in the new tables (%s)", text);
	}
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	remove_files();
}

/* A frame name's pointer stands for its text within a batch only: the same pointer with
 * another text in the next batch is another function. */
static void pointers_per_batch(void)
{
	static const __u64 stack[1] = { 0x401000 };
	char name[16] = "alpha", why[512];
	const char *frames[1] = { name };
	struct xpu_cevent e = cpu_sample(42, stack, frames, 0, 1);
	void *st = NULL;
	Profile *p;
	int err;

	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "pointers: open: %s", err ? why : "ok"))
		return;
	batch(st, &e, 1);
	snprintf(name, sizeof(name), "beta");
	batch(st, &e, 1);
	p = the_file(st, "pointers");
	if (p) {
		static const char *const want[] = {
			"alpha | pid=42 thread=42 comm=train team=ml job=resnet host=testhost | 1 "
			"10000000 0 0",
			"beta | pid=42 thread=42 comm=train team=ml job=resnet host=testhost | 1 "
			"10000000 0 0",
		};

		tap_ok(samples_are(p, want, 2),
		       "pointers: one address, one name pointer, two texts in two batches: two "
		       "functions");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	remove_files();
}

/* A process whose comm changes (an exec) within a batch: the samples after it carry the new
 * comm, GPU work too (the comm labels are remembered by pid and text). */
static void comm_change(void)
{
	struct xpu_cevent e[4];
	char why[512];
	void *st = NULL;
	Profile *p;
	int err;

	e[0] = cpu_sample(42, user_stack, user_names, 0, 2);
	e[1] = e[0];
	e[1].name = "eval";
	e[1].name_len = 4;
	e[2] = e[1];
	e[3] = gpu(XPU_REC_GPU_KERNEL, "vecAdd", 100, user_stack, user_names, 2);
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "comm: open: %s", err ? why : "ok"))
		return;
	batch(st, e, 4);
	p = the_file(st, "comm");
	if (p) {
		static const char *const want[] = {
			"matmul;main | pid=42 thread=42 comm=train team=ml job=resnet "
			"host=testhost | 1 10000000 0 0",
			"matmul;main | pid=42 thread=42 comm=eval team=ml job=resnet host=testhost "
			"| 2 20000000 0 0",
			"[gpu] vecAdd;matmul;main | pid=42 comm=eval device=1 stream=7 "
			"kernel=vecAdd team=ml job=resnet host=testhost | 0 0 100 0",
		};

		tap_ok(samples_are(p, want, 3),
		       "comm: a comm that changes within a batch labels what follows it");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	remove_files();
}

/* GPU leaves and kernel labels are remembered by the name's text, not its pointer (each
 * event has its own copy of the name): the same text in two copies is one kernel, another
 * text at the same address in the next batch another, a longer name with the same start
 * another, one of the same length another, and a name that is not plain ASCII (its label
 * escaped) still one kernel. */
static void kernel_names(void)
{
	char a[16] = "vecAdd", b[16] = "vecAdd", c[16] = "vecAddX", l1[16] = "k\xe9rnel",
	     l2[16] = "k\xe9rnel", d[16] = "vecSub", why[512];
	struct xpu_cevent e[7];
	void *st = NULL;
	Profile *p;
	int err;

	e[0] = gpu(XPU_REC_GPU_KERNEL, a, 100, user_stack, user_names, 2);
	e[1] = gpu(XPU_REC_GPU_KERNEL, b, 200, user_stack, user_names, 2);
	e[2] = gpu(XPU_REC_GPU_KERNEL, c, 5, user_stack, user_names, 2);
	e[3] = gpu(XPU_REC_GPU_KERNEL, l1, 10, user_stack, user_names, 2);
	e[4] = gpu(XPU_REC_GPU_KERNEL, l2, 20, user_stack, user_names, 2);
	e[5] = gpu(XPU_REC_GPU_KERNEL, a, 1, user_stack, user_names, 2);
	e[6] = gpu(XPU_REC_GPU_KERNEL, d, 3, user_stack, user_names, 2);
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "kernel names: open: %s", err ? why : "ok"))
		return;
	batch(st, e, 7);
	snprintf(a, sizeof(a), "gemm");
	e[0] = gpu(XPU_REC_GPU_KERNEL, a, 7, user_stack, user_names, 2);
	batch(st, e, 1);
	p = the_file(st, "kernel names");
	if (p) {
		static const char *const want[] = {
			"[gpu] vecAdd;matmul;main | pid=42 device=1 stream=7 kernel=vecAdd team=ml "
			"job=resnet host=testhost | 0 0 301 0",
			"[gpu] vecAddX;matmul;main | pid=42 device=1 stream=7 kernel=vecAddX "
			"team=ml job=resnet host=testhost | 0 0 5 0",
			"[gpu] k\xc3\xa9rnel;matmul;main | pid=42 device=1 stream=7 "
			"kernel=k\xc3\xa9rnel team=ml job=resnet host=testhost | 0 0 30 0",
			"[gpu] gemm;matmul;main | pid=42 device=1 stream=7 kernel=gemm team=ml "
			"job=resnet host=testhost | 0 0 7 0",
			"[gpu] vecSub;matmul;main | pid=42 device=1 stream=7 kernel=vecSub team=ml "
			"job=resnet host=testhost | 0 0 3 0",
		};

		tap_ok(samples_are(p, want, 5),
		       "kernel names: one kernel per name text, whatever copy it is in");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	remove_files();
}

/* A subscriber's batches carry their host (the origin keys): the host label is each
 * batch's, the same stack on two hosts two samples; a batch without origin keeps the sink's
 * own host. */
static void origin_hosts(void)
{
	struct xpu_wire_batch b = { .version = 1, .n_events = 2 };
	char why[512];
	struct xpu_cevent e[2];
	void *st = NULL;
	Profile *p;
	int err;

	e[0] = cpu_sample(42, user_stack, user_names, 0, 2);
	e[1] = gpu(XPU_REC_GPU_KERNEL, "vecAdd", 100, user_stack, user_names, 2);
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "hosts: open: %s", err ? why : "ok"))
		return;
	b.origin.host = "alpha";
	b.origin.host_len = 5;
	fmt_pprof.batch(st, &b, e);
	b.origin.host = "beta-7.example";
	b.origin.host_len = 14;
	fmt_pprof.batch(st, &b, e);
	batch(st, e, 1);
	p = the_file(st, "hosts");
	if (p) {
		static const char *const want[] = {
			"matmul;main | pid=42 thread=42 comm=train team=ml job=resnet host=alpha | 1 "
			"10000000 0 0",
			"[gpu] vecAdd;matmul;main | pid=42 comm=train device=1 stream=7 "
			"kernel=vecAdd team=ml job=resnet host=alpha | 0 0 100 0",
			"matmul;main | pid=42 thread=42 comm=train team=ml job=resnet "
			"host=beta-7.example | 1 10000000 0 0",
			"[gpu] vecAdd;matmul;main | pid=42 comm=train device=1 stream=7 "
			"kernel=vecAdd team=ml job=resnet host=beta-7.example | 0 0 100 0",
			"matmul;main | pid=42 thread=42 comm=train team=ml job=resnet host=testhost "
			"| 1 10000000 0 0",
		};

		tap_ok(samples_are(p, want, 5),
		       "hosts: each batch's origin host labels its samples, the sink's own host "
		       "the others");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	remove_files();
}

/* Past max_entries: events go to "[pprof tables full]", counted, no weight lost. */
static void tables_full(void)
{
	static __u64 stacks[400][1];
	static char text[400][16];
	static const char *names[400][1];
	struct xpu_cevent e[400];
	char files_[4][512], why[512];
	const char *cn[16];
	__u64 cv[16];
	void *st = NULL;
	Profile *p;
	size_t i, k;
	bool found = false;
	int err;

	for (i = 0; i < 400; i++) {
		stacks[i][0] = 0x500000 + i * 16;
		snprintf(text[i], sizeof(text[i]), "fn%zu", i);
		names[i][0] = text[i];
		e[i] = cpu_sample(42, stacks[i], names[i], 0, 1);
	}
	opt_max = "64";
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	opt_max = NULL;
	if (!tap_ok(err == 0, "tables full: open: %s", err ? why : "ok"))
		return;
	batch(st, e, 400);
	k = fmt_pprof.counters(st, cn, cv, 16);
	for (i = 0; i < k && strcmp(cn[i], "events_full"); i++)
		;
	tap_ok(i < k && cv[i] > 300 && cv[i] < 400,
	       "tables full: the events past the tables "
	       "are counted (%llu of 400)",
	       i < k ? (unsigned long long)cv[i] : 0ull);
	err = fmt_pprof.finish(st, why, sizeof(why));
	tap_ok(err == 0, "tables full: finish: %s", err ? why : "ok");
	fmt_pprof.free(st);
	if (!tap_eq_u64(files(files_, 4), 1, "tables full: one file"))
		return;
	p = load(files_[0]);
	if (!tap_ok(p != NULL, "tables full: the file decodes"))
		return;
	tap_eq_u64(total(p, 0), 400, "tables full: every sample counted");
	tap_eq_u64(total(p, 1), 400 * 10000000ull, "tables full: no CPU time lost");
	for (i = 0; i < p->n_sample; i++) {
		char s[4096];

		sample_text(p, p->sample[i], s, sizeof(s));
		found = found || !strncmp(s, "[pprof tables full] |", 21);
	}
	tap_ok(found && p->n_string_table <= 64 && p->n_location <= 64 && p->n_function <= 64,
	       "tables full: a [pprof tables full] sample; no table past max_entries");
	perftools__profiles__profile__free_unpacked(p, NULL);
	remove_files();
}

/* A bad value is refused at open, naming the key. */
static void bad_options(void)
{
	static const struct {
		const char **opt, *value, *word;
	} bad[] = {
		{ &opt_labels, "team", "bad label" },
		{ &opt_labels, "1x=y", "bad label" },
		{ &opt_labels, "pid=3", "pid" },
		{ &opt_labels, "a=1,a=2", "twice" },
		{ &opt_labels, "a=1,", "labels" },
		{ &opt_labels, "a=", "bad label" },
		{ &opt_labels, "__name__=x", "bad label" },
		{ &opt_host, "a b", "host" },
		{ &opt_interval, "0", "interval_s" },
		{ &opt_max, "8", "max_entries" },
		{ &opt_interval, "ten", "interval_s" },
	};
	char why[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *keep = *bad[i].opt;
		void *st = NULL;
		int err;

		*bad[i].opt = bad[i].value;
		why[0] = 0;
		err = fmt_pprof.open(&st, &env, why, sizeof(why));
		*bad[i].opt = keep;
		tap_ok(err == -EINVAL && strstr(why, bad[i].word), "bad option '%s': %s",
		       bad[i].value, why);
		if (!err)
			fmt_pprof.free(st);
	}
}

/* A folder that cannot be made: an error naming the file; the data stays for later. */
static void unwritable(void)
{
	struct xpu_cevent e = cpu_sample(42, user_stack, user_names, 0, 2);
	char blocker[300], keep[512], names[4][512], why[512];
	void *st = NULL;
	Profile *p;
	int err;

	snprintf(blocker, sizeof(blocker), "%s/notadir", dir);
	fclose(fopen(blocker, "w"));
	snprintf(keep, sizeof(keep), "%s", path);
	snprintf(path, sizeof(path), "%s/profile.pb.gz", blocker);
	err = fmt_pprof.open(&st, &env, why, sizeof(why));
	if (!tap_ok(err == 0, "unwritable: open: %s", err ? why : "ok"))
		goto restore;
	batch(st, &e, 1);
	err = fmt_pprof.finish(st, why, sizeof(why));
	tap_ok(err < 0 && strstr(why, "notadir/profile-"),
	       "unwritable: an error naming the file (%s)", why);
	unlink(blocker);
	err = fmt_pprof.finish(st, why, sizeof(why));
	tap_ok(err == 0, "unwritable: with the folder possible, the next attempt writes (%s)",
	       err ? why : "ok");
	fmt_pprof.free(st);
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/notadir");
	tap_eq_u64(files(names, 4), 1, "unwritable: one file");
	p = load(names[0]);
	tap_ok(p && total(p, 0) == 1, "unwritable: holding the sample kept across the failure");
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	remove_files();
	rmdir(dir);
	*strrchr(dir, '/') = 0;
restore:
	snprintf(path, sizeof(path), "%s", keep);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/xpusup-pprof-test-%d", (int)getpid());
	if (mkdir(dir, 0700))
		tap_skip_all("cannot make %s", dir);
	snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
	one_file();
	intervals();
	pointers_per_batch();
	comm_change();
	kernel_names();
	origin_hosts();
	tables_full();
	bad_options();
	unwritable();
	rmdir(dir);
	return tap_done();
}
