/* SPDX-License-Identifier: MIT */
/* Protocol buffers' wire encoding (pbuf.h). */
#include "user/output/pbuf.h"
#include "user/util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void pbuf__reserve(struct pbuf *b, size_t extra)
{
	uint8_t *d;

	if (b->err)
		return;
	if (extra > PBUF_MAX || b->len > PBUF_MAX - extra) {
		b->err = -E2BIG;
		return;
	}
	d = grow__array(b->data, &b->cap, b->len + extra, 1, 256);
	if (!d) {
		b->err = -ENOMEM;
		return;
	}
	b->data = d;
}

void pbuf__bytes(struct pbuf *b, const void *src, size_t len)
{
	pbuf__reserve(b, len);
	if (b->err || !len)
		return;
	memcpy(b->data + b->len, src, len);
	b->len += len;
}

void pbuf__varint(struct pbuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pbuf__bytes(b, tmp, n);
}

void pbuf__tag(struct pbuf *b, unsigned field, unsigned wire)
{
	pbuf__varint(b, ((uint64_t)field << 3) | wire);
}

void pbuf__uint_field(struct pbuf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pbuf__tag(b, field, WIRE_VARINT);
	pbuf__varint(b, v);
}

void pbuf__len_field(struct pbuf *b, unsigned field, const void *src, size_t len)
{
	pbuf__tag(b, field, WIRE_LEN);
	pbuf__varint(b, len);
	pbuf__bytes(b, src, len);
}

void pbuf__packed(struct pbuf *b, unsigned field, const uint64_t *v, size_t n)
{
	size_t len = 0, i;
	uint64_t x;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		x = v[i];
		do {
			len++;
			x >>= 7;
		} while (x);
	}
	pbuf__tag(b, field, WIRE_LEN);
	pbuf__varint(b, len);
	for (i = 0; i < n; i++)
		pbuf__varint(b, v[i]);
}

void pbuf__free(struct pbuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void pbuf__message(struct pbuf *b, unsigned field, const struct pbuf *m)
{
	if (m->err)
		b->err = b->err ? b->err : m->err;
	else
		pbuf__len_field(b, field, m->data, m->len);
}
