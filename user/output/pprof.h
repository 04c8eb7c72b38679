/* SPDX-License-Identifier: MIT */
/*
 * A writer for pprof's profile.proto (github.com/google/pprof/proto/profile.proto),
 * gzip-compressed as `go tool pprof` expects. Strings, functions, mappings and
 * locations are interned by content; samples with the same stack and labels
 * are merged by summing their values, so the profile's size follows the number
 * of distinct stacks, not the number of events.
 */
#ifndef GP_OUTPUT_PPROF_H
#define GP_OUTPUT_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof;

/* One entry of Location.line: a (possibly inlined) function at a line. */
struct pprof_line {
	uint64_t function_id;
	int64_t line;
};

/* A sample label: a string one when str != NULL, else numeric (num, num_unit). */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit; /* may be NULL */
};

struct pprof_mapping {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	const char *filename; /* may be NULL */
	const char *build_id; /* may be NULL */
	bool has_functions;   /* locations in it carry symbolized lines */
};

struct pprof *pprof__new(void);
void pprof__destroy(struct pprof *p);

/* Sample types must all be added before the first sample. */
int pprof__add_sample_type(struct pprof *p, const char *type, const char *unit);
int pprof__set_default_sample_type(struct pprof *p, const char *type);
void pprof__set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos);
int pprof__add_comment(struct pprof *p, const char *comment);

int pprof__intern_string(struct pprof *p, const char *s, uint64_t *ret_index);
int pprof__add_function(struct pprof *p, const char *name, const char *system_name,
			const char *filename, int64_t start_line, uint64_t *ret_id);
int pprof__add_mapping(struct pprof *p, const struct pprof_mapping *m,
		       uint64_t *ret_id);
/*
 * The mapping written first, which pprof's readers take for the main binary
 * (its file and build id head `go tool pprof`'s output); ids are unchanged.
 * Without it mappings are written in the order they were added.
 */
void pprof__set_main_mapping(struct pprof *p, uint64_t mapping_id);
/* mapping_id 0 means "no mapping". */
int pprof__add_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			const struct pprof_line *lines, size_t n_lines,
			uint64_t *ret_id);
/* values has one entry per sample type; locations are leaf first. */
int pprof__add_sample(struct pprof *p, const uint64_t *loc_ids, size_t n_locs,
		      const int64_t *values, const struct pprof_label *labels,
		      size_t n_labels);

size_t pprof__sample_count(const struct pprof *p);

/* Gzip-compressed profile in a malloc'ed buffer the caller frees. */
int pprof__write_buf(const struct pprof *p, uint8_t **ret_buf, size_t *ret_len);
/* Temp file in the same directory, fsync, rename: never a truncated profile. */
int pprof__write_file(const struct pprof *p, const char *path);

#endif /* GP_OUTPUT_PPROF_H */
