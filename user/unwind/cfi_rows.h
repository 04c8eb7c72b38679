/* SPDX-License-Identifier: MIT */
/*
 * The rows of CFI rules a CFA program yields: ranges of code addresses,
 * each with one rule (cfi.h's struct cfi_rule) or a gap, sorted by address,
 * and the builder that emits them. A row is 8 bytes: a 32-bit address
 * relative to the lowest FDE and a 32-bit index into a table of distinct
 * rules (a file has a few thousand distinct rules and millions of rows).
 * What the table the unwinder asks (cfi.c) and the FDEs built on demand
 * (cfi_lazy.c) are made of. Not for other users: cfi.h is the interface.
 */
#ifndef GP_UNWIND_CFI_ROWS_H
#define GP_UNWIND_CFI_ROWS_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include "user/unwind/cfi.h"

#define CFI_MAX_RULES (1u << 20)   /* distinct rules per file */
#define CFI_GAP UINT32_MAX         /* rule index of "no FDE here" */

struct cfi_rows {
	__u64 base;          /* vaddr of row offset 0 */
	__u32 *addrs;        /* row start, relative to base, strictly increasing */
	__u32 *rule_idx;     /* into rules[], or CFI_GAP */
	size_t n_rows;
	struct cfi_rule *rules;
	size_t n_rules;
	size_t dropped;      /* FDEs dropped as malformed, unsupported or past a cap */
};

/* Emits rows into rows; zero it, then set rows, max_rows and work_left. */
struct cfi_builder {
	struct cfi_rows *rows;
	size_t cap_rows, max_rows;
	size_t cap_rules;
	__u32 *hash;          /* rule index + 1; 0 = empty */
	size_t hash_cap;      /* power of two */
	__u64 start;          /* rows of the current FDE start no lower */
	__u64 work_left;      /* CFA instructions we still agree to run */
};

/* r's index among the distinct rules, added if new. 0, -E2BIG past CFI_MAX_RULES, -ENOMEM. */
int cfi_builder__intern(struct cfi_builder *b, const struct cfi_rule *r, __u32 *ret_idx);
/*
 * Rule idx (or CFI_GAP) from addr on. Rows arrive in address order; one at
 * the address of the last row replaces it (the later instruction wins), one
 * equal to the last rule is merged into it. Past max_rows -E2BIG, but a gap
 * may use two reserved slots so that a table cut short still ends with one.
 * addr is raised to start, and must lie within 4 GiB above base.
 */
int cfi_builder__emit(struct cfi_builder *b, __u64 addr, __u32 idx);
/* Frees the builder's own memory (not its rows). */
void cfi_builder__fini(struct cfi_builder *b);

/* Gives back what the builder reserved past the rows made. */
void cfi_rows__shrink(struct cfi_rows *t);
/* The rule at vaddr: 0, or -ENOENT in a gap or outside every row. */
int cfi_rows__find(const struct cfi_rows *t, __u64 vaddr, struct cfi_rule *ret_rule);
/* Memory held by the arrays (not the struct). */
size_t cfi_rows__array_bytes(const struct cfi_rows *t);
/* Frees the arrays and zeroes t. */
void cfi_rows__fini(struct cfi_rows *t);
/* An allocated struct cfi_rows: the arrays, then itself. NULL-safe. */
void cfi_rows__free(struct cfi_rows *t);

#endif /* GP_UNWIND_CFI_ROWS_H */
