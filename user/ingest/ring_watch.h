/* SPDX-License-Identifier: MIT */
/*
 * Holding shim rings as they are made. A thread of its own waits for the
 * BPF side's word that a followed process made its ring (memfd_create) and
 * opens that memfd at once: the loader's main thread may be busy for tens
 * of milliseconds (symbols, cubins) while a short-lived process exits, and
 * a held memfd keeps the ring and its records after the process is gone.
 * The thread does nothing else; the main thread takes what it held.
 */
#ifndef GP_INGEST_RING_WATCH_H
#define GP_INGEST_RING_WATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct launch_probe;

struct held_ring {
	pid_t pid;
	int fd;   /* >= 0: the ring, the taker's to close; < 0: -errno, not held */
};

struct ring_watch {
	struct launch_probe *lp;
	pthread_t thread;
	bool running;
	int stop;                  /* atomic */
	pid_t self;                /* our own rings (-- COMMAND) are not watched */
	pthread_mutex_t lock;      /* leaf: guards the queue */
	struct held_ring *q;
	size_t n, cap;
	__u64 dropped;             /* queue full: closed, counted missed */
	int paused;                /* atomic: between the duty cycle's windows (rings marked paused) */
};

/* Starts the thread when lp watches rings; 0 also when it does not. */
int ring_watch__start(struct ring_watch *w, struct launch_probe *lp);
/* Stops the thread and closes whatever was not taken. */
void ring_watch__stop(struct ring_watch *w);
/* Moves up to max held rings into out; returns how many. */
size_t ring_watch__take(struct ring_watch *w, struct held_ring *out, size_t max);
__u64 ring_watch__dropped(struct ring_watch *w);

#endif
