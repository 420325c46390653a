// SPDX-License-Identifier: MIT
/*
 * What the timeline's flight recorder tells of its snapshots, and the windows' files, without
 * a session: the format driven as the sink drives it (batch, tick, then the outcome read after
 * the tick), so that the order of outcomes is exact. A snapshot asked for is told to its
 * asker even when stop or a trigger comes before the sink reads its outcome; a trigger
 * meanwhile waits for a tick and holds the event that fired it. Window and snapshot names made
 * within one millisecond do not overwrite each other; a window the cap cannot delete, or an
 * index that cannot be written, is said while it lasts; a restart deletes the unfinished window of the run before.
 * The cap counts a window with what its close adds (track names, stackFrames).
 * tests/sink_windows_test.sh checks whole sessions.
 */
#include "actors/sink/fmt.h"
#include "actors/sink/fmt_test_env.h"
#include "actors/sink/trace_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"

#define BASE 1000000000000ull
#define MS 1000000ull

static char dir[256], path[300];

/* The ring's options: a small ring, a trigger mark, no holdoff. */
static struct fmt_test_opt opts[] = {
	{ "path", path },   { "mode", "ring" },		{ "max_mb", "4" },
	{ "keep_s", "60" }, { "trigger_mark", "fire" }, { "trigger_holdoff_s", "0" },
	{ NULL, NULL },
};

/* n kernels of 1 ms from ts on, one a ms, ids from id */
static void kernels(void *st, __u64 id, __u64 ts, unsigned int n)
{
	struct xpu_cevent ev[64];
	struct xpu_wire_batch b = { .producer = 1, .n_events = n };
	unsigned int i;

	for (i = 0; i < n; i++) {
		ev[i] = (struct xpu_cevent){ .id = id + i,
					     .kind = XPU_REC_GPU_KERNEL,
					     .pid = 42,
					     .tid = 42,
					     .ts_ns = ts + i * MS,
					     .end_ns = ts + i * MS + MS,
					     .stream = 7,
					     .name = "k",
					     .name_len = 1 };
	}
	fmt_timeline.batch(st, &b, ev);
}

/* A user mark named name at ts. */
static void mark(void *st, __u64 id, __u64 ts, const char *name)
{
	struct xpu_cevent e = { .id = id,
				.kind = XPU_REC_RANGE,
				.sub_kind = XPU_RANGE_MARK,
				.pid = 42,
				.tid = 42,
				.ts_ns = ts,
				.name = name,
				.name_len = (__u32)strlen(name) };
	struct xpu_wire_batch b = { .producer = 1, .n_events = 1 };

	fmt_timeline.batch(st, &b, &e);
}

/* The outcome as the sink reads it: 1, -errno or 0, with the file into got. */
static int outcome(void *st, char *got, size_t size)
{
	char why[600];

	got[0] = 0;
	return fmt_timeline.snapshot_result(st, got, size, why, sizeof(why));
}

