/* SPDX-License-Identifier: MIT */
/*
 * The ELF symbol and CFI caches every space of a session shares (space.h's
 * struct space_caches), and how a generation uses them.
 */
#include "user/space/space.h"
#include "user/space/space_internal.h"
#include "user/util/key_holds.h"
#include "user/util/mem_share.h"
#include "user/util/clock.h"
#include "user/util/tenants.h"
#include "user/symbolize/elf_syms.h"
#include "user/unwind/cfi_cache.h"

#include <errno.h>
#include <stdlib.h>

#define SPACE_MAX_FILES 512
/*
 * CFI tables, held by processes or kept for files none maps any more, at
 * most (about twice that when held tables fill it: each within its share).
 */
#define SPACE_CFI_BYTES (256u << 20)
/*
 * CFI tables held by generations, counted by reference, shared by tenants
 * (the processes of one cgroup): past it, a tenant over its share loads no
 * new table (cfi_over_bound), so that one container mapping hundreds of
 * libraries its stacks pass through cannot hold every slot of the cache.
 */
#define SPACE_CFI_REFS (SPACE_MAX_FILES / 4)
/*
 * The loader's time a tenant's file loads (symbol tables, CFI tables) may
 * owe before its next ones are refused, paid back at a tenth of the time
 * that passes (tenants.h): a burst of a few seconds, then a tenth of the
 * loader's time, so that one container mapping fresh files by the
 * thousand cannot hold the ring's drain or the other tenants' naming.
 */
#define SPACE_LOAD_BUDGET_NS TENANT_BUDGET_NS

struct space_caches {
	struct bounded *b; /* the ELF cache's opens (debug files) */
	struct elf_cache *elf;
	struct cfi_cache *cfi;
	unsigned long users; /* generations open: the tables exist while there are some */
	unsigned long cfi_refused; /* by caches emptied since */
	struct mem_share maps; /* what every generation's maps hold, together */
	struct mem_share cfi_refs; /* CFI tables generations hold, by tenant (SPACE_CFI_REFS) */
	struct key_holds cfi_holds;
	struct tenants loads; /* what each tenant's file loads cost (SPACE_LOAD_BUDGET_NS) */
	unsigned long loads_refused;
};

int space_caches__new(struct bounded *b, struct space_caches **ret)
{
	struct space_caches *c;

	if (!b)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->b = b;
	mem_share__init(&c->maps, SPACE_MAPS_SHARE_BYTES);
	mem_share__init(&c->cfi_refs, SPACE_CFI_REFS);
	key_holds__init(&c->cfi_holds, &c->cfi_refs);
	tenants__init(&c->loads, SPACE_LOAD_BUDGET_NS);
	*ret = c;
	return 0;
}

void space_caches__set_maps_bound(struct space_caches *c, size_t bytes)
{
	c->maps.max = bytes;
}

struct mem_share *space_caches__maps_share(struct space_caches *c)
{
	return &c->maps;
}

unsigned long space_caches__maps_refused(const struct space_caches *c)
{
	return c ? mem_share__refused(&c->maps) : 0;
}

unsigned long space_caches__cfi_refused(const struct space_caches *c)
{
	return c ? c->cfi_refused + cfi_cache__refused(c->cfi) + mem_share__refused(&c->cfi_refs) : 0;
}

void space_caches__set_cfi_refs_bound(struct space_caches *c, size_t refs)
{
	c->cfi_refs.max = refs;
}

struct mem_hold *space_caches__cfi_hold(struct space_caches *c, __u64 tenant)
{
	return key_holds__get(&c->cfi_holds, tenant);
}

void space_caches__set_load_budget(struct space_caches *c, __u64 ns, unsigned refill)
{
	tenants__init(&c->loads, ns);
	if (refill)
		tenants__set_refill(&c->loads, refill);
}

unsigned long space_caches__loads_refused(const struct space_caches *c)
{
	return c ? c->loads_refused : 0;
}

bool space_caches__may_load(struct space_caches *c, __u64 tenant, bool count)
{
	if (!tenants__refuses(&c->loads, tenant, clock_ns(CLOCK_MONOTONIC)))
		return true;
	c->loads_refused += count;
	return false;
}

void space_caches__loaded(struct space_caches *c, __u64 tenant, __u64 t0)
{
	__u64 now = clock_ns(CLOCK_MONOTONIC);

	tenants__took(&c->loads, tenant, now - t0, now);
}

static void space_caches__empty(struct space_caches *c)
{
	c->cfi_refused += cfi_cache__refused(c->cfi);
	elf_cache__destroy(c->elf);
	cfi_cache__destroy(c->cfi);
	c->elf = NULL;
	c->cfi = NULL;
}

void space_caches__destroy(struct space_caches *c)
{
	if (!c)
		return;
	space_caches__empty(c);
	key_holds__fini(&c->cfi_holds);
	free(c);
}

/*
 * Made with the first generation and freed with the last, as a process of
 * our own would: with no process profiled the loader holds no table.
 */
int space_caches__get(struct space_caches *c)
{
	if (!c->users) {
		c->elf = elf_cache__new(c->b, SPACE_MAX_FILES);
		c->cfi = cfi_cache__new(SPACE_MAX_FILES, SPACE_CFI_BYTES);
		if (!c->elf || !c->cfi) {
			space_caches__empty(c);
			return -ENOMEM;
		}
	}
	c->users++;
	return 0;
}

void space_caches__put(struct space_caches *c)
{
	if (c && c->users && --c->users == 0)
		space_caches__empty(c);
}

int space_caches__elf(struct space_caches *c, __u64 tenant, int fd, struct elf_syms **ret_syms)
{
	__u64 t0 = clock_ns(CLOCK_MONOTONIC);
	int err = elf_cache__get_fd(c->elf, fd, ret_syms);

	space_caches__loaded(c, tenant, t0);
	return err;
}

int space_caches__cfi(struct space_caches *c, __u64 tenant, int fd, struct cfi_ref **ret_ref)
{
	__u64 t0 = clock_ns(CLOCK_MONOTONIC);
	int err = cfi_cache__get_fd(c->cfi, fd, ret_ref);

	space_caches__loaded(c, tenant, t0);
	return err;
}

void space_caches__stats(const struct space_caches *c, size_t *ret_sym_bytes,
			 size_t *ret_cfi_bytes)
{
	size_t files;

	*ret_sym_bytes = *ret_cfi_bytes = 0;
	if (!c || !c->users)
		return;
	elf_cache__stats(c->elf, &files, ret_sym_bytes);
	cfi_cache__stats(c->cfi, &files, ret_cfi_bytes);
}
