/* SPDX-License-Identifier: MIT */
/* Multi-uprobe links (uprobe_multi.h). */
#include "user/probe/uprobe_multi.h"
#include "user/symbolize/elf_symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

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

int uprobe_multi__offsets(const char *path, const char *const *names, size_t n,
			  __u64 *ret_offsets)
{
	struct elf_loads loads;
	uint64_t *vaddr;
	size_t k, found = 0;
	int fd, err;

	memset(ret_offsets, 0, n * sizeof(*ret_offsets));
	vaddr = calloc(n ? n : 1, sizeof(*vaddr));
	if (!vaddr)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : 0;
	if (!err)
		err = elf_symtab__lookup_names(fd, names, n, ELF_TYPE(STT_FUNC), vaddr, &loads);
	if (fd >= 0)
		close(fd);
	/* A probe's offset is in the file, through the executable segment holding it. */
	for (k = 0; err >= 0 && k < n; k++) {
		uint64_t off;

		if (vaddr[k] && !elf_loads__to_offset(&loads, vaddr[k], PF_X, &off) && off) {
			ret_offsets[k] = off;
			found++;
		}
	}
	free(vaddr);
	return err < 0 ? err : (int)found;
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
