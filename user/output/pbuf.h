/* SPDX-License-Identifier: MIT */
/*
 * Protocol buffers' wire encoding, what pprof's profile.proto needs of it:
 * varints, tags, scalar and length-delimited fields, packed repeated
 * varints, into a growable buffer with a sticky error, so that encoders
 * chain calls and check once. Bounded: past PBUF_MAX bytes it fails.
 */
#ifndef GP_OUTPUT_PBUF_H
#define GP_OUTPUT_PBUF_H

#include <stddef.h>
#include <stdint.h>

#define PBUF_MAX ((size_t)1 << 30)

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* A growable byte buffer with a sticky error, so encoders chain without checks. */
struct pbuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int err;
};

void pbuf__bytes(struct pbuf *b, const void *src, size_t len);
void pbuf__varint(struct pbuf *b, uint64_t v);
void pbuf__tag(struct pbuf *b, unsigned field, unsigned wire);
/* Proto3 scalars: zero is the default and is not written. */
void pbuf__uint_field(struct pbuf *b, unsigned field, uint64_t v);
void pbuf__len_field(struct pbuf *b, unsigned field, const void *src, size_t len);
/* A packed repeated field of varints; nothing for n 0. */
void pbuf__packed(struct pbuf *b, unsigned field, const uint64_t *v, size_t n);
/* Another buffer's bytes as field, or its error. */
void pbuf__message(struct pbuf *b, unsigned field, const struct pbuf *m);
void pbuf__free(struct pbuf *b);

#endif /* GP_OUTPUT_PBUF_H */
