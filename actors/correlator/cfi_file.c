// SPDX-License-Identifier: MIT
/* The CFI sections of an ELF file on disk: contract in cfi_file.h. */
#include "actors/correlator/cfi_file.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

struct cfi_file {
	void *map;
	size_t map_len;
	struct cfi_sections sec;
	struct cfi_index *idx; /* NULL: the .eh_frame_hdr table is all there is */
	size_t bytes;
};

/* Whether [off, off + len) lies inside a file of size bytes, without overflow. */
static int in_file(__u64 off, __u64 len, size_t size)
{
	return off <= size && len <= size - off;
}

/* Whether the section name at name, with room bytes left in the names table, is want: compared
 * with its NUL, so a table that is not NUL-terminated is never read past. */
#define NAMED(name, room, want) ((room) >= sizeof(want) && !memcmp((name), (want), sizeof(want)))

/* Fill f->sec from the section headers; the file's bytes are untrusted: every offset and
 * name is checked against the mapping. 0, or -ENOEXEC / -ENOENT. */
static int sections_find(struct cfi_file *f)
{
	const unsigned char *img = f->map;
	const Elf64_Ehdr *eh = f->map;
	const Elf64_Shdr *sh, *names;
	__u64 i;

	if (f->map_len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(eh->e_shoff, (__u64)eh->e_shnum * sizeof(Elf64_Shdr), f->map_len) ||
	    eh->e_shoff % 8 || eh->e_shstrndx >= eh->e_shnum)
		return -ENOEXEC;
	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (!in_file(names->sh_offset, names->sh_size, f->map_len))
		return -ENOEXEC;
	for (i = 0; i < eh->e_shnum; i++) {
		const char *name = (const char *)img + names->sh_offset + sh[i].sh_name;
		__u64 room = sh[i].sh_name < names->sh_size ? names->sh_size - sh[i].sh_name : 0;
		const __u8 *bytes = img + sh[i].sh_offset;

		if (sh[i].sh_type == SHT_NOBITS || !sh[i].sh_size ||
		    !in_file(sh[i].sh_offset, sh[i].sh_size, f->map_len))
			continue;
		if (NAMED(name, room, ".eh_frame_hdr")) {
			f->sec.eh_frame_hdr = bytes;
			f->sec.eh_frame_hdr_len = sh[i].sh_size;
			f->sec.eh_frame_hdr_vaddr = sh[i].sh_addr;
		} else if (NAMED(name, room, ".eh_frame")) {
			f->sec.eh_frame = bytes;
			f->sec.eh_frame_len = sh[i].sh_size;
			f->sec.eh_frame_vaddr = sh[i].sh_addr;
		} else if (NAMED(name, room, ".debug_frame")) {
			f->sec.debug_frame = bytes;
			f->sec.debug_frame_len = sh[i].sh_size;
		}
	}
	if (!f->sec.eh_frame && !f->sec.debug_frame)
		return -ENOENT;
	return 0;
}

struct cfi_file *cfi_file__open(int fd)
{
	struct cfi_file *f;
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		errno = ENOEXEC;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->map_len = (size_t)st.st_size;
	f->map = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f->map == MAP_FAILED) {
		err = -errno;
		goto free_file;
	}
	err = sections_find(f);
	if (err)
		goto unmap;
	/* Only a file whose .eh_frame has no search table, or that has .debug_frame, needs an
	 * index; ENOENT says there was nothing to index. */
	f->idx = cfi_index__build(&f->sec);
	if (!f->idx && errno != ENOENT) {
		err = -errno;
		goto unmap;
	}
	f->bytes = f->sec.eh_frame_hdr_len + f->sec.eh_frame_len + f->sec.debug_frame_len +
		   (f->idx ? cfi_index__bytes(f->idx) : 0) + sizeof(*f);
	return f;
unmap:
	munmap(f->map, f->map_len);
free_file:
	free(f);
	errno = -err;
	return NULL;
}

void cfi_file__free(struct cfi_file *f)
{
	if (!f)
		return;
	cfi_index__free(f->idx);
	munmap(f->map, f->map_len);
	free(f);
}

int cfi_file__find(const struct cfi_file *f, __u64 vaddr, struct cfi_rule *out)
{
	return cfi__find(&f->sec, f->idx, vaddr, out);
}

size_t cfi_file__bytes(const struct cfi_file *f)
{
	return f ? f->bytes : 0;
}
