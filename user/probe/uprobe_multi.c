/* SPDX-License-Identifier: MIT */
/* Multi-uprobe links (uprobe_multi.h). */
#include "user/probe/uprobe_multi.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MULTI_MAX_SECTION ((__u64)256 << 20) /* a symbol table we agree to read */
#define MULTI_MAX_PHDRS 4096

bool uprobe_multi__wanted(void)
{
	const char *env = getenv("GPUPROBE_UPROBES");
	struct utsname u;
	int major = 0, minor = 0;

	if (env && !strcmp(env, "perf"))
		return false;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 6);
}

/* The file offset of vaddr through the PT_LOAD holding it; 0 when none does. */
static __u64 vaddr_to_offset(Elf *e, __u64 vaddr)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) || n > MULTI_MAX_PHDRS)
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static void offsets_in_table(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *const *names,
			     size_t n, __u64 *off)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t count, i, k;
	const char *name;
	GElf_Sym sym;

	if (!d || !sh->sh_entsize)
		return;
	count = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < count; i++) {
		if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		for (k = 0; k < n; k++)
			if (!off[k] && names[k] && !strcmp(name, names[k]))
				off[k] = vaddr_to_offset(e, sym.st_value);
	}
}

int uprobe_multi__offsets(const char *path, const char *const *names, size_t n,
			  __u64 *ret_offsets)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t k, found = 0;
	Elf *e;
	int fd;

	memset(ret_offsets, 0, n * sizeof(*ret_offsets));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_size > MULTI_MAX_SECTION ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		offsets_in_table(e, scn, &sh, names, n, ret_offsets);
	}
	elf_end(e);
	close(fd);
	for (k = 0; k < n; k++)
		found += ret_offsets[k] != 0;
	return (int)found;
}

/* The kernel's link_create attribute for uprobe_multi, as include/uapi/linux/bpf.h lays it out. */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

int uprobe_multi__attach(int prog_fd, const char *path, const __u64 *offsets,
			 const __u64 *cookies, size_t n)
{
	struct link_create_uprobe_multi a;
	long fd;

	if (!n || n > UINT32_MAX)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)prog_fd;
	a.attach_type = GP_BPF_TRACE_UPROBE_MULTI;
	a.path = (__u64)(unsigned long)path;
	a.offsets = (__u64)(unsigned long)offsets;
	a.cookies = (__u64)(unsigned long)cookies;
	a.cnt = (__u32)n;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}