static bool file_has(const char *file, const char *s)
{
	static char text[1 << 20];
	FILE *f = fopen(file, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	return strstr(text, s) != NULL;
}

static void *open_ring(void)
{
	struct fmt_env env = fmt_test_env(opts);
	char why[512] = "";
	void *st = NULL;
	int err = fmt_timeline.open(&st, &env, why, sizeof(why));

	tap_ok(!err, "a flight recorder opens (%s)", why);
	return err ? NULL : st;
}

static void test_told_at_stop(void)
{
	char asked[sizeof(dir) + 32], got[512], why[512] = "";
	void *st = open_ring();
	int r, err;

	if (!st)
		return;
	snprintf(asked, sizeof(asked), "%s/asked1.json", dir);
	kernels(st, 1, BASE, 20);
	/* a ring this small is written within snapshot(): its outcome waits for the sink */
	err = fmt_timeline.snapshot(st, asked, why, sizeof(why));
	tap_ok(!err, "stop: a snapshot is asked for and written at once (%s)", why);
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(!err, "stop: the ring is written to path (%s)", why);
	r = outcome(st, got, sizeof(got));
	tap_ok(r == 1 && !strcmp(got, asked),
	       "stop: the asked snapshot's outcome is still told after stop (%d, %s)", r, got);
	tap_ok(access(path, F_OK) == 0 && file_has(path, "\"k\""),
	       "stop: path holds the ring, and its own outcome is not told as a snapshot");
	r = outcome(st, got, sizeof(got));
	tap_ok(r == 0, "stop: nothing more to tell (%d)", r);
	fmt_timeline.free(st);
	unlink(asked);
	unlink(path);
}

static void test_trigger_waits(void)
{
	char asked[sizeof(dir) + 32], got[512], why[512] = "";
	void *st = open_ring();
	int r, err;

	if (!st)
		return;
	snprintf(asked, sizeof(asked), "%s/asked2.json", dir);
	kernels(st, 1, BASE, 20);
	err = fmt_timeline.snapshot(st, asked, why, sizeof(why));
	tap_ok(!err, "trigger: a snapshot is asked for (%s)", why);
	/* the mark arrives in the next batch, before the sink read the asked one's outcome */
	mark(st, 100, BASE + 30 * MS, "fire");
	r = outcome(st, got, sizeof(got));
	tap_ok(r == 1 && !strcmp(got, asked),
	       "trigger: the asked snapshot's outcome reaches its asker, not the trigger's (%d, %s)",
	       r, got);
	tap_ok(!file_has(asked, "\"fire\""), "trigger: the asked snapshot ends before the mark");
	r = outcome(st, got, sizeof(got));
	tap_ok(r == 0, "trigger: the triggered snapshot waits for a tick (%d, %s)", r, got);
	fmt_timeline.tick(st, BASE, why, sizeof(why));
	r = outcome(st, got, sizeof(got));
	tap_ok(r == 1 && strstr(got, "trace-snapshot-") && file_has(got, "\"fire\""),
	       "trigger: at the tick it is written beside path and holds the mark (%d, %s)", r,
	       got);
	if (r == 1)
		unlink(got);
	/* nobody reads the outcomes (a group, `xpusup subscribe`): a trigger waits one tick
	 * more, not for ever */
	err = fmt_timeline.snapshot(st, asked, why, sizeof(why));
	mark(st, 101, BASE + 40 * MS, "fire");
	fmt_timeline.tick(st, BASE, why, sizeof(why));
	fmt_timeline.tick(st, BASE, why, sizeof(why));
	r = outcome(st, got, sizeof(got));
	tap_ok(!err && r == 1 && strstr(got, "trace-snapshot-"),
	       "trigger: with its outcomes unread, the next trigger starts at the second tick "
	       "(%d, %s)",
	       r, got);
	if (r == 1)
		unlink(got);
	fmt_timeline.free(st);
	unlink(asked);
}

static void test_names(void)
{
	char a[512], b[512], stem[sizeof(dir) + 16];
	unsigned int tries;
	__u64 wa, wb;
	FILE *f;

	snprintf(stem, sizeof(stem), "%s/n.json", dir);
	/* the two names fall in one millisecond nearly always; a few tries make it sure */
	for (tries = 0; tries < 50; tries++) {
		if (trace_files__stamped(stem, "", a, sizeof(a), &wa))
			break;
		f = fopen(a, "w");
		if (f)
			fclose(f);
		if (trace_files__stamped(stem, "", b, sizeof(b), &wb))
			break;
		unlink(a);
		if (wa / MS == wb / MS)
			break;
	}
	tap_ok(tries < 50 && strcmp(a, b) && strlen(b) > 7 && !strcmp(b + strlen(b) - 7, "-2.json"),
	       "names: a name taken within its millisecond gets -2 (%s, %s)", a, b);
}

/* A window the cap cannot delete (here a folder where its file was: unlink says EISDIR, even
 * to root) stays listed and counted, trimming stops there, and the error says which. */
static void test_undeletable(void)
{
	char p[sizeof(dir) + 32], file[sizeof(dir) + 64], why[600] = "";
	struct trace_windows *w = NULL;
	struct trace_window win = { .bytes = 400000 };
	int err, i;

	snprintf(p, sizeof(p), "%s/w/trace.json", dir);
	snprintf(file, sizeof(file), "%s/w", dir);
	mkdir(file, 0755);
	err = trace_windows__open(&w, p, 1000000, false, why, sizeof(why));
	tap_ok(!err, "cap: windows under 1 MB open (%s)", why);
	if (err)
		return;
	for (i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s/w/trace-%d.json", dir, i);
		if (i == 0)
			mkdir(file, 0755); /* not a file: unlink fails */
		else
			fclose(fopen(file, "w"));
		trace_windows__add(w, file, &win, why, sizeof(why));
	}
	err = trace_windows__error(w, why, sizeof(why));
	tap_ok(err == -EISDIR && strstr(why, "trace-0.json") && strstr(why, "unable to delete"),
	       "cap: the window that cannot be deleted is said (%d: %s)", err, why);
	trace_windows__trim(w, 0);
	err = trace_windows__error(w, why, sizeof(why));
	tap_ok(err == -EISDIR, "cap: and said again while the next trim still cannot (%d)", err);
	tap_ok(trace_windows__count(w) == 3 && trace_windows__listed_bytes(w) == 1200000,
	       "cap: it stays listed and counted, and trimming stopped there (%u windows, %llu "
	       "bytes)",
	       trace_windows__count(w), (unsigned long long)trace_windows__listed_bytes(w));
	snprintf(file, sizeof(file), "%s/w/trace-0.json", dir);
	rmdir(file);
	trace_windows__trim(w, 0);
	tap_ok(trace_windows__count(w) == 2 && !trace_windows__error(w, why, sizeof(why)),
	       "cap: once it can go, the next trim deletes it (%u windows)",
	       trace_windows__count(w));
	trace_windows__free(w);
}

/* An index that cannot be written after trim deleted windows is said too (until the next add
 * writes it, it lists windows that are gone). */
static void test_index_unwritable(void)
{
	char p[sizeof(dir) + 32], file[sizeof(dir) + 64], why[600] = "";
	struct trace_windows *w = NULL;
	struct trace_window win = { .bytes = 400000 };
	int err, i;

	snprintf(file, sizeof(file), "%s/i", dir);
	mkdir(file, 0755);
	snprintf(p, sizeof(p), "%s/i/trace.json", dir);
	err = trace_windows__open(&w, p, 1000000, false, why, sizeof(why));
	if (err)
		return;
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s/i/trace-%d.json", dir, i);
		fclose(fopen(file, "w"));
		trace_windows__add(w, file, &win, why, sizeof(why));
	}
	/* the index is written as its .partial, then renamed: a folder there stops it */
	snprintf(file, sizeof(file), "%s.partial", trace_windows__index(w));
	mkdir(file, 0755);
	snprintf(file, sizeof(file), "%s/i/trace-2.json", dir);
	fclose(fopen(file, "w"));
	trace_windows__add(w, file, &win, why, sizeof(why));
	err = trace_windows__error(w, why, sizeof(why));
	tap_ok(err < 0 && strstr(why, "window index is behind") && trace_windows__count(w) == 2,
	       "cap: an index that cannot be written after a deletion is said (%d: %s)", err, why);
	err = trace_windows__error(w, why, sizeof(why));
	tap_ok(err < 0, "cap: and said again while it lasts (%d)", err);
	snprintf(file, sizeof(file), "%s.partial", trace_windows__index(w));
	rmdir(file);
	snprintf(file, sizeof(file), "%s/i/trace-3.json", dir);
	fclose(fopen(file, "w"));
	trace_windows__add(w, file, &win, why, sizeof(why));
	err = trace_windows__error(w, why, sizeof(why));
	snprintf(file, sizeof(file), "%s", trace_windows__index(w));
	tap_ok(!err && access(file, F_OK) == 0,
	       "cap: the next window's close writes the index, and the problem is over (%d)", err);
	trace_windows__free(w);
}

