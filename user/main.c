/* SPDX-License-Identifier: MIT */
/* gpuprobe-bpf: parse the command line, then run one profiling session. */
#include <stdio.h>
#include "user/cli.h"
#include "user/session/session.h"

int main(int argc, char **argv)
{
	struct gp_opts o;
	char err[256];

	if (cli__parse(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "gpuprobe-bpf: %s\n", err);
		return 2;
	}
	if (o.help) {
		cli__usage(stdout, "gpuprobe-bpf");
		return 0;
	}
	return session__run(&o);
}
