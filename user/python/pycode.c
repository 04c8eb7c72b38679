/* SPDX-License-Identifier: MIT */
/*
 * Code objects of another process, read once each and kept per process.
 *
 * A code object is read in three steps: its fixed fields (one read), the
 * two strings (name or qualname, filename) and the line table (bytes).
 * Each pointer must lead to an object whose ob_type is the type the
 * runtime's own symbol names, so a stale or forged pointer fails instead of
 * being decoded as whatever it happens to point at. Lines are computed per
 * lookup from the cached table, as PyCode_Addr2Line does, so a code object
 * costs reads only the first time it is seen.
 *
 * A code object freed and another allocated at its address would be
 * answered from the cache: pycode_cache__check reads again what each
 * cached object's names hang on (the pointers, the first line, the name's
 * first characters) and keeps a replaced object's old entry for the stacks
 * of before, by epoch (pycode_cache__lookup_at).
 */
#include "user/python/pycode.h"
#include "user/python/pymem.h"
#include "user/util/mem_share.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PYCODE_HEADER_MAX 512 /* bytes of a code object read at once */
#define PYCODE_UNICODE_HEADER_MAX 128
#define PYCODE_SIG_DATA 32     /* bytes of a name's characters in its signature */
#define PYCODE_OLD_MAX 1024    /* replaced objects' entries kept for older stacks */
/* Flushes while held (pycode_cache__hold): one a lookup at most, a stack has 64 Python frames. */
#define PYCODE_RETIRED_MAX 128
#define PYCODE_FIRST_CAP 64 /* slots of a new (or newly emptied while held) table */

/* ---------------------------------------------------------------- remote objects */

struct pycode_entry {
	uint64_t code; /* 0: empty slot */
	char *qualname;
	char *filename;
	uint8_t *linetable;
	uint32_t linetable_len;
	int firstlineno;
	uint64_t code_start; /* 3.11+: first code unit */
	uint64_t code_units; /* 3.11+: Py_SIZE(code) */
	/* What the names hang on, as read: checked again by pycode_cache__check. */
	uint64_t name_ptr, file_ptr, table_ptr;
	uint64_t name_sig;   /* str_sig of the name object */
	uint32_t name_sig_len; /* bytes of it the signature covers */
	uint32_t epoch_from; /* valid for lookups at this epoch and later */
	uint32_t epoch_until; /* old entries: and before this one */
};

struct pycode_cache {
	struct bounded *b;  /* the reads' bounded calls */
	pid_t pid;
	struct pycode_layout l;
	size_t header_len; /* bytes of a code object holding every field we read */
	struct pycode_entry *slots;
	size_t cap;   /* power of two */
	size_t count;
	/* held: what the slots' entries hold (entry__bytes), at most bytes_max; counted against
	   the bound all processes' caches share, once joined */
	struct mem_hold hold;
	size_t bytes_max; /* PYCODE_CACHE_BYTES (tests set less) */
	unsigned holds; /* pycode_cache__hold calls not yet released */
	struct retired {
		struct pycode_entry *slots; /* a flushed table, freed at the last release */
		size_t cap;
	} retired[PYCODE_RETIRED_MAX];
	size_t nretired;
	unsigned long hits, misses;
	struct pycode_entry *old;  /* replaced objects' entries, a ring of PYCODE_OLD_MAX */
	size_t old_n, old_next;
	size_t check_cursor;       /* where the next check starts among the slots */
	unsigned long replaced;
};

static uint64_t rd64(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static bool layout__fits(const struct pycode_layout *l)
{
	uint32_t offs[] = { l->ob_type, l->ob_size, l->co_name, l->co_filename,
			    l->co_firstlineno, l->co_linetable };
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] > PYCODE_HEADER_MAX - 8)
			return false;
	if (l->co_qualname != UINT32_MAX && l->co_qualname > PYCODE_HEADER_MAX - 8)
		return false;
	if (l->co_code_adaptive > PYCODE_HEADER_MAX)
		return false;
	if (l->unicode_compact_size > PYCODE_UNICODE_HEADER_MAX ||
	    l->unicode_ascii_size > l->unicode_compact_size ||
	    l->unicode_state + 4 > l->unicode_ascii_size ||
	    l->unicode_length + 8 > l->unicode_ascii_size || l->ob_type + 8 > l->unicode_ascii_size)
		return false;
	if (l->bytes_ob_size + 8 > l->bytes_ob_sval || l->bytes_ob_sval > 64)
		return false;
	return l->linetable_format == PYCODE_LINETABLE_310 ||
	       l->linetable_format == PYCODE_LINETABLE_311;
}