/* A sink restarted with windows deletes the unfinished window its predecessor was writing
 * (never listed, a new name each run) and nothing else. */
static void test_partials(void)
{
	static const char *const names[] = { "trace-20261129T000000.000Z.json.partial",
					     "trace-20261129T000001.000Z.json",
					     "other-20261129T000000.000Z.json.partial",
					     "trace.json.partial" };
	char p[sizeof(dir) + 32], file[sizeof(dir) + 80], why[600] = "";
	struct trace_windows *w = NULL;
	unsigned int i, left = 0;
	FILE *f;
	int err;

	snprintf(file, sizeof(file), "%s/r", dir);
	mkdir(file, 0755);
	for (i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/r/%s", dir, names[i]);
		f = fopen(file, "w");
		if (f)
			fclose(f);
	}
	snprintf(p, sizeof(p), "%s/r/trace.json", dir);
	err = trace_windows__open(&w, p, 1000000, true, why, sizeof(why));
	for (i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/r/%s", dir, names[i]);
		left |= (unsigned int)!access(file, F_OK) << i;
	}
	tap_ok(!err && trace_windows__partials_removed(w) == 1 && left == 0xe,
	       "restart: the unfinished window of the run before is deleted, nothing else "
	       "(%u deleted, files left 0x%x)",
	       w ? trace_windows__partials_removed(w) : 0, left);
	trace_windows__free(w);
}

