/* SPDX-License-Identifier: MIT */
/*
 * Locating libcupti inside a process we were injected into, without relying
 * on LD_LIBRARY_PATH: an explicit GPUPROBE_CUPTI, a copy already loaded, the
 * dynamic linker's own search, CUDA toolkit directories, and the pip wheels
 * next to any loaded object under site-packages.
 */
#ifndef GP_NVIDIA_CUPTI_FIND_H
#define GP_NVIDIA_CUPTI_FIND_H

#include <stddef.h>

/* 0 with a dlopen handle and where it came from; -ENOENT when nowhere. */
int cupti_find__open(void **ret_handle, char *ret_where, size_t len);

#endif /* GP_NVIDIA_CUPTI_FIND_H */
