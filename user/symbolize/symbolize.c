/* SPDX-License-Identifier: MIT */
/* Naming a code address (symbolize.h). Every string is cut to fit its field. */
#include "user/symbolize/symbolize.h"
#include "user/symbolize/demangle.h"
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/perfmap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

static const char *path__base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

void symbolize__native(const char *path, struct elf_syms *syms, uint64_t file_off,
		       struct symbolized_frame *f)
{
	const char *name;
	uint64_t vaddr = file_off, off;
	char *pretty;

	memset(f, 0, sizeof(*f));
	copy_str(f->file, sizeof(f->file), path);
	if (syms) {
		copy_str(f->build_id, sizeof(f->build_id), elf_syms__build_id(syms));
		elf_syms__file_to_vaddr(syms, file_off, &vaddr);
	}
	f->addr = vaddr;
	if (syms && elf_syms__lookup(syms, vaddr, &name, &off) == 0) {
		pretty = demangle__or_copy(name);
		copy_str(f->name, sizeof(f->name), pretty ? pretty : name);
		free(pretty);
		f->has_symbol = true;
		return;
	}
	snprintf(f->name, sizeof(f->name), "%s+0x%" PRIx64, path__base(path), vaddr);
}

bool symbolize__jit(const struct perfmap *pm, uint64_t addr, struct symbolized_frame *f)
{
	struct perfmap_entry e;

	if (!pm || perfmap__lookup(pm, addr, &e))
		return false;
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->has_symbol = true;
	f->is_python = perfmap__python_name(e.name, f->name, sizeof(f->name), f->file,
					    sizeof(f->file));
	if (!f->is_python) {
		copy_str(f->name, sizeof(f->name), e.name);
		copy_str(f->file, sizeof(f->file), "[jit]");
	}
	return true;
}

void symbolize__special(const char *path, uint64_t start, uint64_t addr,
			struct symbolized_frame *f)
{
	memset(f, 0, sizeof(*f));
	copy_str(f->file, sizeof(f->file), path);
	f->addr = addr - start;
	snprintf(f->name, sizeof(f->name), "%s+0x%" PRIx64, path, f->addr);
}
