/* SPDX-License-Identifier: MIT */
/* The loader's one log (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "user/util/log.h"

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
