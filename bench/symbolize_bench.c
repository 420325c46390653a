// SPDX-License-Identifier: MIT
/*
 * symbolize_bench - the symbolizer (actors/correlator/symbolize.c) on real addresses: the
 * middle of every function (as a return address would be) of every ELF file mapped in this
 * process (libc, libdw, libelf, libstdc++, ..., this program), in random order, resolved in
 * this process by its pid; and kernel text symbols from /proc/kallsyms when visible.
 *
 *   warm: the caches hot (maps read, files loaded, names interned), ns per frame, through
 *         symbolizer__stack (stacks of 32 frames, timed per stack) and symbolizer__name
 *         (timed per frame);
 *   cold: a new symbolizer each time, so every lookup pays for what it is the first to need:
 *         /proc/PID/maps, loading each file's symbols with libdwfl, demangling, interning.
 * Each measure is run REPEAT times (-r, default 5), warm ones interleaved with the baseline;
 * the medians are printed.
 *
 * Baseline in the same run: a binary search in a plain sorted array of as many addresses as
 * there are functions, for the same frames in the same order: the floor any lookup by
 * address pays. The ratio says what the symbolizer costs on top.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actors/correlator/symbolize.h"
#include "bench/bench_util.h"

#define STACK_DEPTH 32
#define WARM_FRAMES 2000000 /* frames per warm pass */
#define COLD_MAX 64

struct frames {
	__u64 *ip;
	size_t n, cap;
	unsigned int files;
	char names[512]; /* "libc.so.6 2890, ..." */
};

static int frames_add(struct frames *f, __u64 ip)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4096;
		__u64 *v = realloc(f->ip, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->ip = v;
		f->cap = cap;
	}
	f->ip[f->n++] = ip;
	return 0;
}

/* The middle of every sized function in path's .symtab (else .dynsym), loaded at bias. */
static long file_functions(struct frames *f, const char *path, __u64 bias)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t i, n, before = f->n;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	int fd;
	Elf *elf;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	scn = symtab ? symtab : dynsym;
	if (scn && gelf_getshdr(scn, &sh) && (data = elf_getdata(scn, NULL))) {
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 1; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value || sym.st_size < 2)
				continue;
			if (frames_add(f, bias + sym.st_value + sym.st_size / 2))
				break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return (long)(f->n - before);
}

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct frames *f = ctx;
	const char *path = info->dlpi_name, *base;
	size_t used = strlen(f->names);
	char exe[4096];
	ssize_t len;
	long n;

	if (!path[0]) { /* the main program */
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (len <= 0)
			return 0;
		exe[len] = '\0';
		path = exe;
	}
	if (path[0] != '/')
		return 0; /* the vdso */
	n = file_functions(f, path, info->dlpi_addr);
	if (n <= 0)
		return 0;
	f->files++;
	base = strrchr(path, '/') + 1;
	snprintf(f->names + used, sizeof(f->names) - used, "%s%s %ld", used ? ", " : "", base, n);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

/* ns per lookup: the index of the last element <= ip in a plain sorted array. */
static double run_baseline(const __u64 *ips, size_t n, __u64 *sink)
{
	__u64 *sorted = malloc(n * sizeof(*sorted)), t0, acc = 0;
	size_t i, done = 0, lo, hi, mid;

	if (!sorted)
		return -1;
	memcpy(sorted, ips, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	t0 = bench_now_ns();
	while (done < WARM_FRAMES) {
		for (i = 0; i < n; i++) {
			lo = 0;
			hi = n;
			while (lo < hi) {
				mid = lo + (hi - lo) / 2;
				if (sorted[mid] <= ips[i])
					lo = mid + 1;
				else
					hi = mid;
			}
			acc += lo;
		}
		done += n;
	}
	t0 = bench_now_ns() - t0;
	free(sorted);
	*sink += acc;
	return (double)t0 / (double)done;
}

/* ns per frame, warm: stacks of STACK_DEPTH frames through symbolizer__stack, or one frame at
 * a time through symbolizer__name. kernel: the first frames of each stack are kernel frames. */
static double run_warm(struct symbolizer *s, __u32 pid, const __u64 *ips, size_t n, bool kernel,
		       bool per_frame, __u64 *sink)
{
	const char *names[STACK_DEPTH];
	size_t i, done = 0, depth;
	__u64 t0 = bench_now_ns();

	while (done < WARM_FRAMES) {
		for (i = 0; i < n; i += depth) {
			depth = n - i < STACK_DEPTH ? n - i : STACK_DEPTH;
			if (per_frame) {
				size_t j;

				for (j = 0; j < depth; j++)
					names[j] = symbolizer__name(s, pid, ips[i + j], kernel);
			} else {
				symbolizer__stack(s, pid, ips + i, kernel ? (__u32)depth : 0,
						  kernel ? 0 : (__u32)depth, names);
			}
			*sink += (uintptr_t)names[0];
		}
		done += n;
	}
	return (double)(bench_now_ns() - t0) / (double)done;
}

/* ns for the first lookup of every frame in a new symbolizer; *named gets the frames named. */
static double run_cold(__u32 pid, const __u64 *ips, size_t n, bool kernel, size_t *named)
{
	struct symbolizer *s = symbolizer__new();
	const char *name;
	__u64 t0;
	size_t i;

	if (!s)
		return -1;
	*named = 0;
	t0 = bench_now_ns();
	for (i = 0; i < n; i++) {
		name = symbolizer__name(s, pid, ips[i], kernel);
		*named += strcmp(name, SYMBOLIZER_UNKNOWN) != 0;
	}
	t0 = bench_now_ns() - t0;
	symbolizer__free(s);
	return (double)t0;
}

/* Kernel text symbol addresses (+1, inside the function), or 0 when hidden or unreadable. */
static size_t kernel_frames(struct frames *k)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long long addr;
	char type;

	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %*s%*[^\n]", &addr, &type) == 2)
		if (addr && strchr("tT", type) && frames_add(k, addr + 1))
			break;
	fclose(f);
	return k->n;
}

