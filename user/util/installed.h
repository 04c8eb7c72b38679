/* SPDX-License-Identifier: MIT */
/*
 * Files that ship with gpuprobe-bpf (the shim, the CRC helper), found the way
 * they are laid out: beside the executable or one level up (build/ and
 * build/static/), in ../lib/gpuprobe (an installed tree, wherever its
 * PREFIX), then GP_PREFIX/lib/gpuprobe.
 */
#ifndef GP_UTIL_INSTALLED_H
#define GP_UTIL_INSTALLED_H

#include <stddef.h>

/* The real path of name where access(mode) allows it, or -ENOENT. */
int installed__find(const char *name, int mode, char *buf, size_t len);

#endif
