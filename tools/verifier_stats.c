/* SPDX-License-Identifier: MIT */
/*
 * What the kernel's verifier does with the launch probe's programs, as the
 * loader loads them at every start (CFI stack copies, or --fp; --filter for
 * --pid and -- COMMAND): its statistics line for cu_call (instructions
 * processed, states) and the whole skeleton's load time, best of 5.
 * Root. Usage: gpuprobe-verifier-stats [--fp] [--filter]
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "bpf/launch.h"
#include "user/util/clock.h"
#include "launch.skel.h"

static char log_buf[1 << 20];

static double now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1e6;
}

/* Opens, sets the loader's constants and loads; the load's ms, or -1. */
static double load_once(bool fp, bool filter, bool with_log)
{
	struct launch_bpf *s = launch_bpf__open();
	double t0, ms;

	if (!s)
		return -1;
	s->rodata->stack_copy = fp ? 0 : GP_STACK_COPY_MAX;
	s->rodata->filter_pids = filter;
	if (with_log) {
		bpf_program__set_log_level(s->progs.cu_call, 4);
		bpf_program__set_log_buf(s->progs.cu_call, log_buf, sizeof(log_buf));
	}
	t0 = now_ms();
	if (launch_bpf__load(s)) {
		launch_bpf__destroy(s);
		return -1;
	}
	ms = now_ms() - t0;
	launch_bpf__destroy(s);
	return ms;
}

int main(int argc, char **argv)
{
	bool fp = false, filter = false;
	double best = -1;
	char *stats;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fp")) {
			fp = true;
		} else if (!strcmp(argv[i], "--filter")) {
			filter = true;
		} else {
			fprintf(stderr, "usage: gpuprobe-verifier-stats [--fp] [--filter]\n");
			return 2;
		}
	}
	if (load_once(fp, filter, true) < 0) {
		fprintf(stderr, "gpuprobe-verifier-stats: load failed (root? BTF?)\n%s", log_buf);
		return 1;
	}
	stats = strstr(log_buf, "processed ");
	printf("cu_call: %s", stats ? stats : "(no statistics line)\n");
	for (int i = 0; i < 5; i++) {
		double ms = load_once(fp, filter, false);

		if (ms >= 0 && (best < 0 || ms < best))
			best = ms;
	}
	printf("skeleton load: %.1f ms (best of 5)\n", best);
	return 0;
}