/* Bytes of the trace files in folder d (the window being written included), and the largest. */
static __u64 windows_bytes(const char *d, __u64 *largest, unsigned int *files)
{
	char file[sizeof(dir) + 300];
	struct dirent *de;
	__u64 sum = 0;
	struct stat sb;
	DIR *dh = opendir(d);

	*largest = 0;
	*files = 0;
	while (dh && (de = readdir(dh))) {
		/* the windows, or trace.json where none closed before stop; not the index */
		if (strncmp(de->d_name, "trace", 5) || !strncmp(de->d_name, "trace.index", 11))
			continue;
		snprintf(file, sizeof(file), "%s/%s", d, de->d_name);
		if (stat(file, &sb) || !S_ISREG(sb.st_mode))
			continue;
		sum += (__u64)sb.st_size;
		*largest = (__u64)sb.st_size > *largest ? (__u64)sb.st_size : *largest;
		(*files)++;
	}
	if (dh)
		closedir(dh);
	return sum;
}

/* The format's counter named name, or ~0 when it has none. */
static __u64 counter(void *st, const char *name)
{
	const char *names[64];
	__u64 values[64];
	unsigned int i, n = fmt_timeline.counters(st, names, values, 64);

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return values[i];
	return ~0ull;
}

/* Kernels from *ts on, 1 us apart, ids from id: about bytes of ring records (their size is
 * measured on the first batch, the ring not yet full). Returns the next id. */
static __u64 fill_ring(void *st, __u64 id, __u64 *ts, __u64 bytes)
{
	static __u64 per_event;
	struct xpu_cevent ev[64];
	struct xpu_wire_batch b = { .producer = 1, .n_events = 64 };
	__u64 made = 0, before;
	unsigned int i;

	while (made < bytes) {
		before = counter(st, "ring_bytes");
		for (i = 0; i < 64; i++, id++, *ts += 1000)
			ev[i] = (struct xpu_cevent){ .id = id,
						     .kind = XPU_REC_GPU_KERNEL,
						     .pid = 42,
						     .tid = 42,
						     .ts_ns = *ts,
						     .end_ns = *ts + 500,
						     .stream = 7,
						     .name = "filler",
						     .name_len = 6 };
		fmt_timeline.batch(st, &b, ev);
		if (!per_event)
			per_event = (counter(st, "ring_bytes") - before) / 64 + 1;
		made += 64 * per_event;
	}
	return id;
}

/* A flight recorder of 64 MiB, path name in the test's folder, keeping keep_s. 0 or -errno. */
static int open_big_ring(const char *name, const char *keep_s, void **st)
{
	static char rp[sizeof(dir) + 32];
	struct fmt_test_opt o[] = { { "path", rp },
				    { "mode", "ring" },
				    { "max_mb", "64" },
				    { "keep_s", keep_s },
				    { NULL, NULL } };
	struct fmt_env env = fmt_test_env(o);
	char why[600] = "";
	int err;

	snprintf(rp, sizeof(rp), "%s/%s", dir, name);
	err = fmt_timeline.open(st, &env, why, sizeof(why));
	if (err)
		tap_diag("open %s: %s", name, why);
	return err;
}

/* A snapshot that falls behind (new events evict from the ring's head past where it writes)
 * keeps the arrows whose call it had written before: only the records lost to eviction are
 * missing, and an arrow is left out only with its call. */
