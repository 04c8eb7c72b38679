/* SPDX-License-Identifier: MIT */
/* A registry of counters (counters.h). */
#include <errno.h>
#include <string.h>
#include "user/util/counters.h"

/* What one counter takes on the line at most: " (" name "=" 20 digits ")". */
#define COUNTER_TEXT_MAX (COUNTER_NAME_MAX + 25)
#define LINE_MAX_BYTES (64 + (COUNTERS_MAX + 1) * COUNTER_TEXT_MAX)

void counters__init(struct counters *c)
{
	c->n = 0;
	c->refused = 0;
}

static void add(struct counters *c, const char *name, __u64 value, bool part)
{
	if (c->n == COUNTERS_MAX || strlen(name) > COUNTER_NAME_MAX) {
		c->refused++;
		return;
	}
	c->c[c->n++] = (struct counter){ .name = name, .value = value, .part = part };
}

void counters__add(struct counters *c, const char *name, __u64 value)
{
	add(c, name, value, false);
}

void counters__add_part(struct counters *c, const char *name, __u64 value)
{
	add(c, name, value, true);
}

int counters__get(const struct counters *c, const char *name, __u64 *ret_value)
{
	for (unsigned i = 0; i < c->n; i++) {
		if (!strcmp(c->c[i].name, name)) {
			*ret_value = c->c[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * One write for the line (stderr is unbuffered): a test waiting on the file
 * never reads half of it. The buffer holds the longest line there can be.
 */
void counters__print(const struct counters *c, const char *label, FILE *f)
{
	char line[LINE_MAX_BYTES];
	size_t len = 0;

	len += snprintf(line, sizeof(line), "%.32s:", label);
	for (unsigned i = 0; i < c->n; i++) {
		const struct counter *k = &c->c[i];
		bool opens = k->part && (i == 0 || !c->c[i - 1].part);
		bool closes = k->part && (i + 1 == c->n || !c->c[i + 1].part);

		len += snprintf(line + len, sizeof(line) - len, " %s%s=%llu%s", opens ? "(" : "",
				k->name, (unsigned long long)k->value, closes ? ")" : "");
	}
	if (c->refused)
		len += snprintf(line + len, sizeof(line) - len, " counters_refused=%u", c->refused);
	line[len++] = '\n';
	fwrite(line, 1, len, f);
}
