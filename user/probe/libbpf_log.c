/* SPDX-License-Identifier: MIT */
/* libbpf's own messages (libbpf_log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "user/probe/libbpf_log.h"
#include "user/util/log.h"

/*
 * libbpf's print callback takes no context: the flag it reads has to live
 * here. Only the main thread attaches, so only it sets the flag.
 */
static bool libbpf_quiet;

__attribute__((format(printf, 2, 0)))
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	bool verbose = log__verbose();

	if ((level == LIBBPF_DEBUG || libbpf_quiet) && !verbose)
		return 0;
	if (level == LIBBPF_WARN || verbose)
		return vfprintf(stderr, fmt, args);
	return 0;
}

void libbpf_log__install(void)
{
	libbpf_set_print(print_libbpf);
}

void libbpf_log__quiet(bool quiet)
{
	libbpf_quiet = quiet;
}
