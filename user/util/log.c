/* SPDX-License-Identifier: MIT */
/* The loader's one log (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "user/util/log.h"

/*
 * The one place verbosity lives: libbpf's print callback takes no context,
 * so it cannot be a field of some object handed around. Written once at
 * start, read by every thread after.
 */
static bool log_verbose;

void log__set_verbose(bool verbose)
{
	__atomic_store_n(&log_verbose, verbose, __ATOMIC_RELAXED);
}

bool log__verbose(void)
{
	return __atomic_load_n(&log_verbose, __ATOMIC_RELAXED);
}

/*
 * One write(2) per line where it fits (stderr is unbuffered: a line printed
 * in parts is seen in parts by whoever reads the file meanwhile).
 */
void log__say(enum log_level level, const char *fmt, ...)
{
	char line[8192];
	size_t pre = sizeof(LOG_PREFIX) - 1;
	va_list ap;
	int n;

	if (level == LOG_DEBUG && !log__verbose())
		return;
	memcpy(line, LOG_PREFIX, pre);
	va_start(ap, fmt);
	n = vsnprintf(line + pre, sizeof(line) - pre - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(line) - pre - 1) {
		line[pre + n] = '\n';
		fwrite(line, 1, pre + n + 1, stderr);
		return;
	}
	va_start(ap, fmt); /* longer than the buffer: in parts, under stderr's lock */
	flockfile(stderr);
	fputs(LOG_PREFIX, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}
