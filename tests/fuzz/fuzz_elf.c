/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as an ELF file, through both loaders
 * (a memfd read with pread, as files are read in production, and memory),
 * and through the one symbol reader's lookup by name (what finds CPython's
 * runtime and the driver's entry points). Must never crash, leak or
 * allocate past the module's caps.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "user/symbolize/elf_syms.h"
#include "user/symbolize/elf_symtab.h"

static void fuzz_elf__query(struct elf_syms *s, const uint8_t *data, size_t len)
{
	const char *name;
	uint64_t off, v, addr = 0;
	size_t i;

	(void)elf_syms__build_id(s);
	(void)elf_syms__count(s);
	for (i = 0; i < 8; i++) {
		if (len >= 8 * (i + 1))
			memcpy(&addr, data + len - 8 * (i + 1), 8);
		if (elf_syms__lookup(s, addr, &name, &off) == 0)
			(void)strlen(name);
		elf_syms__file_to_vaddr(s, addr, &v);
		addr = 0x1000 * i;
	}
}

/* A few names, found or not, and their offsets through the load segments. */
static void fuzz_elf__names(int fd)
{
	static const char *const names[] = { "_PyRuntime", "main", NULL, "" };
	struct elf_loads loads;
	uint64_t vaddr[4], off;
	int found = elf_symtab__lookup_names(fd, names, 4, ELF_TYPE_ANY, vaddr, &loads);

	if (found < 0)
		return;
	if (found > 4 || loads.n > ELF_LOADS_MAX || vaddr[2])
		__builtin_trap();
	for (size_t k = 0; k < 4; k++)
		elf_loads__to_offset(&loads, vaddr[k], PF_X, &off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct elf_syms *s;
	int fd;

	if (elf_syms__load_mem(data, len, &s) == 0) {
		fuzz_elf__query(s, data, len);
		elf_syms__put(s);
	}
	fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, len) == (ssize_t)len && elf_syms__load_fd(fd, &s) == 0) {
		fuzz_elf__query(s, data, len);
		elf_syms__put(s);
	}
	if (lseek(fd, 0, SEEK_SET) == 0)
		fuzz_elf__names(fd);
	close(fd);
	return 0;
}