static void test_ring_skip(void)
{
	char got[512], why[600] = "", asked[sizeof(dir) + 32];
	struct xpu_wire_batch b = { .producer = 1, .n_events = 1 };
	struct xpu_cevent e;
	__u64 ts = BASE, id = 1000;
	void *st = NULL;
	char *text;
	int r;

	snprintf(asked, sizeof(asked), "%s/skip-snap.json", dir);
	if (open_big_ring("skip.json", "600", &st))
		return;
	/* the call first, its kernel 50 MB of filler later: the arrow's record needs the call's */
	e = (struct xpu_cevent){ .id = 1,
				 .kind = XPU_REC_CUDA_API,
				 .sub_kind = XPU_API_RUNTIME,
				 .pid = 42,
				 .tid = 43,
				 .ts_ns = ts,
				 .end_ns = ts + 800,
				 .correlation_id = 1,
				 .api_id = 211 };
	fmt_timeline.batch(st, &b, &e);
	id = fill_ring(st, id, &ts, 50ull << 20);
	e = (struct xpu_cevent){ .id = 2,
				 .kind = XPU_REC_GPU_KERNEL,
				 .pid = 42,
				 .tid = 43,
				 .ts_ns = ts,
				 .end_ns = ts + 900,
				 .stream = 9,
				 .correlation_id = 1,
				 .name = "launched",
				 .name_len = 8 };
	e.links[e.n_links++] = (struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = 1 };
	ts += 1000;
	fmt_timeline.batch(st, &b, &e);
	id = fill_ring(st, id, &ts, 8ull << 20);
	/* the snapshot writes its first 32 MiB of text (the call among them, 38 MB of ring)
	 * at once; then 50 MB more evict past where it stands, and the next tick goes on from
	 * the ring's head, past the arrow's record */
	r = fmt_timeline.snapshot(st, asked, why, sizeof(why));
	fill_ring(st, id, &ts, 50ull << 20);

	fmt_timeline.tick(st, 0, why, sizeof(why));
	fmt_timeline.tick(st, 0, why, sizeof(why));
	r = r ? r : fmt_timeline.snapshot_result(st, got, sizeof(got), why, sizeof(why));
	text = tap_slurp(asked);
	tap_ok(r == 1 && counter(st, "snapshot_lost_bytes") > 0 && text &&
		       strstr(text, "\"launched\"") && strstr(text, "\"ph\":\"s\"") &&
		       strstr(why, " 0 flow arrows left out"),
	       "ring: a snapshot that fell behind keeps the arrow whose call it wrote before "
	       "(%d, %llu bytes lost: %s)",
	       r, (unsigned long long)counter(st, "snapshot_lost_bytes"), why);
	free(text);
	fmt_timeline.free(st);
	unlink(asked);
}

/* Age does not take from a snapshot being written what it has still to write: an event far
 * newer than the rest, during a snapshot, expired the whole ring at the next tick, the
 * snapshot's unwritten part with it. */
static void test_ring_expiry(void)
{
	char got[512], why[600] = "", asked[sizeof(dir) + 32];
	__u64 ts = BASE, id = 1;
	void *st = NULL;
	int r;

	snprintf(asked, sizeof(asked), "%s/exp-snap.json", dir);
	if (open_big_ring("exp.json", "60", &st))
		return;
	id = fill_ring(st, id, &ts, 50ull << 20);
	r = fmt_timeline.snapshot(st, asked, why, sizeof(why)); /* 38 MB of 50 written */
	ts += 120ull * 1000 * MS; /* two minutes on: older than keep_s, all of it */
	fill_ring(st, id, &ts, 1);
	fmt_timeline.tick(st, 0, why, sizeof(why));
	fmt_timeline.tick(st, 0, why, sizeof(why));
	r = r ? r : fmt_timeline.snapshot_result(st, got, sizeof(got), why, sizeof(why));
	tap_ok(r == 1 && counter(st, "snapshot_lost_bytes") == 0 && counter(st, "ring_expired") > 0,
	       "ring: what a snapshot has still to write does not expire under it (%d, %llu "
	       "bytes lost: %s)",
	       r, (unsigned long long)counter(st, "snapshot_lost_bytes"), why);
	fmt_timeline.free(st);
	unlink(asked);
}

