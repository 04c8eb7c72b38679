/* SPDX-License-Identifier: MIT */
/*
 * Option parsing for gpuprobe-bpf. Numbers go through strtod/strtoul with
 * errno and range checks; anything odd is a usage error with one clear line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "user/cli.h"
#include "bpf/launch.h"

enum {
	OPT_PID = 256,
	OPT_ALL,
	OPT_LIBCUDA,
	OPT_MOUNTS_OF,
	OPT_SHIM,
	OPT_CUPTI,
	OPT_RINGBUF,
	OPT_TICK,
	OPT_INTERVAL,
	OPT_TOP,
	OPT_UNWIND,
	OPT_STACK_COPY,
	OPT_STACK_CACHE,
	OPT_STACK_AUDIT,
	OPT_STACK_YOUNG,
	OPT_DUTY,
	OPT_WINDOW,
	OPT_TRACE,
	OPT_PC_SAMPLING,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, OPT_PID },
	{ "all-cgroups", no_argument, NULL, OPT_ALL },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "duty", required_argument, NULL, OPT_DUTY },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "pc-sampling", optional_argument, NULL, OPT_PC_SAMPLING },
	{ "verbose", no_argument, NULL, 'v' },
	{ "libcuda", required_argument, NULL, OPT_LIBCUDA },
	{ "mounts-of", required_argument, NULL, OPT_MOUNTS_OF },
	{ "shim", required_argument, NULL, OPT_SHIM },
	{ "cupti", required_argument, NULL, OPT_CUPTI },
	{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
	{ "tick-ms", required_argument, NULL, OPT_TICK },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "stack-copy", required_argument, NULL, OPT_STACK_COPY },
	{ "stack-cache", required_argument, NULL, OPT_STACK_CACHE },
	{ "stack-audit", required_argument, NULL, OPT_STACK_AUDIT },
	{ "stack-young", required_argument, NULL, OPT_STACK_YOUNG },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

void cli__usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %1$s [OPTIONS] --pid PID\n"
		"       %1$s [OPTIONS] --all-cgroups\n"
		"       %1$s [OPTIONS] -- COMMAND [ARGS...]\n"
		"\n"
		"Profile CUDA programs: which CPU stack launched which GPU time.\n"
		"BPF uprobes on libcuda.so.1 record each launch's stack; a CUPTI shim in the\n"
		"program (CUDA_INJECTION64_PATH) records GPU activity; both are joined into a\n"
		"pprof profile and a report. Needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN).\n"
		"\n"
		"Targets (exactly one):\n"
		"  -- COMMAND [ARGS]     run COMMAND with the shim injected, profile it until it\n"
		"                        exits, and exit with its status\n"
		"  --pid PID             profile a running process and its threads (its GPU\n"
		"                        activity needs the shim: start it with\n"
		"                        CUDA_INJECTION64_PATH=<shim>); stops when it exits\n"
		"  --all-cgroups         profile every process on the machine, containers too;\n"
		"                        samples are labelled with their cgroup\n"
		"\n"
		"Options:\n"
		"  -o, --output FILE     pprof output (gzip profile.proto); default gpuprobe.pb.gz\n"
		"      --trace FILE      also a timeline (trace-event JSON, for Perfetto,\n"
		"                        chrome://tracing, speedscope): each launch call under\n"
		"                        its stack on its thread, each kernel, copy and memset\n"
		"                        on its device and stream, an arrow between; the first\n"
		"                        20000 launch calls and 100000 GPU activities (not with\n"
		"                        --interval)\n"
		"      --pc-sampling[=N] also sample the GPU's warps' program counters (CUPTI's\n"
		"                        PC sampling, one sample every 2^N cycles per SM, N in\n"
		"                        5..31; default 17): pc_samples in the profile,\n"
		"                        each under its SASS instruction (kernel+0xOFFSET), its\n"
		"                        kernel and that kernel's launch stacks (shared by\n"
		"                        their GPU time of it), labelled with the stall reason.\n"
		"                        -- COMMAND sets it up; a --pid or --all-cgroups target\n"
		"                        needs GPUPROBE_PC_SAMPLING=N in its environment\n"
		"  -d, --duration SECS   stop after SECS seconds (default: until the target exits\n"
		"                        or SIGINT/SIGTERM/SIGHUP)\n"
		"      --interval SECS   continuous mode: write one profile every SECS seconds,\n"
		"                        named FILE with a timestamp inserted\n"
		"      --duty FRACTION   record only that fraction of the time (0.1 or 10%%), in\n"
		"                        windows at random offsets within each period (the\n"
		"                        --interval, else -d, else 60 s); outside them the launch\n"
		"                        probes are detached and CUPTI's records are off, inside\n"
		"                        every launch is exact. Default: 1 (always), and %2$g\n"
		"                        for --all-cgroups --interval when a --window is no\n"
		"                        more than that share of the interval\n"
		"      --window SECS     a window's least length (default 1, at least 1)\n"
		"  -v, --verbose         the counters and loader lines every tick, and libbpf's\n"
		"                        debug output\n"
		"      --libcuda PATH    attach to this libcuda.so.1 (default: found in the\n"
		"                        targets' memory maps, or the usual system paths)\n"
		"      --shim PATH       the CUPTI shim to inject (default: libgpuprobe_shim.so\n"
		"                        beside the executable, or PREFIX/lib/gpuprobe)\n"
		"      --cupti PATH      libcupti.so used to compute cubin CRCs\n"
		"      --mounts-of PID   read files on the overlays in PID's mount table too, as\n"
		"                        on those in PID 1's: for a container runtime that\n"
		"                        mounts in a namespace of its own (OpenShift's CRI-O);\n"
		"                        an overlay no such table holds is not read (it may\n"
		"                        stack on a FUSE mount its process serves)\n"
		"      --ringbuf-mb N    BPF ring buffer size in MiB, a power of two (default 16)\n"
		"      --tick-ms N       how often the rings are read and joined (default 100)\n"
		"      --top N           kernels listed in the report (default 15)\n"
		"      --unwind MODE     cfi (default): copy the top of each launching thread's\n"
		"                        stack and unwind it with the files' .eh_frame, through\n"
		"                        code without frame pointers; fp: frame pointers only\n"
		"                        (cheaper, stops or errs in libtorch and the like)\n"
		"      --stack-copy KIB  stack bytes copied per launch for cfi: auto (default)\n"
		"                        copies a thread's whole stack (up to 256 KiB), then\n"
		"                        what its launches need; a number (1-256) fixes the\n"
		"                        size, and deeper stacks end in '[truncated: stack\n"
		"                        copy ended]'\n"
		"      --stack-cache N   keys of the stack cache (default 16384; 0: off): a\n"
		"                        launch whose key (stack pointer, return address,\n"
		"                        kernel, Python frames) names a stack already unwound\n"
		"                        sends that stack's id, not its stack\n"
		"      --stack-audit N   about one cache hit in N (default 64; 0: none) is sent\n"
		"                        whole and checked, at most 256 a second per CPU (1:\n"
		"                        every hit, unbounded): a key found with two stacks\n"
		"                        is never used again\n"
		"      --stack-young N   a new key's hits are sent whole and checked until N\n"
		"                        of them found its stack (default 2; 0: none), so a\n"
		"                        second stack under it is met before it answers\n"
		"  -h, --help            this text\n"
		"  -V, --version         the version (the git commit it was built from)\n"
		"\n"
		"Examples:\n"
		"  sudo %1$s -- python3 train.py             profile a training script\n"
		"  sudo %1$s -o step.pb.gz -d 30 --pid 4242  30 s of a running process\n"
		"  sudo %1$s --all-cgroups --interval 60     one profile a minute, whole node,\n"
		"                                              recording 10%% of it in windows\n"
		"  sudo %1$s --duty 1 --all-cgroups --interval 60   the same, every launch\n"
		"  sudo %1$s --trace run.json -- python3 t.py  and a timeline: open run.json\n"
		"                                              in ui.perfetto.dev or speedscope\n"
		"  sudo %1$s --pc-sampling -- ./app          and where in each kernel its warps\n"
		"                                              stall, read with go tool pprof\n"
		"                                              -sample_index=pc_samples -tags\n"
		"  go tool pprof -top gpuprobe.pb.gz           read the result\n"
		"\n"
		"Environment: GPUPROBE_UPROBES=perf attaches a perf-event uprobe per entry point\n"
		"instead of one uprobe_multi link per libcuda file (the default on Linux 6.6+).\n\n"
		"Exit status: 0 success (with --, the command's own status), 1 runtime error,\n"
		"2 usage error.\n",
		prog, GP_DUTY_DEFAULT_ALL);
}

__attribute__((format(printf, 3, 4)))
static int usage_error(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * A --window's least length: 1 s (a window's edges cost a CUPTI switch in
 * every shim). GPUPROBE_TEST_MIN_WINDOW (seconds, 0.05 or more) lowers it,
 * for the tests that open a hundred windows in seconds.
 */
