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
/* Whether counter i (not a part) or one of its parts is not 0. */
static bool group_moved(const struct counters *c, unsigned i)
{
	if (c->c[i].value)
		return true;
	for (unsigned k = i + 1; k < c->n && c->c[k].part; k++)
		if (c->c[k].value)
			return true;
	return false;
}

void counters__print_moved(const struct counters *c, const char *label, FILE *f)
{
	char line[LINE_MAX_BYTES];
	size_t len = 0, shown = 0;

	len += snprintf(line, sizeof(line), "%.32s:", label);
	for (unsigned i = 0; i < c->n; i++) {
		unsigned k;
		bool open = false;

		if (c->c[i].part || !group_moved(c, i))
			continue;
		len += snprintf(line + len, sizeof(line) - len, " %s=%llu", c->c[i].name,
				(unsigned long long)c->c[i].value);
		for (k = i + 1; k < c->n && c->c[k].part; k++) {
			if (!c->c[k].value)
				continue;
			len += snprintf(line + len, sizeof(line) - len, " %s%s=%llu", open ? "" : "(",
					c->c[k].name, (unsigned long long)c->c[k].value);
			open = true;
		}
		if (open)
			len += snprintf(line + len, sizeof(line) - len, ")");
		shown++;
	}
	if (c->refused)
		len += snprintf(line + len, sizeof(line) - len, " counters_refused=%u", c->refused);
	else if (!shown)
		len += snprintf(line + len, sizeof(line) - len, " none moved");
	line[len++] = '\n';
	fwrite(line, 1, len, f);
}

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
