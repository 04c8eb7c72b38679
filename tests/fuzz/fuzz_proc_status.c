/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the parsers of user/proc/ that read text a profiled process
 * influences: the NSpid and Uid lines of /proc/<pid>/status, /proc/<pid>/maps
 * lines (whose paths the process names) and mountinfo lines (whose mount
 * points it names). The input is used whole as a status text and as a
 * mount table, then line by line as maps and mountinfo lines.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "user/proc/proc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	pid_t inner = 0, outer = 0;
	struct proc_mount found;
	size_t pos = 0;

	if (proc__mountinfo_find(text, size, -1, 0, "overlay", &found) && found.dev != 0)
		__builtin_trap();
	uid_t uid;

	if (proc__parse_uid(text, size, &uid) == 0 && uid == (uid_t)-1)
		__builtin_trap();
	if (proc__parse_nspid(text, size, &inner, &outer) == 0) {
		if (inner <= 0 || outer <= 0)
			__builtin_trap();
	}
	while (pos < size) {
		const char *line = text + pos, *nl = memchr(line, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - line) + 1 : size - pos;
		struct proc_maps_line ml;
		struct proc_mount mo;

		if (proc__parse_maps_line(line, len, &ml) == 0) {
			if (ml.map.end < ml.map.start)
				__builtin_trap();
			if (ml.path_len && (ml.path < line || ml.path + ml.path_len > line + len))
				__builtin_trap();
			if (strlen(ml.map.perms) != 4)
				__builtin_trap();
		}
		if (proc__parse_mountinfo_line(line, len, &mo) == 0) {
			if (mo.id < 0 || !mo.type_len || mo.type < line || mo.type + mo.type_len > line + len)
				__builtin_trap();
		}
		pos += len;
	}
	return 0;
}
