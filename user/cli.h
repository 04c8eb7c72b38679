/* SPDX-License-Identifier: MIT */
/* Command-line options of gpuprobe-bpf: parsing and help, nothing else. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

enum gp_mode {
	GP_MODE_NONE = 0,
	GP_MODE_PID,        /* --pid N */
	GP_MODE_ALL,        /* --all-cgroups */
	GP_MODE_COMMAND,    /* -- COMMAND [ARGS] */
};

struct gp_opts {
	enum gp_mode mode;
	pid_t pid;
	char **argv;            /* COMMAND and its arguments (GP_MODE_COMMAND) */
	const char *output;     /* -o */
	const char *trace;      /* --trace: the timeline (trace-event JSON), NULL: none */
	double duration_s;      /* -d; 0 = until the target exits or a signal */
	double interval_s;      /* --interval; 0 = one profile at the end */
	double duty;            /* --duty: the fraction recorded, in windows (cli__parse resolves it: 1 = all) */
	double window_s;        /* --window: a window's least length */
	bool verbose;           /* -v */
	const char *libcuda;    /* --libcuda */
	const char *shim;       /* --shim */
	const char *cupti;      /* --cupti: library providing cuptiGetCubinCrc */
	pid_t mounts_of;        /* --mounts-of: a process whose mount table is the node's too, 0: none */
	unsigned ringbuf_mb;    /* --ringbuf-mb */
	unsigned tick_ms;       /* --tick-ms */
	unsigned top;           /* --top: kernels in the report */
	bool unwind_fp;         /* --unwind fp: frame pointers instead of CFI */
	unsigned stack_kib;     /* --stack-copy: KiB of stack copied per launch for CFI, 0: auto */
	unsigned stack_cache;   /* --stack-cache: keys the stack cache holds, 0: no cache */
	unsigned stack_audit;   /* --stack-audit: about 1 hit in N sent whole, 0: none */
	unsigned stack_young;   /* --stack-young: audits a new key needs before bare hits */
	int pc_sampling;        /* --pc-sampling: -1 off, else 5..31 (GP_PC_PERIOD_DEFAULT) */
	bool help;
	bool version;         /* -V: print the version and exit */
};

/* --duty's default for --all-cgroups --interval (README, "Duty cycle": measured). */
#define GP_DUTY_DEFAULT_ALL 0.1
/* The duty cycle's period without --interval or -d. */
#define GP_DUTY_PERIOD_S 60.0
/* The duty cycle's period for these options: --interval, else -d, else GP_DUTY_PERIOD_S. */
double cli__duty_period(const struct gp_opts *o);

/* --stack-young's bound: audits a new key may need before its hits go without a copy. */
#define STACK_YOUNG_MAX 16u

/* 0 on success; -EINVAL with a one-line message in err (for exit status 2). */
int cli__parse(int argc, char **argv, struct gp_opts *ret_opts, char *err, size_t errlen);
void cli__usage(FILE *f, const char *prog);

/*
 * --pc-sampling's period without =N: a sample every 2^17 cycles per SM.
 * CUPTI's own default on the H200 is 2^11 (as many samples as =11): on a
 * training step that many overflowed the shim's ring and the profile's
 * bound, and cost a third of the step (docs/BENCHMARKS.md, "PC sampling").
 */
#define GP_PC_PERIOD_DEFAULT 17

#endif
