/* SPDX-License-Identifier: MIT */
/*
 * A symbol file for made-up addresses: the synthetic source's simulated program has no code,
 * yet its stacks should read as a real program's do (function names in the flame graph). It
 * writes a small ELF file whose PT_LOAD segments cover its addresses and whose .symtab names
 * its functions, and reports the file in MODULE records, as the CUPTI library reports a real
 * process's images: the correlator's symbolizer reads it like any other file, so the names
 * take the path real symbolized frames take (symbolizer -> the wire's frame-name table ->
 * the sinks). Nothing in the correlator knows the file is made up.
 */
#ifndef XPUSUP_ACTORS_SYNTHETIC_SYMFILE_H
#define XPUSUP_ACTORS_SYNTHETIC_SYMFILE_H

#include <linux/types.h>

/* An executable image of the simulated process: [vaddr, vaddr + size), page-aligned. */
struct symfile_image {
	const char *section; /* its section's name, e.g. ".text" */
	__u64 vaddr, size;
	__u64 offset; /* out: the file offset it is mapped from (a MODULE record's pgoff) */
};

/* A function around addr, a return address or a sampled ip: its symbol covers
 * [addr - SYMFILE_HALF, addr + SYMFILE_HALF), so the ip - 1 the correlator looks up for a
 * return address falls inside it too. */
struct symfile_function {
	__u64 addr;
	const char *name;
};

#define SYMFILE_HALF 0x80u

/*
 * symfile__write - write the symbol file of images and functions as name in folder dirfd,
 * atomically (under a temporary name, then renamed over name), so a reader never sees half
 * a file. Fills images[i].offset, and *dev, *ino with the file's st_dev and st_ino (what a
 * MODULE record carries so that the correlator opens this very file).
 *
 * Returns 0, or -EINVAL (a function outside every image, images not page-aligned, the
 * symbols do not fit the file's first page), or -errno from the file system.
 */
int symfile__write(int dirfd, const char *name, struct symfile_image *images, unsigned int n_images,
		   const struct symfile_function *fns, unsigned int n_fns, __u64 *dev, __u64 *ino);

#endif /* XPUSUP_ACTORS_SYNTHETIC_SYMFILE_H */
