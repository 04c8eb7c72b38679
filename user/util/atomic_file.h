/* SPDX-License-Identifier: MIT */
/*
 * A file written whole or not at all: written under a temporary name
 * beside it, then fsynced and renamed over it. A reader never sees half a
 * profile; a failure leaves whatever was there before.
 */
#ifndef GP_UTIL_ATOMIC_FILE_H
#define GP_UTIL_ATOMIC_FILE_H

#include <stddef.h>

/* Opens "path.tmp.XXXXXX" (its name into tmp), as readable as any file we create: an fd or -errno. */
int atomic_file__open(const char *path, char *tmp, size_t len);
/* Writes all of d to fd: 0 or -errno. */
int atomic_file__write(int fd, const void *d, size_t len);
/* fsync, close, rename tmp over path: 0, or -errno with tmp removed. Closes fd either way. */
int atomic_file__commit(int fd, const char *tmp, const char *path);
/* Closes fd and removes tmp. */
void atomic_file__abort(int fd, const char *tmp);

#endif /* GP_UTIL_ATOMIC_FILE_H */