static double window_min_s(void)
{
	const char *e = getenv("GPUPROBE_TEST_MIN_WINDOW");
	char *end;
	double v;

	if (!e || !*e)
		return 1.0;
	v = strtod(e, &end);
	return *end || !isfinite(v) || v < 0.05 || v > 1.0 ? 1.0 : v;
}

static int parse_seconds(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 365.0 * 24 * 3600)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* A fraction in (0, 1]: "0.25" or "25%". */
static int parse_fraction(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -EINVAL;
	if (*end == '%' && !end[1])
		v /= 100;
	else if (*end)
		return -EINVAL;
	if (v <= 0 || v > 1)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (*s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int set_mode(struct gp_opts *o, enum gp_mode m, char *err, size_t len)
{
	if (o->mode != GP_MODE_NONE && o->mode != m)
		return usage_error(err, len, "choose one target: --pid, --all-cgroups or -- COMMAND");
	o->mode = m;
	return 0;
}

static int parse_one(int c, const char *arg, struct gp_opts *o, char *err, size_t len)
{
	unsigned long v;

	switch (c) {
	case OPT_PID:
		if (parse_uint(arg, 1, INT_MAX, &v))
			return usage_error(err, len, "--pid: '%s' is not a process id", arg);
		o->pid = (pid_t)v;
		return set_mode(o, GP_MODE_PID, err, len);
	case OPT_ALL:
		return set_mode(o, GP_MODE_ALL, err, len);
	case 'o':
		if (!*arg)
			return usage_error(err, len, "--output: empty file name");
		o->output = arg;
		return 0;
	case 'd':
		if (parse_seconds(arg, &o->duration_s))
			return usage_error(err, len, "--duration: '%s' is not a positive number of seconds", arg);
		return 0;
	case OPT_INTERVAL:
		if (parse_seconds(arg, &o->interval_s))
			return usage_error(err, len, "--interval: '%s' is not a positive number of seconds", arg);
		return 0;
	case OPT_DUTY:
		if (parse_fraction(arg, &o->duty))
			return usage_error(err, len, "--duty: '%s' is not a fraction in (0, 1] (0.1 or 10%%)", arg);
		return 0;
	case OPT_WINDOW:
		if (parse_seconds(arg, &o->window_s) || o->window_s < window_min_s())
			return usage_error(err, len, "--window: '%s' is not a number of seconds, at least %g", arg,
					   window_min_s());
		return 0;
	case OPT_TRACE:
		if (!*arg)
			return usage_error(err, len, "--trace: an empty file name");
		o->trace = arg;
		return 0;
	case OPT_PC_SAMPLING:
		if (!arg) {
			o->pc_sampling = GP_PC_PERIOD_DEFAULT;
			return 0;
		}
		if (parse_uint(arg, 5, 31, &v))
			return usage_error(err, len, "--pc-sampling: '%s' is not in 5..31 (a sample every 2^N cycles)",
					   arg);
		o->pc_sampling = (int)v;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case OPT_LIBCUDA:
		o->libcuda = arg;
		return 0;
	case OPT_SHIM:
		o->shim = arg;
		return 0;
	case OPT_CUPTI:
		o->cupti = arg;
		return 0;
	case OPT_MOUNTS_OF:
		if (parse_uint(arg, 2, INT_MAX, &v))
			return usage_error(err, len, "--mounts-of: '%s' is not a pid (2 or more)", arg);
		o->mounts_of = (pid_t)v;
		return 0;
	case OPT_RINGBUF:
		if (parse_uint(arg, 1, 1024, &v) || (v & (v - 1)))
			return usage_error(err, len, "--ringbuf-mb: '%s' is not a power of two in 1..1024", arg);
		o->ringbuf_mb = v;
		return 0;
	case OPT_TICK:
		if (parse_uint(arg, 10, 10000, &v))
			return usage_error(err, len, "--tick-ms: '%s' is not in 10..10000", arg);
		o->tick_ms = v;
		return 0;
	case OPT_TOP:
		if (parse_uint(arg, 1, 10000, &v))
			return usage_error(err, len, "--top: '%s' is not in 1..10000", arg);
		o->top = v;
		return 0;
	case OPT_UNWIND:
		if (strcmp(arg, "cfi") && strcmp(arg, "fp"))
			return usage_error(err, len, "--unwind: '%s' is neither 'cfi' nor 'fp'", arg);
		o->unwind_fp = !strcmp(arg, "fp");
		return 0;
	case OPT_STACK_COPY:
		if (!strcmp(arg, "auto")) {
			o->stack_kib = 0;
			return 0;
		}
		if (parse_uint(arg, 1, GP_STACK_COPY_MAX / 1024, &v))
			return usage_error(err, len, "--stack-copy: '%s' is neither 'auto' nor in 1..%u (KiB)",
					   arg, GP_STACK_COPY_MAX / 1024);
		o->stack_kib = v;
		return 0;
	case OPT_STACK_CACHE:
		if (parse_uint(arg, 0, GP_STACK_CACHE_MAX, &v))
			return usage_error(err, len, "--stack-cache: '%s' is not in 0..%u (keys)", arg,
					   GP_STACK_CACHE_MAX);
		o->stack_cache = v;
		return 0;
	case OPT_STACK_AUDIT:
		if (parse_uint(arg, 0, 1u << 20, &v))
			return usage_error(err, len, "--stack-audit: '%s' is not in 0..%u", arg, 1u << 20);
		o->stack_audit = v;
		return 0;
	case OPT_STACK_YOUNG:
		if (parse_uint(arg, 0, STACK_YOUNG_MAX, &v))
			return usage_error(err, len, "--stack-young: '%s' is not in 0..%u", arg,
					   STACK_YOUNG_MAX);
		o->stack_young = v;
		return 0;
	case 'h':
		o->help = true;
		return 0;
	case 'V':
		o->version = true;
		return 0;
	default:
		return usage_error(err, len, "unknown option; see --help");
	}
}

int cli__parse(int argc, char **argv, struct gp_opts *ret_opts, char *err, size_t errlen)
{
	struct gp_opts o = { .output = "gpuprobe.pb.gz", .ringbuf_mb = 16, .tick_ms = 100, .top = 15,
			     .window_s = 1,
			     .stack_kib = 0, .stack_cache = 16384, .stack_audit = 64,
			     .stack_young = 2, .pc_sampling = -1 };
	int c, e;

	err[0] = 0;
	optind = 1;
	opterr = 0;
	/* '+': stop at the first non-option, so COMMAND's own flags are its own. */
	while ((c = getopt_long(argc, argv, "+o:d:vhV", long_opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];

			return usage_error(err, errlen, "%s: %s; see --help", bad,
					   optopt && c == '?' && strchr("od", optopt) ? "needs a value"
											: "unknown option or missing value");
		}
		e = parse_one(c, optarg, &o, err, errlen);
		if (e)
			return e;
	}
	if (o.help || o.version) {
		*ret_opts = o;
		return 0;
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0)
			return usage_error(err, errlen, "unexpected argument '%s' (put the command after --)",
					   argv[optind]);
		e = set_mode(&o, GP_MODE_COMMAND, err, errlen);
		if (e)
			return e;
		o.argv = &argv[optind];
	} else if (optind > 0 && optind <= argc && strcmp(argv[optind - 1], "--") == 0) {
		return usage_error(err, errlen, "-- needs a command to run");
	}
	if (o.mode == GP_MODE_NONE)
		return usage_error(err, errlen, "no target: give --pid PID, --all-cgroups or -- COMMAND; see --help");
	if (o.interval_s && o.duration_s && o.interval_s > o.duration_s)
		return usage_error(err, errlen, "--interval is longer than --duration");
	if (o.trace && strcmp(o.trace, o.output) == 0)
		return usage_error(err, errlen, "--trace and -o name the same file");
	if (o.trace && o.interval_s)
		return usage_error(err, errlen, "--trace writes one timeline at the end: not with --interval");
	/* The default fraction only where a window of its share fits each interval. */
	if (!o.duty)
		o.duty = o.mode == GP_MODE_ALL && o.interval_s * GP_DUTY_DEFAULT_ALL >= o.window_s
				 ? GP_DUTY_DEFAULT_ALL : 1.0;
	if (o.duty < 1 && o.window_s > cli__duty_period(&o))
		return usage_error(err, errlen, "--window is longer than the duty cycle's period (%g s)",
				   cli__duty_period(&o));
	*ret_opts = o;
	return 0;
}

double cli__duty_period(const struct gp_opts *o)
{
	return o->interval_s ? o->interval_s : o->duration_s ? o->duration_s : GP_DUTY_PERIOD_S;
}
