/* SPDX-License-Identifier: MIT */
/*
 * What the loader's per-file tables cost: for each ELF file named, the time
 * and memory of its CFI table and of its function symbols, loaded the way
 * the loader loads them. With --check, the CFI also built whole and every
 * row start compared between the two (building FDEs on demand must change
 * no answer). Usage: gpuprobe-table-cost [--check] FILE...
 * (e.g. libtorch_cuda.so, libcudnn*.so: see tools/gpu/tables.sh).
 */
#include "user/symbolize/elf_syms.h"
#include "user/unwind/cfi.h"
#include "user/util/clock.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1e6;
}

static double max_rss_mb(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0.0 : ru.ru_maxrss / 1024.0;
}

/* The CFI built whole beside the on-demand table t: cost, and any answer that differs. */
static void check(int fd, const struct cfi_table *t)
{
	struct cfi_table *whole = NULL;
	size_t diff, checked;
	double t0 = now_ms(), ms;
	int err = cfi_table__load_whole(fd, &whole);

	ms = now_ms() - t0;
	t0 = now_ms();
	diff = cfi_table__differences(t, whole, &checked);
	printf("  whole: %s rows=%zu cfi_mb=%.1f cfi_ms=%.0f; compared %zu lookups in %.0f ms: "
	       "%zu differ; on demand after them: rows=%zu cfi_mb=%.1f\n",
	       err ? strerror(-err) : "ok", cfi_table__rows(whole),
	       cfi_table__bytes(whole) / 1048576.0, ms, checked, now_ms() - t0, diff,
	       cfi_table__rows(t), cfi_table__bytes(t) / 1048576.0);
	cfi_table__free(whole);
}

static int one(const char *path, bool want_check)
{
	struct cfi_table *cfi = NULL;
	struct elf_syms *syms = NULL;
	struct stat st;
	double t0, t_cfi, t_sym;
	int fd, err_cfi, err_sym;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "gpuprobe-table-cost: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	t0 = now_ms();
	err_cfi = cfi_table__load(fd, &cfi);
	t_cfi = now_ms() - t0;
	t0 = now_ms();
	err_sym = elf_syms__load_fd(fd, &syms);
	t_sym = now_ms() - t0;
	printf("%-40s file_mb=%.1f cfi=%s fdes_on_demand=%zu rows=%zu cfi_mb=%.1f cfi_ms=%.0f "
	       "dropped=%zu syms=%s count=%zu syms_mb=%.1f syms_ms=%.0f max_rss_mb=%.1f\n",
	       strrchr(path, '/') ? strrchr(path, '/') + 1 : path, st.st_size / 1048576.0,
	       err_cfi ? strerror(-err_cfi) : "ok", cfi_table__fdes_on_demand(cfi),
	       cfi_table__rows(cfi), cfi_table__bytes(cfi) / 1048576.0, t_cfi,
	       cfi_table__dropped(cfi),
	       err_sym ? strerror(-err_sym) : "ok", elf_syms__count(syms),
	       elf_syms__bytes(syms) / 1048576.0, t_sym, max_rss_mb());
	if (want_check && !err_cfi)
		check(fd, cfi);
	close(fd);
	cfi_table__free(cfi);
	elf_syms__put(syms);
	return 0;
}

int main(int argc, char **argv)
{
	bool want_check = argc > 1 && !strcmp(argv[1], "--check");
	int i, rc = 0;

	if (argc < 2 + want_check || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 + want_check ? stderr : stdout,
			"usage: gpuprobe-table-cost [--check] FILE...\n"
			"  the CFI table and function symbols the loader would hold per file:\n"
			"  rows, MB, ms to build, and this process's peak RSS after each;\n"
			"  --check also builds the CFI whole and compares every row's answer\n"
			"example: gpuprobe-table-cost --check /usr/lib/x86_64-linux-gnu/libc.so.6\n");
		return argc < 2 + want_check ? 2 : 0;
	}
	for (i = 1 + want_check; i < argc; i++)
		rc |= one(argv[i], want_check);
	return rc;
}
