/* SPDX-License-Identifier: MIT */
/*
 * A registry of counters: name -> value, in the order they were added. The
 * loader fills one at a time from every part it runs (the session's
 * snapshot), and the report's "counters:" line, -v's per-tick line and the
 * tests that parse that line all read the same one. Every loss has a
 * counter of its own (DESIGN.md invariant 4).
 *
 * A counter may have parts, printed in parentheses after it (unattributed
 * activities, by reason): "counters: a=1 b=3 (b_x=1 b_y=2) c=0".
 * Names are static strings; the registry copies none and allocates nothing.
 */
#ifndef GP_UTIL_COUNTERS_H
#define GP_UTIL_COUNTERS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define COUNTERS_MAX 192
/* Longer names are refused (they would not fit the line's buffer). */
#define COUNTER_NAME_MAX 48

struct counter {
	const char *name;
	__u64 value;
	bool part;  /* a part of the last counter before it that is not one */
};

struct counters {
	struct counter c[COUNTERS_MAX];
	unsigned n;
	unsigned refused; /* adds past COUNTERS_MAX or with too long a name: printed, never silent */
};

void counters__init(struct counters *c);
void counters__add(struct counters *c, const char *name, __u64 value);
/* A part of the counter added last that is not a part itself. */
void counters__add_part(struct counters *c, const char *name, __u64 value);
/* 0 and *ret_value for a counter (or part) of that name; -ENOENT. */
int counters__get(const struct counters *c, const char *name, __u64 *ret_value);
/*
 * "LABEL: name=value ...\n" in one write; a refused add shows as
 * " counters_refused=N" at the end.
 */
void counters__print(const struct counters *c, const char *label, FILE *f);
/*
 * The same with only what moved, for a person: a counter shown when it or
 * one of its parts is not 0, a part only when it is not 0; " none moved"
 * when nothing did.
 */
void counters__print_moved(const struct counters *c, const char *label, FILE *f);

#endif /* GP_UTIL_COUNTERS_H */
