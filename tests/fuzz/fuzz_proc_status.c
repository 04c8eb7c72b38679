/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the parsers of user/proc/ that read text a profiled process
 * influences: the NSpid line of /proc/<pid>/status and /proc/<pid>/maps
 * lines (whose paths the process names). The input is used whole as a status
 * text, then line by line as maps lines.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "user/proc/proc_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	pid_t inner = 0, outer = 0;
	size_t pos = 0;

	if (proc__parse_nspid(text, size, &inner, &outer) == 0) {
		if (inner <= 0 || outer <= 0)
			__builtin_trap();
	}
	while (pos < size) {
		const char *line = text + pos, *nl = memchr(line, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - line) + 1 : size - pos;
		struct proc_maps_line ml;

		if (proc__parse_maps_line(line, len, &ml) == 0) {
			if (ml.map.end < ml.map.start)
				__builtin_trap();
			if (ml.path_len && (ml.path < line || ml.path + ml.path_len > line + len))
				__builtin_trap();
			if (strlen(ml.map.perms) != 4)
				__builtin_trap();
		}
		pos += len;
	}
	return 0;
}
