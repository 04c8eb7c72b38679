/* SPDX-License-Identifier: MIT */
/*
 * libbpf's own messages: its warnings always, its debug chatter with -v,
 * and nothing while the probe family asks
 * something whose failure is expected (attaching by a name the file may
 * not define, loading a program type an older kernel refuses).
 */
#ifndef GP_PROBE_LIBBPF_LOG_H
#define GP_PROBE_LIBBPF_LOG_H

#include <stdbool.h>

/* Routes libbpf's messages through here (all of them with -v: verbose); once, before the first libbpf call. */
void libbpf_log__install(bool verbose);
/* quiet: the calls from now on may fail as expected; false again after them. */
void libbpf_log__quiet(bool quiet);

#endif /* GP_PROBE_LIBBPF_LOG_H */
