/* SPDX-License-Identifier: MIT */
/*
 * The loader's one log. Every line it says on stderr, apart from the report
 * lines (counters:, loader:, tables:, the kernel table) and libbpf's own,
 * goes through here: here it gets the program's "gpuprobe-bpf: " prefix and
 * its newline. Whether -v's lines are said is the caller's -v (log_debug).
 *
 * A line is written in one write(2) (up to 8 KiB), so lines from the
 * loader's threads never interleave and a reader of the file never sees
 * half a line. Helpers return -errno and leave the saying to the layer
 * that knows the context (STYLE.md).
 */
#ifndef GP_UTIL_LOG_H
#define GP_UTIL_LOG_H

#include <stdbool.h>

#define LOG_PREFIX "gpuprobe-bpf: "

enum log_level {
	LOG_ERROR, /* the run, or the part of it named, failed */
	LOG_WARN,  /* the profile misses something; said once per cause */
	LOG_INFO,  /* what the user asked for, or should know, happened */
	LOG_DEBUG, /* -v: what the loader does, as it does it (log_debug) */
};

/* One line: the prefix, the message (no newline of its own), a newline. */
void log__say(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log__say(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log__say(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log__say(LOG_INFO, __VA_ARGS__)
/*
 * A -v line: said when verbose, the caller's -v (the session's options, or
 * what the object that logs was made with: no verbosity is kept here).
 */
#define log_debug(verbose, ...) do { if (verbose) log__say(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif /* GP_UTIL_LOG_H */
