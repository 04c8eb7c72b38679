/* SPDX-License-Identifier: MIT */
/* libbpf's own messages (libbpf_log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "user/probe/libbpf_log.h"
#include "user/util/log.h"

/*
 * libbpf's print callback takes no context, so quiet is a second callback
 * swapped in, not a flag kept here: the only state is libbpf's own pointer.
 * Only the main thread attaches, so only it swaps them.
 */
__attribute__((format(printf, 2, 0)))
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN || log__verbose() ? vfprintf(stderr, fmt, args) : 0;
}

/* While a failure is expected: libbpf's lines only with -v. */
__attribute__((format(printf, 2, 0)))
static int print_libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return log__verbose() ? vfprintf(stderr, fmt, args) : 0;
}

void libbpf_log__install(void)
{
	libbpf_set_print(print_libbpf);
}

void libbpf_log__quiet(bool quiet)
{
	libbpf_set_print(quiet ? print_libbpf_quiet : print_libbpf);
}
