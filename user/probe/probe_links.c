/* SPDX-License-Identifier: MIT */
/* BPF links destroyed side by side (probe_links.h). */
#include <pthread.h>
#include <stdbool.h>
#include <bpf/libbpf.h>
#include "user/probe/probe_links.h"
#include "user/util/thread.h"

#define DETACH_THREADS 16

struct detach_share {
	struct bpf_link **links;
	size_t n, first, stride;
};

static void *detach_some(void *arg)
{
	struct detach_share *d = arg;

	for (size_t i = d->first; i < d->n; i += d->stride)
		bpf_link__destroy(d->links[i]);
	return NULL;
}

/*
 * Removing a perf-event uprobe waits for a kernel grace period (40-80 ms
 * each, measured), a syscall tracepoint's about 55 ms (this machine's
 * 6.18 kernel): one after the other, 40 links kept a -- COMMAND's caller
 * waiting over a second after the program ended. Side by side the waits
 * overlap in part (one loader, 19 links: 1.29 -> 0.94 s; the kernel
 * serialises much of it); a thread that cannot start leaves its share to
 * this one.
 */
void probe_links__detach(struct bpf_link **links, size_t n)
{
	struct detach_share share[DETACH_THREADS];
	pthread_t th[DETACH_THREADS];
	bool started[DETACH_THREADS] = { false };
	size_t k, nth = n < DETACH_THREADS ? n : DETACH_THREADS;

	for (k = 0; k < nth; k++) {
		share[k] = (struct detach_share){ .links = links, .n = n, .first = k, .stride = nth };
		if (k)
			started[k] = thread__start_quiet(&th[k], detach_some, &share[k]) == 0;
	}
	for (k = 1; k < nth; k++)
		if (!started[k])
			detach_some(&share[k]);
	if (nth)
		detach_some(&share[0]);
	for (k = 1; k < nth; k++)
		if (started[k])
			pthread_join(th[k], NULL);
}
