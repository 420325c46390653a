// SPDX-License-Identifier: MIT
/*
 * unwind_bench - the unwinder without frame pointers (unwind/cfi.c, unwind/walk.c):
 *
 *   cfi__find: ns per lookup in libc as loaded here, at the middle of every FDE's range (where
 *   return addresses fall), in random order; through .eh_frame_hdr's table and through an
 *   index of .eh_frame alone. Baseline in the same run: bsearch(3) over as many ranges, the
 *   floor of any lookup by address.
 *
 *   unwind__walk: ns per frame over a copy of this bench's own stack, 32 frames deep in a
 *   recursion built with frame pointers (and CFI, as every function is), walked with CFI and
 *   a rule callback that caches rules by address (the correlator's case: few distinct return
 *   addresses), and with a cfi__find per frame. Baseline in the same run: the same copy
 *   walked with frame pointers only, what a stack costs today.
 *
 * Each measure runs REPEAT times (-r, default 5), interleaved with its baseline; medians.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "unwind/self_cfi.h"

#define REPEAT_MAX 64
#define LOOKUPS 2000000 /* per cfi__find pass */
#define DEPTH 40 /* the recursion; the walks stop at FRAMES */
#define FRAMES 32
#define WALKS 100000 /* per walk pass */
#define COPY_MAX (32u << 10)
#define CACHE 256

/* --- lookups ------------------------------------------------------------------------ */

struct ranges {
	__u64 *start; /* sorted, one more than n: the last range's end */
	__u64 *probe; /* the middles, shuffled */
	size_t n;
};

/* The FDE ranges of the image, from its .eh_frame_hdr table (datarel sdata4 pairs): each
 * starts where the next one does, near enough for picking middles. */
static int ranges_from_hdr(const struct cfi_sections *sec, struct ranges *r)
{
	const __u8 *t = sec->eh_frame_hdr + 12;
	__u32 count;
	__s32 loc;
	size_t i;

	if (sec->eh_frame_hdr_len < 12 || sec->eh_frame_hdr[3] != 0x3b)
		return -ENOTSUP;
	memcpy(&count, sec->eh_frame_hdr + 8, 4);
	if (count < 2 || count > (sec->eh_frame_hdr_len - 12) / 8)
		return -EBADMSG;
	r->n = count - 1;
	r->start = malloc(count * sizeof(*r->start));
	r->probe = malloc(r->n * sizeof(*r->probe));
	if (!r->start || !r->probe)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		memcpy(&loc, t + 8 * i, 4);
		r->start[i] = sec->eh_frame_hdr_vaddr + (__u64)(__s64)loc;
	}
	for (i = 0; i < r->n; i++)
		r->probe[i] = r->start[i] + (r->start[i + 1] - r->start[i]) / 2;
	return 0;
}

/* bsearch(3) key: the range [start[i], start[i + 1]) that holds *key */
static int in_range(const void *key, const void *elem)
{
	__u64 x = *(const __u64 *)key;
	const __u64 *s = elem;

	return x < s[0] ? -1 : x >= s[1] ? 1 : 0;
}

static double run_baseline(const struct ranges *r, __u64 *sink)
{
	size_t i, done = 0;
	__u64 t0 = bench_now_ns();

	while (done < LOOKUPS) {
		for (i = 0; i < r->n; i++)
			*sink += (uintptr_t)bsearch(&r->probe[i], r->start, r->n, sizeof(__u64),
						    in_range);
		done += r->n;
	}
	return (double)(bench_now_ns() - t0) / (double)done;
}

/* The lookups of one pass that found no rule, by why. */
struct misses {
	size_t no_fde, bad_cfi, unsupported;
};

/* ns per cfi__find */
static double run_find(const struct cfi_sections *sec, const struct cfi_index *idx,
		       const struct ranges *r, struct misses *m, __u64 *sink)
{
	struct cfi_rule rule = { 0 };
	size_t i, done = 0;
	__u64 t0 = bench_now_ns();
	int rc;

	memset(m, 0, sizeof(*m));
	while (done < LOOKUPS) {
		for (i = 0; i < r->n; i++) {
			rc = cfi__find(sec, idx, r->probe[i], &rule);
			if (rc && !done) {
				m->no_fde += rc == -ENOENT;
				m->bad_cfi += rc == -EBADMSG;
				m->unsupported += rc == -ENOTSUP;
			}
			*sink += rule.cfa_off;
		}
		done += r->n;
	}
	return (double)(bench_now_ns() - t0) / (double)done;
}

