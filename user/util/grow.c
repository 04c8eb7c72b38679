/* SPDX-License-Identifier: MIT */
/* The array growth of grow.h. */
#include "user/util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void *grow__realloc(void *arr, size_t *cap, size_t need, size_t item, size_t first, size_t max,
		    bool zero)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);
	void *n;

	if (need <= *cap)
		return arr;
	if (need > max) {
		errno = E2BIG;
		return NULL;
	}
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			errno = EOVERFLOW;
			return NULL;
		}
		ncap *= 2;
	}
	if (ncap > max)
		ncap = max;
	if (ncap > SIZE_MAX / item) {
		errno = EOVERFLOW;
		return NULL;
	}
	n = realloc(arr, ncap * item);
	if (!n)
		return NULL;
	if (zero)
		memset((char *)n + *cap * item, 0, (ncap - *cap) * item);
	*cap = ncap;
	return n;
}
