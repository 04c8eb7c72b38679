/* SPDX-License-Identifier: MIT */
/* Per-thread stack copy sizes (copy_hint.h). */
#include <errno.h>
#include <string.h>
#include "user/probe/copy_hint.h"
#include "user/probe/launch_probe.h"
#include "bpf/launch.h"

/*
 * A shrunk copy keeps this much at least, and twice its run's deepest: a
 * thread's first deeper call after a shrink ends short once (make demo's
 * workers: 1,200 shallow launches, then site_copy's 8 KiB of locals came
 * out "[truncated: stack copy ended]"). With the stack cache only misses
 * and audits copy, so the room costs little.
 */
#define HINT_MIN (16u * 1024)
#define HINT_ROUND 4096u
#define SHRINK_AFTER 512u      /* launches that all needed less than half */
#define MAX_THREADS (1u << 16)

/* Packed state: size (KiB, 16 bits), deepest need of the run (KiB, 16), run length (32). */
struct hint {
	__u32 size, deepest, run;
};

static __u64 pack(const struct hint *s)
{
	return (__u64)(s->size / 1024) | (__u64)(s->deepest / 1024) << 16 | (__u64)s->run << 32;
}

static struct hint unpack(__u64 v)
{
	return (struct hint){ .size = (__u32)(v & 0xffff) * 1024,
			      .deepest = (__u32)(v >> 16 & 0xffff) * 1024, .run = (__u32)(v >> 32) };
}

static __u32 fit(__u64 bytes)
{
	bytes = (bytes + HINT_ROUND - 1) / HINT_ROUND * HINT_ROUND;
	if (bytes < HINT_MIN)
		bytes = HINT_MIN;
	return bytes > GP_STACK_COPY_MAX ? GP_STACK_COPY_MAX : (__u32)bytes;
}

int copy_hints__init(struct copy_hints *h, struct launch_probe *lp, __u32 initial)
{
	memset(h, 0, sizeof(*h));
	h->lp = lp;
	h->initial = fit(initial);
	return u64map__init(&h->tids, MAX_THREADS);
}

void copy_hints__fini(struct copy_hints *h)
{
	u64map__fini(&h->tids);
}

__u32 copy_hints__observe(struct copy_hints *h, __u32 tid, __u32 need)
{
	__u64 v;
	struct hint s = { .size = h->initial };
	__u32 want, was;

	if (u64map__get(&h->tids, tid, &v))
		s = unpack(v);
	was = s.size;
	if (!need)
		return s.size;
	/* Deeper than the copy, or close to its end: grow now, with room to spare. */
	want = fit((__u64)need + need / 4);
	if (want > s.size) {
		s.size = want;
		s.deepest = s.run = 0;
	} else {
		if (need > s.deepest)
			s.deepest = need > 0xffffu * 1024 ? 0xffffu * 1024 : need;
		if (++s.run >= SHRINK_AFTER) {
			want = fit(2ull * s.deepest);
			if (want <= s.size / 2)
				s.size = want;
			s.deepest = s.run = 0;
		}
	}
	if (s.size != was) {
		if (h->lp && launch_probe__set_copy_hint(h->lp, tid, s.size))
			s.size = was; /* the BPF side copies what it did: so do we */
		else if (s.size > was)
			h->grown++;
		else
			h->shrunk++;
	}
	if (u64map__put(&h->tids, tid, pack(&s)) == -E2BIG) {
		/* Many threads came and went: start over (the BPF map keeps its LRU). */
		u64map__fini(&h->tids);
		u64map__init(&h->tids, MAX_THREADS);
	}
	return s.size;
}