/* --- walks -------------------------------------------------------------------------- */

/* Rules by address, direct-mapped: what a caller keeps so that a walk rarely runs cfi__find. */
struct cached_walk {
	struct self_walk walk;
	__u64 addr[CACHE];
	struct cfi_rule rule[CACHE];
	int rc[CACHE];
	__u64 misses;
};

static int cached_rule(void *ctx, __u64 addr, struct cfi_rule *out)
{
	struct cached_walk *c = ctx;
	unsigned int slot = (unsigned int)((addr * 0x9e3779b97f4a7c15ull) >> 56);

	if (c->addr[slot] != addr) {
		c->misses++;
		c->addr[slot] = addr;
		c->rc[slot] = self_walk_rule(&c->walk, addr, &c->rule[slot]);
	}
	*out = c->rule[slot];
	return c->rc[slot];
}

static int cached_read(void *ctx, __u64 addr, __u64 *val)
{
	return self_walk_read(&((struct cached_walk *)ctx)->walk, addr, val);
}

static struct self_cfi images;
static __u64 stack_top;
static __u8 stack_copy[COPY_MAX];
static struct unwind_regs captured;
static __u64 captured_len;

/* called through a pointer, so that capture is no leaf: gcc sets up no frame in a leaf,
 * frame pointers or not, and the frame-pointer walk would skip its caller */
static __u64 (*volatile copy_stack)(__u8 *, __u64, __u64, __u64) = self_stack_copy;

__attribute__((noinline)) static long capture(void)
{
	SELF_REGS(captured);
	captured_len = copy_stack(stack_copy, COPY_MAX, captured.sp, stack_top);
	return 1;
}

__attribute__((noinline)) static long recurse(int depth)
{
	long r = depth ? recurse(depth - 1) : capture();

	__asm__ volatile("" : "+r"(r)); /* not a tail call */
	return r + 1;
}

/* ns per frame of WALKS walks of FRAMES frames; *frames gets the frames of the last walk */
static double run_walk(const struct unwind_ops *ops, __u32 flags, __u64 *ips, __u32 *frames)
{
	__u64 t0 = bench_now_ns(), done = 0;
	unsigned int i;

	for (i = 0; i < WALKS; i++)
		done += *frames = unwind__walk(ops, captured, flags, ips, FRAMES, NULL);
	return (double)(bench_now_ns() - t0) / (double)(done ? done : 1);
}

static void row(const char *what, double ns, double base, const char *note)
{
	printf("%-50s %10.1f %8.2f   %s\n", what, ns, ns / base, note);
}

