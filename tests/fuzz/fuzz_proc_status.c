/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the parsers of user/proc/ that read text a profiled process
 * influences: the NSpid and Uid lines of /proc/<pid>/status, /proc/<pid>/maps
 * lines (whose paths the process names), mountinfo lines (whose mount
 * points it names) and the cgroup file (whose cgroup names it chooses). The
 * input is used whole as a status text, a mount table and a cgroup file,
 * then line by line as maps and mountinfo lines.
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

	const char *v2;
	size_t v2_len;
	uid_t uid;

	/* No id, no device: any overlay, and an overlay it is. */
	if (proc__mountinfo_find(text, size, -1, 0, "overlay", &found) &&
	    (found.type_len != 7 || memcmp(found.type, "overlay", 7) || found.type < text ||
	     found.type + found.type_len > text + size))
		__builtin_trap();
	if (proc__cgroup_v2_line(text, size, &v2, &v2_len) == 0 &&
	    (!v2_len || *v2 != '/' || v2 < text || v2 + v2_len > text + size || memchr(v2, '\n', v2_len)))
		__builtin_trap();

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
			if (!mo.point_len || mo.point < line || mo.point + mo.point_len > mo.type)
				__builtin_trap();
		}
		pos += len;
	}
	return 0;
}
