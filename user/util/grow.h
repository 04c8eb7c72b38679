/* SPDX-License-Identifier: MIT */
/*
 * Growing an array that is appended to: the capacity doubles, so appending
 * n items copies O(n) in all. One helper, so that the doubling, the checks
 * and the overflow guard are written once.
 */
#ifndef GP_UTIL_GROW_H
#define GP_UTIL_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reallocation behind the three below, out of line; call those. */
void *grow__realloc(void *arr, size_t *cap, size_t need, size_t item, size_t first, size_t max,
		    bool zero);

/*
 * Room for need items of item bytes (item > 0) in arr, of *cap items now:
 * arr itself when need <= *cap; else arr reallocated to first items (when
 * *cap is 0; 1 if first is 0), or to *cap doubled, doubled again until need
 * fits, but never to more than max items; *cap is set to the new capacity.
 * The new tail is left as realloc leaves it: pages not yet written cost no
 * memory (grow__array_zeroed for an array read past what was appended).
 * (need 0 returns arr as it is: NULL for an empty array; ask for 1 or more.)
 * NULL on failure, with arr and *cap untouched and errno set: E2BIG when
 * need > max, EOVERFLOW when the capacity in bytes would not fit a size_t,
 * ENOMEM.
 */
static inline void *grow__array_max(void *arr, size_t *cap, size_t need, size_t item,
				    size_t first, size_t max)
{
	/* Most appends find room: they cost a compare, not a call. */
	return need <= *cap ? arr : grow__realloc(arr, cap, need, item, first, max, false);
}

/* grow__array_max bounded only by size_t. */
static inline void *grow__array(void *arr, size_t *cap, size_t need, size_t item, size_t first)
{
	return grow__array_max(arr, cap, need, item, first, SIZE_MAX);
}

/* grow__array, and the new tail, from the old *cap to the new one, zeroed. */
static inline void *grow__array_zeroed(void *arr, size_t *cap, size_t need, size_t item,
				       size_t first)
{
	return need <= *cap ? arr : grow__realloc(arr, cap, need, item, first, SIZE_MAX, true);
}

#endif /* GP_UTIL_GROW_H */