int main(int argc, char **argv)
{
	double v_base[REPEAT_MAX], v_hdr[REPEAT_MAX], v_idx[REPEAT_MAX], v_fp[REPEAT_MAX],
		v_cached[REPEAT_MAX], v_uncached[REPEAT_MAX], base, fp;
	__u64 ips_fp[FRAMES], ips_cfi[FRAMES], ips_unc[FRAMES], sink = 0, t0, build_ns;
	struct cfi_sections no_hdr;
	struct cached_walk cached = { 0 };
	struct self_walk plain;
	struct unwind_ops fp_ops = { self_walk_read, self_walk_rule, &plain };
	struct unwind_ops unc_ops = fp_ops;
	struct unwind_ops cached_ops = { cached_read, cached_rule, &cached };
	const struct self_module *libc = NULL;
	struct ranges ranges = { 0 };
	struct cfi_index *idx;
	unsigned long repeat;
	struct misses miss_hdr, miss_idx;
	__u32 n_fp = 0, n_cfi = 0, n_unc = 0;
	unsigned int r, i;
	char note[128];
	int c;

	c = bench_repeat_option(argc, argv, "unwind_bench", REPEAT_MAX, &repeat);
	if (c >= 0)
		return c;
	self_cfi__load(&images);
	for (i = 0; i < images.n; i++)
		if ((uintptr_t)getpid >= images.m[i].start && (uintptr_t)getpid < images.m[i].end)
			libc = &images.m[i];
	if (!libc || ranges_from_hdr(&libc->sec, &ranges)) {
		fprintf(stderr, "xpusup: unable to read libc's .eh_frame_hdr as loaded\n");
		return EXIT_SYSTEM;
	}
	bench_shuffle(ranges.probe, ranges.n);
	no_hdr = libc->sec;
	no_hdr.eh_frame_hdr = NULL;
	no_hdr.eh_frame_hdr_len = 0;
	t0 = bench_now_ns();
	idx = cfi_index__build(&no_hdr);
	build_ns = bench_now_ns() - t0;
	if (!idx) {
		fprintf(stderr, "xpusup: unable to index libc's .eh_frame: %s\n", strerror(errno));
		return EXIT_SYSTEM;
	}

	stack_top = self_stack_top((__u64)(uintptr_t)&repeat);
	recurse(DEPTH);
	plain.copy = (struct unwind_copy){ captured.sp, stack_copy, captured_len };
	plain.cfi = &images;
	cached.walk = plain;

	for (r = 0; r < repeat; r++) {
		v_base[r] = run_baseline(&ranges, &sink);
		v_hdr[r] = run_find(&libc->sec, NULL, &ranges, &miss_hdr, &sink);
		v_idx[r] = run_find(&no_hdr, idx, &ranges, &miss_idx, &sink);
		v_fp[r] = run_walk(&fp_ops, UNWIND_FP_ONLY, ips_fp, &n_fp);
		v_cached[r] = run_walk(&cached_ops, 0, ips_cfi, &n_cfi);
		v_uncached[r] = run_walk(&unc_ops, 0, ips_unc, &n_unc);
	}
	if (n_fp != FRAMES || n_cfi != FRAMES || n_unc != FRAMES ||
	    memcmp(ips_fp, ips_cfi, sizeof(ips_fp)) || memcmp(ips_cfi, ips_unc, sizeof(ips_fp))) {
		fprintf(stderr,
			"xpusup: unable to bench the walk: the walks differ (%u, %u, %u frames)\n",
			n_fp, n_cfi, n_unc);
		return EXIT_SYSTEM;
	}

	printf("unwind_bench: libc's %zu FDEs as loaded, the middle of each in random order; "
	       "a %llu-byte copy of this bench's stack, %d frames walked\n",
	       ranges.n, (unsigned long long)captured_len, FRAMES);
	printf("%-50s %10s %8s\n", "", "ns", "ratio");
	base = bench_median(v_base, (unsigned int)repeat);
	row("baseline: bsearch(3) over as many ranges", base, base, "per lookup");
	snprintf(note, sizeof(note),
		 "per lookup; no rule: %zu no_fde, %zu unsupported, %zu bad_cfi", miss_hdr.no_fde,
		 miss_hdr.unsupported, miss_hdr.bad_cfi);
	row("cfi__find through .eh_frame_hdr", bench_median(v_hdr, (unsigned int)repeat), base,
	    note);
	snprintf(note, sizeof(note), "per lookup; built in %.1f ms, %.0f KiB; %zu no rule",
		 (double)build_ns / 1e6, (double)cfi_index__bytes(idx) / 1024,
		 miss_idx.no_fde + miss_idx.unsupported + miss_idx.bad_cfi);
	row("cfi__find through the index of .eh_frame", bench_median(v_idx, (unsigned int)repeat),
	    base, note);
	fp = bench_median(v_fp, (unsigned int)repeat);
	row("baseline: walk, frame pointers only", fp, fp, "per frame");
	snprintf(note, sizeof(note), "per frame, %llu misses in all",
		 (unsigned long long)cached.misses);
	row("walk, CFI, rules cached by address", bench_median(v_cached, (unsigned int)repeat), fp,
	    note);
	row("walk, CFI, cfi__find every frame", bench_median(v_uncached, (unsigned int)repeat), fp,
	    "per frame");
	cfi_index__free(idx);
	free(ranges.start);
	free(ranges.probe);
	return sink == 42 ? 1 : 0; /* keep the results alive */
}