/* A session that left n windows (empty files, listed as bytes each) for stem_path, and its
 * index.
 * 0 or -errno. */
static int windows_left(const char *stem_path, unsigned int n, __u64 bytes)
{
	char file[sizeof(dir) + 300], why[600] = "";
	struct trace_window win = { .bytes = bytes };
	struct trace_windows *w = NULL;
	unsigned int i;
	__u64 start;
	FILE *f;
	int err = trace_windows__open(&w, stem_path, 1000000, false, why, sizeof(why));

	for (i = 0; !err && i < n; i++) {
		err = trace_windows__name(w, file, sizeof(file), &start);
		f = err ? NULL : fopen(file, "w");
		if (f)
			fclose(f);
		if (!err)
			err = trace_windows__add(w, file, &win, why, sizeof(why));
	}
	trace_windows__free(w);
	return err;
}

/* Many records older than the cut between the calls (each a range the snapshot does not
 * write): every arrow whose call it wrote is kept. Past 64 such ranges the last one grew
 * over the calls after it, and each arrow left out so made one more: all were left out. */
static void test_ring_many_gaps(void)
{
	enum { CALLS = 200 };
	struct xpu_cevent e[2 * CALLS];
	struct xpu_wire_batch b = { .producer = 1, .n_events = 2 * CALLS };
	char got[512], why[600] = "", asked[sizeof(dir) + 32];
	__u64 at = BASE + 10000 * MS;
	void *st = NULL;
	unsigned int i;
	int r;

	snprintf(asked, sizeof(asked), "%s/gaps-snap.json", dir);
	if (open_big_ring("gaps.json", "1", &st))
		return;
	for (i = 0; i < CALLS; i++) { /* a call, then a kernel of 10 s before: older than keep_s */
		e[2 * i] = (struct xpu_cevent){ .id = 1 + i,
						.kind = XPU_REC_CUDA_API,
						.sub_kind = XPU_API_RUNTIME,
						.pid = 42,
						.tid = 43,
						.ts_ns = at + i * MS,
						.end_ns = at + i * MS + 800,
						.correlation_id = 1 + i,
						.api_id = 211 };
		e[2 * i + 1] = (struct xpu_cevent){ .id = 10000 + i,
						    .kind = XPU_REC_GPU_KERNEL,
						    .pid = 42,
						    .tid = 42,
						    .ts_ns = BASE + i * 1000,
						    .end_ns = BASE + i * 1000 + 500,
						    .stream = 7,
						    .name = "old",
						    .name_len = 3 };
	}
	fmt_timeline.batch(st, &b, e);
	for (i = 0; i < CALLS; i++) { /* each call's kernel: an arrow from the call */
		e[i] = (struct xpu_cevent){ .id = 20000 + i,
					    .kind = XPU_REC_GPU_KERNEL,
					    .pid = 42,
					    .tid = 43,
					    .ts_ns = at + i * MS + 900,
					    .end_ns = at + i * MS + 1900,
					    .stream = 9,
					    .correlation_id = 1 + i,
					    .name = "new",
					    .name_len = 3 };
		e[i].links[e[i].n_links++] =
			(struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = 1 + i };
	}
	b.n_events = CALLS;
	fmt_timeline.batch(st, &b, e);
	r = fmt_timeline.snapshot(st, asked, why, sizeof(why));
	r = r ? r : fmt_timeline.snapshot_result(st, got, sizeof(got), why, sizeof(why));
	tap_ok(r == 1 && strstr(why, " 0 flow arrows left out"),
	       "ring: %u records older than the cut among the calls: every arrow kept (%d: %s)",
	       CALLS, r, why);
	fmt_timeline.free(st);
	unlink(asked);
}

/* A stem with '"' and '\\' in its name: the index escapes its windows' names, and a restarted
 * sink reads them back, so that it keeps listing (and in time deletes) them. */