static size_t layout__header_len(const struct pycode_layout *l)
{
	uint32_t offs[] = { l->ob_type, l->ob_size, l->co_name, l->co_filename,
			    l->co_firstlineno, l->co_linetable,
			    l->co_qualname != UINT32_MAX ? l->co_qualname : 0 };
	uint32_t m = 0;
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] > m)
			m = offs[i];
	return m + 8;
}

/*
 * A str object's signature: its length, kind and first characters (state's
 * interning bits left out: they change on their own). Never 0.
 */
static uint64_t str_sig(int64_t length, uint32_t state, const uint8_t *data, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = (h ^ (uint64_t)length) * 0x100000001b3ull;
	h = (h ^ ((state >> 2) & 0x1f)) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ data[i]) * 0x100000001b3ull;
	return h | 1;
}

/* str_sig of the first len bytes of a str object as read; 0 when they do not hold it. */
static uint64_t str_sig_of(const struct pycode_layout *l, const uint8_t *obj, size_t len)
{
	uint32_t state;
	int64_t length;
	size_t off, n;
	unsigned kind;

	if (len < l->unicode_ascii_size)
		return 0;
	memcpy(&state, obj + l->unicode_state, 4);
	memcpy(&length, obj + l->unicode_length, 8);
	kind = (state >> 2) & 7;
	off = (state >> 6) & 1 ? l->unicode_ascii_size : l->unicode_compact_size;
	if (length < 0 || length > (1 << 24))
		return 0;
	n = (size_t)length * kind < PYCODE_SIG_DATA ? (size_t)length * kind : PYCODE_SIG_DATA;
	if (off + n > len)
		return 0;
	return str_sig(length, state, obj + off, n);
}

