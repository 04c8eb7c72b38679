/* SPDX-License-Identifier: MIT */
/*
 * CFI tables shared by every process that maps the same file: one load per
 * file (device, inode, size, mtime), bounded in files and bytes; a replaced
 * file is a new entry. Entries are refcounted: a table stays valid while a
 * process's mapping holds it. The bounds count every table, held or not,
 * with what it builds on demand (cfi_table__share): room is made by
 * dropping tables no process holds, and when held tables fill it a new
 * file is refused (-E2BIG, counted, tried again when asked again) unless
 * it fits its share of the bound and twice the bound in all; a held table
 * past its share of the bytes empties its built FDEs.
 */
#ifndef GP_UNWIND_CFI_CACHE_H
#define GP_UNWIND_CFI_CACHE_H

#include <stddef.h>
#include "user/unwind/cfi.h"

struct cfi_cache;
struct cfi_ref; /* a held table */

struct cfi_cache *cfi_cache__new(size_t max_files, size_t max_bytes);
/* Entries still referenced outlive the cache's own reference. NULL-safe. */
void cfi_cache__destroy(struct cfi_cache *c);
/*
 * The table of the file open at fd, loaded on first use. A file that failed
 * to load is remembered (-ENOENT etc. again without re-reading it); one
 * refused for room (-E2BIG) is not.
 */
int cfi_cache__get_fd(struct cfi_cache *c, int fd, struct cfi_ref **ret_ref);
const struct cfi_table *cfi_ref__table(const struct cfi_ref *r);
void cfi_ref__put(struct cfi_ref *r); /* NULL-safe */
/* Tables held and their bytes, for the counters line. */
void cfi_cache__stats(const struct cfi_cache *c, size_t *ret_files, size_t *ret_bytes);
/* Loads refused: every slot held, or the bytes. */
unsigned long cfi_cache__refused(const struct cfi_cache *c);

#endif
