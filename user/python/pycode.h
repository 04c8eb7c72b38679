/* SPDX-License-Identifier: MIT */
/*
 * CPython code objects read out of another process: (code address,
 * instruction) from a frame walk -> qualified name, file and line. Every
 * byte comes from memory the target controls: objects are checked to be of
 * the type they claim (ob_type == &PyCode_Type, &PyUnicode_Type,
 * &PyBytes_Type), strings and line tables are bounded, and the decoders
 * below are pure functions over untrusted bytes (fuzzed by
 * tests/fuzz/fuzz_pycode.c).
 */
#ifndef GP_PYTHON_PYCODE_H
#define GP_PYTHON_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PYCODE_NAME_MAX 1024          /* UTF-8 bytes of a qualname */
#define PYCODE_FILE_MAX 4096          /* UTF-8 bytes of a file name */
#define PYCODE_LINETABLE_MAX (64u << 10)
#define PYCODE_CACHE_MAX 65536        /* code objects per process */
#define PYCODE_CACHE_BYTES (128u << 20) /* their names and line tables, per process */

enum pycode_linetable_format {
	PYCODE_LINETABLE_310 = 1, /* 3.10 co_linetable: (byte delta, line delta) pairs */
	PYCODE_LINETABLE_311 = 2, /* 3.11+ location table (InternalDocs/locations.md) */
};

/* Where a version keeps what we read in code and string objects. Filled by
 * pyruntime__code_layout. */
struct pycode_layout {
	uint32_t version;          /* PY_VERSION_HEX */
	uint32_t ob_type;          /* PyObject.ob_type */
	uint32_t ob_size;          /* PyVarObject.ob_size */
	uint32_t co_name;
	uint32_t co_qualname;      /* UINT32_MAX before 3.11: co_name is used */
	uint32_t co_filename;
	uint32_t co_firstlineno;   /* int */
	uint32_t co_linetable;     /* bytes */
	uint32_t co_code_adaptive; /* 3.11+: bytecode inline in the code object */
	uint32_t bytes_ob_size;
	uint32_t bytes_ob_sval;
	uint32_t unicode_length;
	uint32_t unicode_state;
	uint32_t unicode_ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data */
	uint32_t unicode_compact_size; /* sizeof(PyCompactUnicodeObject): other kinds */
	enum pycode_linetable_format linetable_format;
	uint64_t code_type;        /* target addresses of the type objects */
	uint64_t unicode_type;
	uint64_t bytes_type;
};

/* One resolved frame. Strings belong to the cache (see lookup). */
struct pycode_frame {
	const char *qualname;
	const char *filename;
	int line;        /* -1: the instruction has no line */
	int firstlineno;
};

struct pycode_cache;
struct bounded;
struct mem_share;

/* A cache of the code objects of one process, read through b's bounded calls (kept). */
int pycode_cache__new(struct bounded *b, pid_t pid, const struct pycode_layout *layout,
		      struct pycode_cache **ret_cache);
void pycode_cache__destroy(struct pycode_cache *c);
/* Its bound on names and line tables held (PYCODE_CACHE_BYTES; tests set less). */
void pycode_cache__set_bytes_max(struct pycode_cache *c, size_t bytes_max);
/*
 * Joins the bound every process's cache shares (kept; the cache leaves it
 * when destroyed): past it, a cache over its share is flushed, as when
 * full, rather than grow (mem_share.h).
 */
void pycode_cache__set_share(struct pycode_cache *c, struct mem_share *share);
/* The names and line tables it holds, bytes. */
size_t pycode_cache__bytes(const struct pycode_cache *c);
/*
 * Between a hold and its release (they nest; NULL is none), the strings
 * lookups hand out stay valid whatever the lookups in between do: a cache
 * that fills meanwhile sets its entries aside, freed at the last release.
 * A caller keeping several frames' names (a stack being named) holds.
 */
void pycode_cache__hold(struct pycode_cache *c);
void pycode_cache__release(struct pycode_cache *c);
/*
 * Resolves code (a gp_py_frame.code without its flag bits) at instr (the
 * gp_py_frame.instr of the same record). Each code object is read once; the
 * strings stay valid until the cache is destroyed or flushed (or, held,
 * until the release): it is flushed whole when PYCODE_CACHE_MAX objects,
 * or PYCODE_CACHE_BYTES of names and line tables, are held and a new one
 * arrives, or past its share of the bound all caches share.
 * -EFAULT: unreadable; -EINVAL: not a code object or malformed fields.
 */
int pycode_cache__lookup(struct pycode_cache *c, uint64_t code, uint64_t instr,
			 struct pycode_frame *ret_frame);
/*
 * The same for a stack of epoch (the caller's count of pycode_cache__check
 * calls that found objects replaced): an object replaced since answers with
 * what it was then while that is kept; -ESTALE when it is not.
 */
int pycode_cache__lookup_at(struct pycode_cache *c, uint64_t code, uint64_t instr, uint32_t epoch,
			    struct pycode_frame *ret_frame);
/*
 * Reads again, in two gathered reads, what the names of up to max cached
 * objects hang on (from where the last call stopped): an object freed and
 * another allocated at its address, or one gone, is found replaced. Each
 * replaced object's entry is kept for lookups at epochs before next_epoch,
 * and the object is read afresh on its next lookup. *ret_replaced: how many;
 * ret_codes (room for max, may be NULL): their addresses.
 */
int pycode_cache__check(struct pycode_cache *c, uint32_t next_epoch, size_t max,
			uint64_t *ret_codes, size_t *ret_replaced);
/* Code objects read (misses) and found in the cache (hits). */
void pycode_cache__stats(const struct pycode_cache *c, unsigned long *ret_hits,
			 unsigned long *ret_misses);

/* ------------------------------------------------------------ decoders */

/*
 * The line of byte offset addrq in a line table, as PyCode_Addr2Line
 * computes it: firstlineno when addrq < 0, -1 when the instruction has no
 * line. -ENOENT when addrq lies past the table; -EINVAL when the table is
 * malformed.
 */
int pycode__line_310(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq,
		     int *ret_line);
int pycode__line_311(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq,
		     int *ret_line);

/*
 * The characters of a compact str (kind 1, 2 or 4 bytes per character; ascii
 * says every kind-1 byte must be < 0x80) as NUL-terminated UTF-8 in out.
 * Lone surrogates, code points above U+10FFFF and NULs become U+FFFD. Output
 * that does not fit is cut at a character boundary. -EINVAL: bad kind, or a
 * non-ASCII byte in an ASCII string.
 */
int pycode__unicode_to_utf8(const uint8_t *data, size_t nchars, unsigned kind, bool ascii,
			    char *out, size_t cap, size_t *ret_len);

#endif /* GP_PYTHON_PYCODE_H */
