/* SPDX-License-Identifier: MIT */
/* libbpf's own messages (libbpf_log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "user/probe/libbpf_log.h"

/*
 * libbpf's print callback takes no context, so what is said is which
 * callback is installed: -v's (everything), the default's (warnings), or
 * quiet's (nothing, while a failure is expected). The only state is
 * libbpf's own pointer, which also tells quiet whether -v was given. Only
 * the main thread attaches, so only it swaps them.
 */
__attribute__((format(printf, 2, 0)))
static int print_all(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

__attribute__((format(printf, 2, 0)))
static int print_warnings(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

__attribute__((format(printf, 2, 0)))
static int print_nothing(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level, (void)fmt, (void)args;
	return 0;
}

void libbpf_log__install(bool verbose)
{
	libbpf_set_print(verbose ? print_all : print_warnings);
}

void libbpf_log__quiet(bool quiet)
{
	libbpf_print_fn_t was = libbpf_set_print(print_nothing);

	if (was == print_all) /* -v: everything, always */
		libbpf_set_print(print_all);
	else
		libbpf_set_print(quiet ? print_nothing : print_warnings);
}
