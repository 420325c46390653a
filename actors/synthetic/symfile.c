// SPDX-License-Identifier: MIT
/*
 * The symbol file (symfile.h). Layout: the first page holds the ELF header, one PT_LOAD
 * program header per image, the section headers (null, one SHT_PROGBITS section per image,
 * .symtab, .strtab, .shstrtab) and those three tables; each image's bytes follow, page after
 * page, zeros (ftruncate: the file is sparse). An image's file offset and address agree
 * modulo the page, as the ELF specification wants of a loadable segment.
 */
#include "actors/synthetic/symfile.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096u

/* Appends len bytes of s to the page at *at; false when they do not fit. */
static bool put(unsigned char *page, size_t *at, const void *s, size_t len)
{
	if (len > PAGE - *at)
		return false;
	memcpy(page + *at, s, len);
	*at += len;
	return true;
}

static int image_of(const struct symfile_image *images, unsigned int n, __u64 addr)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (addr - SYMFILE_HALF >= images[i].vaddr &&
		    addr + SYMFILE_HALF <= images[i].vaddr + images[i].size)
			return (int)i;
	return -1;
}

/* The first page: headers and tables. 0 or -EINVAL. */
static int build(unsigned char *page, struct symfile_image *images, unsigned int n_images,
		 const struct symfile_function *fns, unsigned int n_fns, __u64 *file_size)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)page;
	Elf64_Shdr sh[64] = { { 0 } };
	unsigned int n_sh = n_images + 4, i;
	size_t at = sizeof(*eh) + n_images * sizeof(Elf64_Phdr), symtab, strtab, shstrtab, shoff;
	__u64 offset = PAGE;
	int img;

	if (n_sh > sizeof(sh) / sizeof(sh[0]) || at > PAGE)
		return -EINVAL;
	for (i = 0; i < n_images; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(page + sizeof(*eh)) + i;

		if (images[i].vaddr % PAGE || images[i].size % PAGE || !images[i].size)
			return -EINVAL;
		images[i].offset = offset;
		*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
				    .p_flags = PF_R | PF_X,
				    .p_offset = offset,
				    .p_vaddr = images[i].vaddr,
				    .p_paddr = images[i].vaddr,
				    .p_filesz = images[i].size,
				    .p_memsz = images[i].size,
				    .p_align = PAGE };
		sh[1 + i] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS,
					  .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
					  .sh_addr = images[i].vaddr,
					  .sh_offset = offset,
					  .sh_size = images[i].size,
					  .sh_addralign = 16 };
		offset += images[i].size;
	}
	*file_size = offset;

	/* .symtab: the null symbol, then one global function per fns[] */
	at = (at + 7) & ~(size_t)7;
	symtab = at;
	at += sizeof(Elf64_Sym) * (n_fns + 1);
	if (at > PAGE)
		return -EINVAL;
	strtab = at;
	if (!put(page, &at, "", 1))
		return -EINVAL;
	for (i = 0; i < n_fns; i++) {
		Elf64_Sym *sym = (Elf64_Sym *)(page + symtab) + 1 + i;

		img = image_of(images, n_images, fns[i].addr);
		if (img < 0)
			return -EINVAL;
		*sym = (Elf64_Sym){ .st_name = (Elf64_Word)(at - strtab),
				    .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				    .st_shndx = (Elf64_Section)(1 + img),
				    .st_value = fns[i].addr - SYMFILE_HALF,
				    .st_size = 2 * SYMFILE_HALF };
		if (!put(page, &at, fns[i].name, strlen(fns[i].name) + 1))
			return -EINVAL;
	}
	sh[n_images + 1] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB,
					 .sh_offset = symtab,
					 .sh_size = strtab - symtab,
					 .sh_link = n_images + 2,
					 .sh_info = 1, /* the first global symbol */
					 .sh_addralign = 8,
					 .sh_entsize = sizeof(Elf64_Sym) };
	sh[n_images + 2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB,
					 .sh_offset = strtab,
					 .sh_size = at - strtab,
					 .sh_addralign = 1 };

	/* .shstrtab: the sections' names, in section order */
	shstrtab = at;
	if (!put(page, &at, "", 1))
		return -EINVAL;
	for (i = 1; i < n_sh; i++) {
		static const char *const tables[] = { ".symtab", ".strtab", ".shstrtab" };
		const char *name = i <= n_images ? images[i - 1].section : tables[i - n_images - 1];

		sh[i].sh_name = (Elf64_Word)(at - shstrtab);
		if (!put(page, &at, name, strlen(name) + 1))
			return -EINVAL;
	}
	sh[n_sh - 1] = (Elf64_Shdr){ .sh_name = sh[n_sh - 1].sh_name,
				     .sh_type = SHT_STRTAB,
				     .sh_offset = shstrtab,
				     .sh_size = at - shstrtab,
				     .sh_addralign = 1 };

	at = (at + 7) & ~(size_t)7;
	shoff = at;
	if (!put(page, &at, sh, n_sh * sizeof(sh[0])))
		return -EINVAL;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (Elf64_Half)n_images;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (Elf64_Half)n_sh;
	eh->e_shstrndx = (Elf64_Half)(n_sh - 1);
	return 0;
}

int symfile__write(int dirfd, const char *name, struct symfile_image *images, unsigned int n_images,
		   const struct symfile_function *fns, unsigned int n_fns, __u64 *dev, __u64 *ino)
{
	_Alignas(8) unsigned char page[PAGE] = { 0 };
	char tmp[256];
	__u64 size;
	struct stat st;
	int fd, err;

	err = build(page, images, n_images, fns, n_fns, &size);
	if (err)
		return err;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.partial", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
		err = errno ? -errno : -EIO;
		goto remove_tmp;
	}
	if (ftruncate(fd, (off_t)size) || fstat(fd, &st)) {
		err = -errno;
		goto remove_tmp;
	}
	if (renameat(dirfd, tmp, dirfd, name)) {
		err = -errno;
		goto remove_tmp;
	}
	close(fd);
	*dev = (__u64)st.st_dev;
	*ino = (__u64)st.st_ino;
	return 0;
remove_tmp:
	close(fd);
	unlinkat(dirfd, tmp, 0);
	return err;
}
