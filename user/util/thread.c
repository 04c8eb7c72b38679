/* SPDX-License-Identifier: MIT */
#include "user/util/thread.h"

#include <signal.h>

int thread__start_quiet(pthread_t *ret_thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(ret_thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}
