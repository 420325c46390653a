/* SPDX-License-Identifier: MIT */
/*
 * The CFI of one ELF file on disk, for the correlator's unwinder: the file mapped read-only,
 * its .eh_frame_hdr, .eh_frame and .debug_frame found through its section headers, and a
 * sorted FDE index where the search table is missing (unwind/cfi.h). The symbolizer keeps one
 * per file it holds, loaded on the first frame that needs it and dropped least recently used
 * first past a bound on their bytes (symbolize.c).
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_CFI_FILE_H
#define XPUSUP_ACTORS_CORRELATOR_CFI_FILE_H

#include <linux/types.h>
#include <stddef.h>

#include "unwind/cfi.h"

struct cfi_file;

/*
 * cfi_file__open - map the ELF file open at fd (not consumed: the caller closes it) and find
 * its CFI sections. Returns the file (free it with cfi_file__free), or NULL with errno:
 * ENOEXEC (not a 64-bit ELF file, or its section headers are out of bounds), ENOENT (it has
 * no CFI section), ENOMEM, or mmap's error.
 */
struct cfi_file *cfi_file__open(int fd);

/* cfi_file__free - unmap and free f. NULL is ok. */
void cfi_file__free(struct cfi_file *f);

/* cfi_file__find - cfi__find on f's sections for ELF virtual address vaddr (its returns). */
int cfi_file__find(const struct cfi_file *f, __u64 vaddr, struct cfi_rule *out);

/* cfi_file__bytes - what f holds: the bytes of its CFI sections (mapped, resident once read)
 * and of its index. */
size_t cfi_file__bytes(const struct cfi_file *f);

#endif /* XPUSUP_ACTORS_CORRELATOR_CFI_FILE_H */
