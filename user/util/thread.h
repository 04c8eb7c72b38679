/* SPDX-License-Identifier: MIT */
/*
 * Helper threads of the loader. Signals stay the main thread's: its polls
 * are what SIGINT and SIGTERM interrupt, so every helper starts with all
 * signals blocked.
 */
#ifndef GP_UTIL_THREAD_H
#define GP_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread: 0 or -errno. */
int thread__start_quiet(pthread_t *ret_thread, void *(*fn)(void *), void *arg);

#endif /* GP_UTIL_THREAD_H */