int main(int argc, char **argv)
{
	unsigned long repeat;
	struct frames user = { 0 }, kern = { 0 };
	double base, warm_stack, warm_name, cold[COLD_MAX], kcold[COLD_MAX], kwarm;
	double v_base[COLD_MAX], v_stack[COLD_MAX], v_name[COLD_MAX];
	struct symbolizer_stats st;
	struct symbolizer *s, *one;
	__u32 pid = (__u32)getpid();
	__u64 sink = 0;
	size_t named = 0, knamed = 0;
	unsigned int r;
	int c;

	c = bench_repeat_option(argc, argv, "symbolize_bench", COLD_MAX, &repeat);
	if (c >= 0)
		return c;
	elf_version(EV_CURRENT);
	dl_iterate_phdr(add_object, &user);
	if (!user.n) {
		fprintf(stderr, "xpusup: unable to find functions in this process's ELF files\n");
		return EXIT_SYSTEM;
	}
	bench_shuffle(user.ip, user.n);

	for (r = 0; r < repeat; r++)
		cold[r] = run_cold(pid, user.ip, user.n, false, &named) / (double)user.n;
	s = symbolizer__new();
	if (!s) {
		fprintf(stderr, "xpusup: unable to create a symbolizer: %s\n", strerror(errno));
		return EXIT_SYSTEM;
	}
	run_warm(s, pid, user.ip, user.n, false, false, &sink); /* warm-up */
	/* Interleaved, medians: the three see the same machine noise. */
	for (r = 0; r < repeat; r++) {
		v_base[r] = run_baseline(user.ip, user.n, &sink);
		v_stack[r] = run_warm(s, pid, user.ip, user.n, false, false, &sink);
		v_name[r] = run_warm(s, pid, user.ip, user.n, false, true, &sink);
	}
	base = bench_median(v_base, (unsigned int)repeat);
	warm_stack = bench_median(v_stack, (unsigned int)repeat);
	warm_name = bench_median(v_name, (unsigned int)repeat);
	symbolizer__stats(s, &st);

	printf("symbolize_bench: %zu functions in %u files mapped here (%s), their middles in "
	       "random order, pid %u\n",
	       user.n, user.files, user.names, pid);
	printf("%-52s %12s %10s\n", "", "ns/frame", "ratio");
	printf("%-52s %12.1f %10s\n", "baseline: bsearch in a sorted array, same size", base, "1");
	printf("%-52s %12.1f %10.2f\n", "warm, symbolizer__stack (32 frames, timed per stack)",
	       warm_stack, warm_stack / base);
	printf("%-52s %12.1f %10.2f\n", "warm, symbolizer__name (timed per frame)", warm_name,
	       warm_name / base);
	printf("%-52s %12.1f %10.0f   median of %lu: %.1f ms for all %zu frames\n",
	       "cold: new symbolizer (maps, ELF loads, names)",
	       bench_median(cold, (unsigned)repeat), bench_median(cold, (unsigned)repeat) / base,
	       repeat, bench_median(cold, (unsigned)repeat) * (double)user.n / 1e6, user.n);
	printf("named: %zu of %zu frames (%.2f %%); held warm: %llu files, %llu names, %.1f MB\n",
	       named, user.n, 100.0 * (double)named / (double)user.n, (unsigned long long)st.files,
	       (unsigned long long)st.names, (double)st.bytes / 1e6);

	if (kernel_frames(&kern)) {
		bench_shuffle(kern.ip, kern.n);
		for (r = 0; r < repeat; r++)
			kcold[r] = run_cold(0, kern.ip, 1, true, &knamed); /* the kallsyms load */
		run_warm(s, 0, kern.ip, kern.n, true, false, &sink);
		for (r = 0; r < repeat; r++) {
			v_base[r] = run_baseline(kern.ip, kern.n, &sink);
			v_stack[r] = run_warm(s, 0, kern.ip, kern.n, true, false, &sink);
		}
		base = bench_median(v_base, (unsigned int)repeat);
		kwarm = bench_median(v_stack, (unsigned int)repeat);
		symbolizer__stats(s, &st);
		printf("kernel: %zu text symbols\n", kern.n);
		printf("%-52s %12.1f %10s\n", "baseline: bsearch in a sorted array, same size",
		       base, "1");
		printf("%-52s %12.1f %10.2f\n", "warm, symbolizer__stack (32 kernel frames)", kwarm,
		       kwarm / base);
		printf("%-52s %12s %10s   median of %lu: %.1f ms (/proc/kallsyms)\n",
		       "cold: first kernel frame", "", "", repeat,
		       bench_median(kcold, (unsigned)repeat) / 1e6);
		printf("held after the kernel frames: %llu kernel symbols, %.1f MB in all "
		       "(every kernel name interned)\n",
		       (unsigned long long)st.kernel_symbols, (double)st.bytes / 1e6);
		one = symbolizer__new();
		if (one) {
			symbolizer__name(one, 0, kern.ip[0], true);
			symbolizer__stats(one, &st);
			printf("held by a new symbolizer after one kernel frame: %.1f MB\n",
			       (double)st.bytes / 1e6);
			symbolizer__free(one);
		}
	} else {
		printf("kernel: /proc/kallsyms addresses hidden (run as root): not measured\n");
	}
	symbolizer__free(s);
	free(user.ip);
	free(kern.ip);
	return sink == 42 ? 1 : 0; /* keep the results alive */
}