static void test_index_escaped(void)
{
	char d[sizeof(dir) + 8], p[sizeof(dir) + 32], why[600] = "";
	struct trace_windows *w = NULL;
	unsigned int n = 0;

	snprintf(d, sizeof(d), "%s/e", dir);
	mkdir(d, 0755);
	snprintf(p, sizeof(p), "%s/tr\"a\\ce.json", d);
	if (windows_left(p, 2, 1000))
		return;
	if (!trace_windows__open(&w, p, 1000000, true, why, sizeof(why)))
		n = trace_windows__count(w);
	tap_ok(n == 2,
	       "restart: windows whose names hold '\"' and '\\' are read back from the index "
	       "(%u of 2: %s)",
	       n, why);
	trace_windows__free(w);
}

/* A new session writing windows under the same path takes the windows an earlier one left
 * over: listed, under the cap, deleted oldest first; its own counts start at 0. (They stayed
 * on disk past every cap, the new index not listing them.) */
static void test_windows_adopted(void)
{
	char p[sizeof(dir) + 32], why[600] = "";
	struct trace_windows *w = NULL;
	__u64 written = 1, deleted = 1, bytes = 1;
	unsigned int n = 0;

	snprintf(p, sizeof(p), "%s/a", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/trace.json", dir);
	if (windows_left(p, 3, 300000))
		return;
	if (!trace_windows__open(&w, p, 1000000, false, why, sizeof(why))) {
		n = trace_windows__count(w);
		trace_windows__counts(w, &written, &deleted, &bytes);
	}
	tap_ok(n == 3 && !written && !deleted && !bytes,
	       "windows: a new session takes over the windows an earlier one left (%u of 3), its "
	       "own counts from 0",
	       n);
	trace_windows__free(w);
}

/* A short session after an earlier one's windows (an earlier `xpusup record` into the same
 * folder) still leaves path itself, one trace, as docs/timeline.md says: the windows it took
 * over are not its own. (It became one more window in the index.) */
static void test_short_after_windows(void)
{
	char d[sizeof(dir) + 8], p[sizeof(dir) + 32], why[600] = "";
	struct fmt_test_opt o[] = {
		{ "path", p }, { "mode", "file" }, { "window_s", "3600" }, { NULL, NULL }
	};
	struct fmt_env env = fmt_test_env(o);
	void *st = NULL;
	int err;

	snprintf(d, sizeof(d), "%s/s", dir);
	mkdir(d, 0755);
	snprintf(p, sizeof(p), "%s/trace.json", d);
	if (windows_left(p, 2, 1000) || fmt_timeline.open(&st, &env, why, sizeof(why)))
		return;
	kernels(st, 1, BASE, 5);
	err = fmt_timeline.finish(st, why, sizeof(why));
	tap_ok(!err && access(p, F_OK) == 0 && counter(st, "windows_written") == 0 &&
		       counter(st, "windows_on_disk") == 2,
	       "windows: a short session after an earlier one's windows leaves path itself "
	       "(%s; %llu written, %llu listed)",
	       why, (unsigned long long)counter(st, "windows_written"),
	       (unsigned long long)counter(st, "windows_on_disk"));
	fmt_timeline.free(st);
}

/* A timeline writing windows into the new folder d under a cap of 1 MiB: they rotate on
 * size alone (window_s is an hour). */
static int open_small_windows(const char *d, void **st, char *why, size_t why_len)
{
	char p[sizeof(dir) + 32];
	struct fmt_test_opt o[] = { { "path", p },
				    { "mode", "file" },
				    { "window_s", "3600" },
				    { "max_mb", "1" },
				    { NULL, NULL } };
	struct fmt_env env = fmt_test_env(o);

	mkdir(d, 0755);
	snprintf(p, sizeof(p), "%s/trace.json", d);
	return fmt_timeline.open(st, &env, why, why_len);
}

/* Samples whose deep stacks are new each time: a window's stackFrames, written at its close,
 * hold far more bytes than its events. The cap counts a window as its close leaves it: the
 * windows on disk stay under max_mb at every step and after stop, and they rotate on it. */
static void test_meta_cap(void)
{
	enum { SAMPLES = 300, DEPTH = 48, NAME = 200 };
	static char names[DEPTH][NAME + 1];
	char d[sizeof(dir) + 8], why[600] = "";
	const char *frames[DEPTH];
	__u64 stack[DEPTH], sum, largest, worst = 0, worst_file = 0;
	unsigned int i, j, files, most = 0;
	void *st = NULL;
	int err;

	snprintf(d, sizeof(d), "%s/m", dir);
	err = open_small_windows(d, &st, why, sizeof(why));
	tap_ok(!err, "cap: windows of 1 MiB open (%s)", why);
	if (err)
		return;
	for (i = 0; i < SAMPLES; i++) {
		struct xpu_cevent e = { .id = i + 1,
					.kind = XPU_REC_CPU_SAMPLE,
					.pid = 42,
					.tid = 42,
					.ts_ns = BASE + i * MS,
					.n_user = DEPTH,
					.stack = stack,
					.frames = frames };
		struct xpu_wire_batch b = { .producer = 1, .n_events = 1 };

		for (j = 0; j < DEPTH; j++) {
			snprintf(names[j], sizeof(names[j]), "s%05u_f%02u_%0*d", i, j, NAME - 11,
				 0);
			frames[j] = names[j];
			stack[j] = 0x400000 + (__u64)i * DEPTH + j;
		}
		fmt_timeline.batch(st, &b, &e);
		sum = windows_bytes(d, &largest, &files);
		worst = sum > worst ? sum : worst;
		worst_file = largest > worst_file ? largest : worst_file;
		most = files > most ? files : most;
	}
	err = fmt_timeline.finish(st, why, sizeof(why));
	fmt_timeline.free(st);
	sum = windows_bytes(d, &largest, &files);
	worst = sum > worst ? sum : worst;
	worst_file = largest > worst_file ? largest : worst_file;
	tap_ok(!err && worst <= (1u << 20),
	       "cap: windows of new deep stacks stay under max_mb with their stackFrames, at "
	       "every step and after stop (%llu bytes at most, the largest window %llu; %s)",
	       (unsigned long long)worst, (unsigned long long)worst_file, why);
	tap_ok(most >= 3 && files >= 3,
	       "cap: and they rotate for it (up to %u windows on disk, %u after stop)", most,
	       files);
}

/* So many tracks that their names alone fill a window of max_mb = 1: windows close when their
 * events fill half a window, not one an event, and status says max_mb is too small. */
static void test_meta_big(void)
{
	enum { THREADS = 1100, EACH = 3 };
	char d[sizeof(dir) + 8], why[600] = "";
	static struct xpu_cevent e[THREADS];
	struct xpu_wire_batch b = { .producer = 1, .n_events = THREADS };
	unsigned int i, k, files;
	__u64 largest, written;
	void *st = NULL;
	int err;

	snprintf(d, sizeof(d), "%s/t", dir);
	if (open_small_windows(d, &st, why, sizeof(why)))
		return;
	for (k = 0; k < EACH; k++) {
		for (i = 0; i < THREADS; i++)
			e[i] = (struct xpu_cevent){ .id = k * THREADS + i + 1,
						    .kind = XPU_REC_CPU_SAMPLE,
						    .pid = 42,
						    .tid = 1000 + i,
						    .ts_ns = BASE + (k * THREADS + i) * MS };
		fmt_timeline.batch(st, &b, e);
	}
	err = fmt_timeline.tick(st, BASE + THREADS * EACH * MS, why, sizeof(why));
	tap_ok(err == -EFBIG && strstr(why, "max_mb = 1 is too small"),
	       "cap: tracks whose names fill half a window are said (%d: %s)", err, why);
	fmt_timeline.finish(st, why, sizeof(why));
	written = counter(st, "windows_written");
	fmt_timeline.free(st);
	windows_bytes(d, &largest, &files);
	tap_ok(written >= 2 && written <= 8,
	       "cap: and windows still hold many events each (%llu windows of %u events, %u on "
	       "disk)",
	       (unsigned long long)written, THREADS * EACH, files);
}

int main(void)
{
	char cmd[sizeof(dir) + 16];

	snprintf(dir, sizeof(dir), "/tmp/xpusup-snapshot-test-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	test_told_at_stop();
	test_trigger_waits();
	test_names();
	test_undeletable();
	test_index_unwritable();
	test_partials();
	test_meta_cap();
	test_meta_big();
	test_index_escaped();
	test_windows_adopted();
	test_short_after_windows();
	test_ring_skip();
	test_ring_expiry();
	test_ring_many_gaps();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	return tap_done();
}