/* Reads a str object into a malloc'ed UTF-8 string of at most cap - 1 bytes. */
static int pycode__read_str(const struct pycode_cache *c, uint64_t addr, size_t cap, char **ret,
			    uint64_t *ret_sig, uint32_t *ret_sig_len)
{
	const struct pycode_layout *l = &c->l;
	uint8_t hdr[PYCODE_UNICODE_HEADER_MAX];
	uint8_t *data;
	uint32_t state;
	int64_t length;
	unsigned kind;
	bool ascii;
	size_t n, len;
	char *out;
	int err;

	if (!addr || (addr & 7))
		return -EINVAL;
	err = pymem__read(c->b, c->pid, addr, hdr, l->unicode_compact_size);
	if (err)
		return err;
	if (l->unicode_type && rd64(hdr, l->ob_type) != l->unicode_type)
		return -EINVAL;
	memcpy(&state, hdr + l->unicode_state, 4);
	memcpy(&length, hdr + l->unicode_length, 8);
	kind = (state >> 2) & 7;
	ascii = (state >> 6) & 1;
	if (!((state >> 5) & 1) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL; /* not compact: never the case for code names */
	/* Each character takes at least one output byte: read no more than fits. */
	n = (uint64_t)length < cap ? (size_t)length : cap;
	data = malloc(n * kind + 1);
	out = malloc(cap);
	if (!data || !out) {
		err = -ENOMEM;
		goto out_free;
	}
	err = pymem__read(c->b, c->pid,
			  addr + (ascii ? l->unicode_ascii_size : l->unicode_compact_size), data,
			  n * kind);
	if (!err)
		err = pycode__unicode_to_utf8(data, n, kind, ascii, out, cap, &len);
	if (!err && ret_sig) {
		size_t sig_n = n * kind < PYCODE_SIG_DATA ? n * kind : PYCODE_SIG_DATA;

		*ret_sig = str_sig(length, state, data, sig_n);
		*ret_sig_len = (ascii ? l->unicode_ascii_size : l->unicode_compact_size) + (uint32_t)sig_n;
	}
	if (!err) {
		/* Kept in what it takes, not in cap: 65536 entries a process */
		char *fit = realloc(out, len + 1);

		*ret = fit ? fit : out;
		out = NULL;
	}
out_free:
	free(data);
	free(out);
	return err;
}

static int pycode__read_bytes(const struct pycode_cache *c, uint64_t addr, uint8_t **ret,
			      uint32_t *ret_len)
{
	const struct pycode_layout *l = &c->l;
	uint8_t hdr[64];
	int64_t size;
	uint8_t *buf;
	int err;

	if (!addr || (addr & 7))
		return -EINVAL;
	err = pymem__read(c->b, c->pid, addr, hdr, l->bytes_ob_sval);
	if (err)
		return err;
	if (l->bytes_type && rd64(hdr, l->ob_type) != l->bytes_type)
		return -EINVAL;
	memcpy(&size, hdr + l->bytes_ob_size, 8);
	if (size < 0 || size > PYCODE_LINETABLE_MAX)
		return -E2BIG;
	buf = malloc(size ? (size_t)size : 1);
	if (!buf)
		return -ENOMEM;
	err = pymem__read(c->b, c->pid, addr + l->bytes_ob_sval, buf, (size_t)size);
	if (err) {
		free(buf);
		return err;
	}
	*ret = buf;
	*ret_len = (uint32_t)size;
	return 0;
}

/* Heap bytes an entry holds: its names and line table. */
static size_t entry__bytes(const struct pycode_entry *e)
{
	return (e->qualname ? strlen(e->qualname) + 1 : 0) +
	       (e->filename ? strlen(e->filename) + 1 : 0) + e->linetable_len;
}

static void entry__clear(struct pycode_entry *e)
{
	free(e->qualname);
	free(e->filename);
	free(e->linetable);
	memset(e, 0, sizeof(*e));
}

static int pycode__read(const struct pycode_cache *c, uint64_t code, struct pycode_entry *ret)
{
	const struct pycode_layout *l = &c->l;
	struct pycode_entry e = { .code = code };
	uint8_t hdr[PYCODE_HEADER_MAX];
	uint32_t name_off = l->co_qualname != UINT32_MAX ? l->co_qualname : l->co_name;
	int64_t units;
	int err;

	if (!code || (code & 7))
		return -EINVAL;
	err = pymem__read(c->b, c->pid, code, hdr, c->header_len);
	if (err)
		return err;
	if (l->code_type && rd64(hdr, l->ob_type) != l->code_type)
		return -EINVAL;
	memcpy(&e.firstlineno, hdr + l->co_firstlineno, sizeof(int));
	if (l->version >= 0x030b0000) {
		memcpy(&units, hdr + l->ob_size, 8);
		if (units <= 0 || units > (1 << 24))
			return -EINVAL;
		e.code_units = (uint64_t)units;
		e.code_start = code + l->co_code_adaptive;
	}
	e.name_ptr = rd64(hdr, name_off);
	e.file_ptr = rd64(hdr, l->co_filename);
	e.table_ptr = rd64(hdr, l->co_linetable);
	err = pycode__read_str(c, e.name_ptr, PYCODE_NAME_MAX, &e.qualname, &e.name_sig,
			       &e.name_sig_len);
	if (!err)
		err = pycode__read_str(c, e.file_ptr, PYCODE_FILE_MAX, &e.filename, NULL, NULL);
	if (!err)
		err = pycode__read_bytes(c, e.table_ptr, &e.linetable, &e.linetable_len);
	if (err) {
		entry__clear(&e);
		return err;
	}
	*ret = e;
	return 0;
}

/* ---------------------------------------------------------------- cache */

int pycode_cache__new(struct bounded *b, pid_t pid, const struct pycode_layout *layout,
		      struct pycode_cache **ret_cache)
{
	struct pycode_cache *c;

	if (!b || pid <= 0 || !layout || !ret_cache || !layout__fits(layout))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cap = PYCODE_FIRST_CAP;
	c->slots = calloc(c->cap, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return -ENOMEM;
	}
	c->b = b;
	c->pid = pid;
	c->l = *layout;
	c->header_len = layout__header_len(layout);
	c->bytes_max = PYCODE_CACHE_BYTES;
	*ret_cache = c;
	return 0;
}

/* Frees every entry of a table of slots. */
static void slots__clear(struct pycode_entry *slots, size_t cap)
{
	for (size_t i = 0; i < cap; i++)
		if (slots[i].code)
			entry__clear(&slots[i]);
}

/* Frees a table of slots and every entry in it. */
static void slots__free(struct pycode_entry *slots, size_t cap)
{
	slots__clear(slots, cap);
	free(slots);
}

/* Frees the tables flushed while held. */
static void retired__free(struct pycode_cache *c)
{
	for (size_t i = 0; i < c->nretired; i++)
		slots__free(c->retired[i].slots, c->retired[i].cap);
	c->nretired = 0;
}

void pycode_cache__destroy(struct pycode_cache *c)
{
	size_t i;

	if (!c)
		return;
	mem_hold__leave(&c->hold);
	slots__free(c->slots, c->cap);
	retired__free(c);
	for (i = 0; i < c->old_n; i++)
		entry__clear(&c->old[i]);
	free(c->old);
	free(c);
}

static size_t slot__hash(uint64_t code, size_t cap)
{
	return (size_t)((code >> 3) * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

static struct pycode_entry *cache__find(struct pycode_cache *c, uint64_t code)
{
	size_t i = slot__hash(code, c->cap);

	while (c->slots[i].code) {
		if (c->slots[i].code == code)
			return &c->slots[i];
		i = (i + 1) & (c->cap - 1);
	}
	return &c->slots[i]; /* the empty slot where it belongs */
}

/* The bytes the slots' entries hold changed by delta: here and in the shared bound. */
static void cache__account(struct pycode_cache *c, long delta)
{
	mem_hold__add(&c->hold, delta);
}

/*
 * Empties the cache. While held, the names handed out must stay: the table
 * is set aside whole, for the last release to free (and when that cannot
 * be, the cache is not emptied: over its bound until the release).
 */
static void cache__flush(struct pycode_cache *c)
{
	if (c->holds) {
		struct pycode_entry *fresh;

		if (c->nretired == PYCODE_RETIRED_MAX ||
		    !(fresh = calloc(PYCODE_FIRST_CAP, sizeof(*fresh))))
			return;
		c->retired[c->nretired++] = (struct retired){ .slots = c->slots, .cap = c->cap };
		c->slots = fresh;
		c->cap = PYCODE_FIRST_CAP;
	} else {
		slots__clear(c->slots, c->cap);
	}
	c->count = 0;
	cache__account(c, -(long)c->hold.held);
}

static int cache__grow(struct pycode_cache *c)
{
	struct pycode_entry *old = c->slots, *slots;
	size_t old_cap = c->cap, i;

	slots = calloc(old_cap * 2, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	c->slots = slots;
	c->cap = old_cap * 2;
	for (i = 0; i < old_cap; i++)
		if (old[i].code)
			*cache__find(c, old[i].code) = old[i];
	free(old);
	return 0;
}

static int entry__line(const struct pycode_cache *c, const struct pycode_entry *e,
		       uint64_t instr, int *ret_line)
{
	int64_t addrq;
	int err;

	if (c->l.version < 0x030b0000) {
		int32_t lasti = (int32_t)(uint32_t)instr; /* f_lasti, in code units */

		addrq = lasti < 0 ? -1 : (int64_t)lasti * 2;
	} else {
		/* prev_instr / instr_ptr; one unit before the start = not started. */
		addrq = (int64_t)(instr - e->code_start);
		if (instr < e->code_start - 2 || addrq >= (int64_t)(e->code_units * 2)) {
			*ret_line = -1;
			return 0;
		}
	}
	if (c->l.linetable_format == PYCODE_LINETABLE_310)
		err = pycode__line_310(e->linetable, e->linetable_len, e->firstlineno, addrq,
				       ret_line);
	else
		err = pycode__line_311(e->linetable, e->linetable_len, e->firstlineno, addrq,
				       ret_line);
	if (err == -ENOENT) {
		*ret_line = -1;
		return 0;
	}
	return err;
}

/* The newest epoch an older entry of code was valid until (0: none): a re-read is valid from it. */
static uint32_t old__until(const struct pycode_cache *c, uint64_t code)
{
	uint32_t until = 0;

	for (size_t i = 0; i < c->old_n; i++)
		if (c->old[i].code == code && c->old[i].epoch_until > until)
			until = c->old[i].epoch_until;
	return until;
}

/* The older entry of code that was valid at epoch; NULL when none is kept. */
static const struct pycode_entry *old__find(const struct pycode_cache *c, uint64_t code,
					    uint32_t epoch)
{
	for (size_t i = 0; i < c->old_n; i++) {
		const struct pycode_entry *o = &c->old[i];

		if (o->code == code && o->epoch_from <= epoch && epoch < o->epoch_until)
			return o;
	}
	return NULL;
}

/* The cache's entry for code, read now when it holds none. */
static int cache__get(struct pycode_cache *c, uint64_t code, struct pycode_entry **ret)
{
	struct pycode_entry *e = cache__find(c, code), fresh;
	int err;

	if (e->code) {
		c->hits++;
		*ret = e;
		return 0;
	}
	err = pycode__read(c, code, &fresh);
	if (err)
		return err;
	c->misses++;
	fresh.epoch_from = old__until(c, code);
	/*
	 * Full by count or by bytes (a process's line tables may each be 64
	 * KiB), or past its share of what all processes' caches may hold: read
	 * all again.
	 */
	if (c->count >= PYCODE_CACHE_MAX || c->hold.held + entry__bytes(&fresh) > c->bytes_max ||
	    !mem_hold__allows(&c->hold, entry__bytes(&fresh)))
		cache__flush(c);
	if ((c->count + 1) * 2 > c->cap && cache__grow(c)) {
		entry__clear(&fresh);
		return -ENOMEM;
	}
	e = cache__find(c, code);
	*e = fresh;
	c->count++;
	cache__account(c, (long)entry__bytes(e));
	*ret = e;
	return 0;
}

void pycode_cache__set_bytes_max(struct pycode_cache *c, size_t bytes_max)
{
	c->bytes_max = bytes_max;
}

void pycode_cache__set_share(struct pycode_cache *c, struct mem_share *share)
{
	mem_hold__join(&c->hold, share);
}

size_t pycode_cache__bytes(const struct pycode_cache *c)
{
	return c->hold.held;
}

void pycode_cache__hold(struct pycode_cache *c)
{
	if (c)
		c->holds++;
}

void pycode_cache__release(struct pycode_cache *c)
{
	if (!c || !c->holds || --c->holds)
		return;
	retired__free(c);
}

int pycode_cache__lookup_at(struct pycode_cache *c, uint64_t code, uint64_t instr, uint32_t epoch,
			    struct pycode_frame *ret_frame)
{
	const struct pycode_entry *e;
	struct pycode_entry *cur;
	int line, err;

	if (!c || !ret_frame)
		return -EINVAL;
	if (!code || (code & 7))
		return -EINVAL;
	e = old__find(c, code, epoch);
	if (!e) {
		err = cache__get(c, code, &cur);
		if (err)
			return err;
		if (cur->epoch_from > epoch)
			return -ESTALE; /* the object of that time was replaced, and is gone */
		e = cur;
	}
	err = entry__line(c, e, instr, &line);
	if (err)
		return err;
	*ret_frame = (struct pycode_frame){
		.qualname = e->qualname,
		.filename = e->filename,
		.line = line,
		.firstlineno = e->firstlineno,
	};
	return 0;
}

int pycode_cache__lookup(struct pycode_cache *c, uint64_t code, uint64_t instr,
			 struct pycode_frame *ret_frame)
{
	return pycode_cache__lookup_at(c, code, instr, UINT32_MAX, ret_frame);
}

/* ---------------------------------------------------------------- reuse */

/* Keeps a replaced object's entry for the stacks of before next_epoch. */
static void old__keep(struct pycode_cache *c, struct pycode_entry *e, uint32_t next_epoch)
{
	struct pycode_entry *slot;

	cache__account(c, -(long)entry__bytes(e)); /* out of the slots (the old ring has a count of its own) */
	if (!c->old) {
		c->old = calloc(PYCODE_OLD_MAX, sizeof(*c->old));
		if (!c->old) {
			entry__clear(e);
			return;
		}
	}
	slot = &c->old[c->old_next];
	if (c->old_n == PYCODE_OLD_MAX)
		entry__clear(slot); /* the oldest: its stacks say the object was replaced */
	else
		c->old_n++;
	*slot = *e;
	slot->epoch_until = next_epoch;
	c->old_next = (c->old_next + 1) % PYCODE_OLD_MAX;
	memset(e, 0, sizeof(*e));
}

/* Whether the object at e->code, as read again in hdr (n bytes), is still the one read. */
static bool entry__same(const struct pycode_cache *c, const struct pycode_entry *e,
			const uint8_t *hdr)
{
	const struct pycode_layout *l = &c->l;
	uint32_t name_off = l->co_qualname != UINT32_MAX ? l->co_qualname : l->co_name;
	int firstlineno;
	int64_t units;

	memcpy(&firstlineno, hdr + l->co_firstlineno, sizeof(int));
	if ((l->code_type && rd64(hdr, l->ob_type) != l->code_type) ||
	    firstlineno != e->firstlineno || rd64(hdr, name_off) != e->name_ptr ||
	    rd64(hdr, l->co_filename) != e->file_ptr || rd64(hdr, l->co_linetable) != e->table_ptr)
		return false;
	memcpy(&units, hdr + l->ob_size, 8);
	return l->version < 0x030b0000 || (uint64_t)units == e->code_units;
}

/* The slots of up to max cached objects, from the cursor on. */
static size_t check__pick(struct pycode_cache *c, size_t max, size_t *slots)
{
	size_t n = 0;

	for (size_t k = 0; k < c->cap && n < max; k++) {
		size_t i = (c->check_cursor + k) & (c->cap - 1);

		if (c->slots[i].code)
			slots[n++] = i;
	}
	c->check_cursor = n ? (slots[n - 1] + 1) & (c->cap - 1) : 0;
	return n;
}

/* Takes the marked (code == 0 after old__keep) holes out of the table. */
static void cache__rehash(struct pycode_cache *c)
{
	struct pycode_entry *old = c->slots;
	size_t cap = c->cap;
	struct pycode_entry *slots = calloc(cap, sizeof(*slots));

	if (!slots) {
		cache__flush(c); /* no room to move them: read all again */
		return;
	}
	c->slots = slots;
	c->count = 0;
	for (size_t i = 0; i < cap; i++) {
		if (old[i].code) {
			*cache__find(c, old[i].code) = old[i];
			c->count++;
		}
	}
	free(old);
}

int pycode_cache__check(struct pycode_cache *c, uint32_t next_epoch, size_t max,
			uint64_t *ret_codes, size_t *ret_replaced)
{
	size_t *slots, n, replaced = 0;
	struct pymem_seg *seg;
	uint8_t *buf;
	int err = 0;

	*ret_replaced = 0;
	if (!c || !c->count)
		return 0;
	if (max > c->count)
		max = c->count;
	slots = calloc(max, sizeof(*slots));
	seg = calloc(max, sizeof(*seg));
	buf = malloc(max * (c->header_len + PYCODE_UNICODE_HEADER_MAX + PYCODE_SIG_DATA));
	if (!slots || !seg || !buf) {
		err = -ENOMEM;
		goto out;
	}
	n = check__pick(c, max, slots);
	/* First the objects' fields, then, for those that kept them, their names. */
	for (size_t k = 0; k < n; k++)
		seg[k] = (struct pymem_seg){ .addr = c->slots[slots[k]].code,
					     .buf = buf + k * c->header_len, .len = c->header_len };
	pymem__readv(c->b, c->pid, seg, n);
	for (size_t k = 0; k < n; k++)
		if (seg[k].err == -ESRCH)
			goto out; /* the process is gone: nothing was replaced */
	for (size_t k = 0; k < n; k++) {
		struct pycode_entry *e = &c->slots[slots[k]];
		bool same = !seg[k].err && entry__same(c, e, seg[k].buf);

		seg[k] = (struct pymem_seg){ .addr = same ? e->name_ptr : 0, .len = same ? e->name_sig_len : 0,
					     .buf = buf + max * c->header_len +
						    k * (PYCODE_UNICODE_HEADER_MAX + PYCODE_SIG_DATA),
					     .err = same ? 0 : -ESTALE };
	}
	pymem__readv(c->b, c->pid, seg, n);
	for (size_t k = 0; k < n; k++) {
		struct pycode_entry *e = &c->slots[slots[k]];

		if (seg[k].err == -ESRCH)
			break; /* gone since: the rest stay as they are */
		if (!seg[k].err && str_sig_of(&c->l, seg[k].buf, seg[k].len) == e->name_sig)
			continue;
		if (ret_codes)
			ret_codes[replaced] = e->code;
		old__keep(c, e, next_epoch);
		replaced++;
	}
	if (replaced)
		cache__rehash(c);
	c->replaced += replaced;
	*ret_replaced = replaced;
out:
	free(slots);
	free(seg);
	free(buf);
	return err;
}

void pycode_cache__stats(const struct pycode_cache *c, unsigned long *ret_hits,
			 unsigned long *ret_misses)
{
	*ret_hits = c ? c->hits : 0;
	*ret_misses = c ? c->misses : 0;
}
