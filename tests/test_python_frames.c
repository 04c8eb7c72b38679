/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for user/python/: a real CPython (${GP_TEST_PYTHON:-/usr/bin/python3})
 * runs a script with known frames (outer -> middle -> sorted(key=clé) ->
 * inner in the main thread, Wörker.run_工作 -> inner in a second thread),
 * then blocks; from here we detect its runtime, walk both threads the way
 * the BPF program will (pyruntime__walk_key) and resolve every frame to
 * qualname, file and line. Names and the file name are non-ASCII on
 * purpose (str kinds 1, 2 and 4).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <malloc.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "user/python/pycode.h"
#include "user/util/mem_share.h"
#include "user/python/pyruntime.h"
#include "user/util/bounded.h"

#include "tests/skip.h"

/* "# L:NAME" marks the line that NAME's frame must report. */
static const char script[] =
	"import os, sys, threading, time\n"
	"W = int(sys.argv[1])\n"
	"def inner(tag):\n"
	"    os.write(W, ('%s %d\\n' % (tag, sys.hexversion)).encode())\n"
	"    while True:\n"
	"        time.sleep(0.05)  # L:inner\n"
	"def clé(x):\n"
	"    inner('main')  # L:cle\n"
	"    return x\n"
	"def middle():\n"
	"    return sorted([1], key=clé)  # L:middle\n"
	"def outer():\n"
	"    middle()  # L:outer\n"
	"class Wörker:\n"
	"    def run_工作(self):\n"
	"        inner('worker')  # L:run\n"
	"threading.Thread(target=Wörker().run_工作, daemon=True).start()\n"
	"outer()  # L:module\n";

struct fixture {
	struct bounded *bounded;  /* every test's reads, as the loader's one */
	bool have_python;
	bool start_failed; /* python is there, the script did not start: a failure */
	char why[256];
	char dir[64];
	char path[128];
	pid_t pid;
	pid_t worker_tid;
	unsigned long hexversion;
	struct pyruntime rt;
	int detect_err;
};

static int line_of(const char *tag)
{
	char mark[32];
	const char *p;
	int line = 1;

	snprintf(mark, sizeof(mark), "# L:%s\n", tag);
	p = strstr(script, mark);
	assert_non_null(p);
	for (const char *q = script; q < p; q++)
		line += *q == '\n';
	return line;
}

static const char *test_python(void)
{
	const char *p = getenv("GP_TEST_PYTHON");

	return p && *p ? p : "/usr/bin/python3";
}

/* Reads lines until "main" and "worker" have both said they are ready. */
static int wait_ready(int fd, unsigned long *ret_hexversion)
{
	char buf[512];
	size_t len = 0;
	bool main_ok = false, worker_ok = false;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *nl;
	ssize_t n;

	while (!(main_ok && worker_ok)) {
		if (poll(&pfd, 1, 15000) != 1)
			return -ETIMEDOUT;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return -EPIPE;
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (!strncmp(buf, "main ", 5)) {
				main_ok = true;
				*ret_hexversion = strtoul(buf + 5, NULL, 10);
			} else if (!strncmp(buf, "worker ", 7)) {
				worker_ok = true;
			}
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
	}
	return 0;
}

static pid_t find_worker(pid_t pid)
{
	char dir[64];
	struct dirent *d;
	pid_t tid = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return 0;
	while ((d = readdir(dp)))
		if (atoi(d->d_name) > 0 && atoi(d->d_name) != pid)
			tid = atoi(d->d_name);
	closedir(dp);
	return tid;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *py = test_python();
	int fds[2], fd, err;
	char wfd[16];

	assert_non_null(f);
	*state = f;
	f->bounded = bounded__new();
	assert_non_null(f->bounded);
	if (access(py, X_OK)) {
		snprintf(f->why, sizeof(f->why), "no python at %s (set GP_TEST_PYTHON)", py);
		return 0;
	}
	snprintf(f->dir, sizeof(f->dir), "/tmp/gp_pyframes_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	/* U+1F40D in the file name: co_filename becomes a 4-byte-kind str. */
	snprintf(f->path, sizeof(f->path), "%s/t\xf0\x9f\x90\x8d.py", f->dir);
	fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, script, sizeof(script) - 1), (ssize_t)sizeof(script) - 1);
	close(fd);
	assert_int_equal(pipe(fds), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		close(fds[0]);
		snprintf(wfd, sizeof(wfd), "%d", fds[1]);
		execl(py, py, "-S", f->path, wfd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	err = wait_ready(fds[0], &f->hexversion);
	close(fds[0]);
	if (err) {
		snprintf(f->why, sizeof(f->why), "%s did not start the script: %s", py, strerror(-err));
		f->start_failed = true;
		return 0;
	}
	f->worker_tid = find_worker(f->pid);
	f->have_python = true;
	f->detect_err = pyruntime__detect(f->bounded, f->pid, &f->rt);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	if (f->path[0])
		unlink(f->path);
	if (f->dir[0])
		rmdir(f->dir);
	bounded__free(f->bounded);
	free(f);
	return 0;
}

#define NEED_PYTHON(f)                                                     \
	do {                                                               \
		if ((f)->start_failed)                                     \
			fail_msg("%s", (f)->why);                          \
		if (!(f)->have_python)                                     \
			SKIP_BECAUSE("%s", (f)->why);                      \
		if ((f)->detect_err)                                       \
			fail_msg("pyruntime__detect: %s",                  \
				 pyruntime__strerror((f)->detect_err));    \
	} while (0)

/* One resolved record: "|" for a C boundary, else qualname:line. */
struct resolved {
	char text[64][1200];
	char file[64][PYCODE_FILE_MAX];
	size_t n;
};

static void resolve(struct fixture *f, struct pycode_cache *c, const struct gp_py_frame *fr,
		    uint32_t n, struct resolved *out)
{
	struct pycode_frame pf;
	uint32_t i;

	out->n = 0;
	for (i = 0; i < n; i++) {
		if (fr[i].code & GP_PY_FRAME_SHIM) {
			snprintf(out->text[out->n], sizeof(out->text[0]), "|");
			out->file[out->n++][0] = '\0';
			continue;
		}
		assert_int_equal(pycode_cache__lookup(c, fr[i].code & ~GP_PY_FRAME_FLAGS,
						      fr[i].instr, &pf), 0);
		/* held in what they take, not in PYCODE_NAME_MAX and PYCODE_FILE_MAX */
		assert_true(malloc_usable_size((void *)pf.qualname) < strlen(pf.qualname) + 64);
		assert_true(malloc_usable_size((void *)pf.filename) < strlen(pf.filename) + 64);
		snprintf(out->text[out->n], sizeof(out->text[0]), "%s:%d", pf.qualname, pf.line);
		snprintf(out->file[out->n++], sizeof(out->file[0]), "%s", pf.filename);
		if (fr[i].code & GP_PY_FRAME_ENTRY) {
			snprintf(out->text[out->n], sizeof(out->text[0]), "|");
			out->file[out->n++][0] = '\0';
		}
	}
}

/* Walks tid until its youngest frame sits on want_leaf_line (the thread may
 * still be between its readiness write and the sleep), then resolves. */
static void walk_resolved(struct fixture *f, pid_t tid, struct pycode_cache *c,
			  struct resolved *out)
{
	struct gp_py_frame fr[GP_PY_MAX_FRAMES];
	struct timespec ts = { 0, 20 * 1000 * 1000 }, t0, now;
	enum gp_py_walk_status st;
	char leaf[64];
	uint32_t n;

	snprintf(leaf, sizeof(leaf), "inner:%d", line_of("inner"));
	/* Sleeping in inner() is where the thread spends its time: 30 s only fails a broken walk. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (now = t0; now.tv_sec - t0.tv_sec < 30; clock_gettime(CLOCK_MONOTONIC, &now)) {
		assert_int_equal(pyruntime__walk_thread(f->bounded, f->pid, &f->rt.config, tid, fr,
							GP_PY_MAX_FRAMES, &n, &st), 0);
		assert_int_equal(st, GP_PY_WALK_OK);
		resolve(f, c, fr, n, out);
		if (out->n && !strcmp(out->text[0], leaf))
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("leaf frame is %s, want %s", out->n ? out->text[0] : "(none)", leaf);
}

static void expect_seq(const struct resolved *r, size_t from, const char *const *want,
		       size_t n_want)
{
	size_t i;

	assert_true(r->n >= from + n_want);
	for (i = 0; i < n_want; i++)
		assert_string_equal(r->text[from + i], want[i]);
}

static bool has_entry_markers(const struct fixture *f)
{
	return f->rt.config.entry_kind != GP_PY_ENTRY_NONE;
}

/* Waits until pid's comm is want (it exec'd), at most secs: false if not. */
static bool wait_for_comm(pid_t pid, const char *want, int secs)
{
	struct timespec t0, now, ms = { 0, 1000 * 1000 };
	char path[64], comm[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		FILE *fp = fopen(path, "r");
		bool same = false;

		if (fp) {
			same = fgets(comm, sizeof(comm), fp) && !strncmp(comm, want, strlen(want)) &&
			       comm[strlen(want)] == '\n';
			fclose(fp);
		}
		if (same)
			return true;
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < secs);
	return false;
}

/* ------------------------------------------------------------------ tests */

static void test_a_process_without_python_is_reported_as_no_cpython(void **state)
{
	struct fixture *f = *state;
	struct pyruntime rt;
	pid_t pid;
	int err;

	err = pyruntime__detect(f->bounded, getpid(), &rt);
	assert_int_equal(err, -ENOENT);
	assert_non_null(strstr(pyruntime__strerror(err), "no CPython"));
	if (access("/bin/sleep", X_OK))
		SKIP_BECAUSE("no /bin/sleep");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	/* A copy of us until exec (no CPython either): look once it runs sleep. */
	assert_true(wait_for_comm(pid, "sleep", 30));
	assert_int_equal(pyruntime__detect(f->bounded, pid, &rt), -ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_the_runtime_version_matches_sys_hexversion(void **state)
{
	struct fixture *f = *state;

	NEED_PYTHON(f);
	print_message("[  INFO    ] %s: CPython %u.%u.%u in %s, _PyRuntime at %#llx\n",
		      test_python(), f->rt.major, f->rt.minor, f->rt.micro, f->rt.path,
		      (unsigned long long)f->rt.runtime_addr);
	assert_int_equal(f->rt.config.version >> 16, f->hexversion >> 16);
	if (f->rt.minor >= 11)
		assert_int_equal(f->rt.config.version, f->hexversion);
	assert_true(f->rt.runtime_addr != 0);
	assert_true(f->rt.config.interp_head_addr > f->rt.runtime_addr);
}

static void test_the_main_thread_resolves_to_names_files_and_lines_in_order(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct resolved *r = calloc(1, sizeof(*r));
	char want[5][64];
	size_t i, j;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	walk_resolved(f, f->pid, c, r);
	/* Without the boundaries: exactly these frames, in this order. */
	snprintf(want[0], 64, "inner:%d", line_of("inner"));
	snprintf(want[1], 64, "cl\xc3\xa9:%d", line_of("cle"));
	snprintf(want[2], 64, "middle:%d", line_of("middle"));
	snprintf(want[3], 64, "outer:%d", line_of("outer"));
	snprintf(want[4], 64, "<module>:%d", line_of("module"));
	for (i = 0, j = 0; i < r->n; i++) {
		if (!strcmp(r->text[i], "|"))
			continue;
		assert_true(j < 5);
		assert_string_equal(r->text[i], want[j]);
		assert_string_equal(r->file[i], f->path);
		j++;
	}
	assert_int_equal(j, 5);
	pycode_cache__destroy(c);
	free(r);
}

static void test_the_c_call_inside_sorted_is_marked_as_an_entry(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct resolved *r = calloc(1, sizeof(*r));
	char w[7][64];
	const char *want[7];
	size_t i;

	NEED_PYTHON(f);
	assert_non_null(r);
	if (!has_entry_markers(f)) {
		free(r);
		SKIP_BECAUSE("CPython 3.10 frames do not record C boundaries");
	}
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	walk_resolved(f, f->pid, c, r);
	snprintf(w[0], 64, "inner:%d", line_of("inner"));
	snprintf(w[1], 64, "cl\xc3\xa9:%d", line_of("cle"));
	snprintf(w[2], 64, "|"); /* sorted() is C: clé was entered from it */
	snprintf(w[3], 64, "middle:%d", line_of("middle"));
	snprintf(w[4], 64, "outer:%d", line_of("outer"));
	snprintf(w[5], 64, "<module>:%d", line_of("module"));
	snprintf(w[6], 64, "|"); /* the module was run from C */
	for (i = 0; i < 7; i++)
		want[i] = w[i];
	expect_seq(r, 0, want, 7);
	assert_int_equal(r->n, 7);
	pycode_cache__destroy(c);
	free(r);
}

static void test_a_second_thread_has_its_own_chain(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct resolved *r = calloc(1, sizeof(*r));
	char w0[64], w1[64];
	const char *want[2] = { w0, w1 };
	size_t i;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_true(f->worker_tid > 0);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	walk_resolved(f, f->worker_tid, c, r);
	snprintf(w0, 64, "inner:%d", line_of("inner"));
	/* qualname (3.11+) names the class; 3.10 has only co_name. */
	snprintf(w1, 64, "%s:%d",
		 f->rt.minor >= 11 ? "W\xc3\xb6rker.run_\xe5\xb7\xa5\xe4\xbd\x9c"
				   : "run_\xe5\xb7\xa5\xe4\xbd\x9c",
		 line_of("run"));
	expect_seq(r, 0, want, 2);
	assert_string_equal(r->file[1], f->path);
	/* Then threading.py's frames, ending in Thread._bootstrap; none of ours. */
	assert_true(r->n > 3);
	for (i = 2; i < r->n; i++) {
		if (!strcmp(r->text[i], "|"))
			continue;
		assert_null(strstr(r->text[i], "outer"));
		assert_non_null(strstr(r->file[i], "threading.py"));
	}
	i = r->n - 1;
	if (!strcmp(r->text[i], "|"))
		i--;
	assert_non_null(strstr(r->text[i], "_bootstrap:"));
	pycode_cache__destroy(c);
	free(r);
}

static void test_each_code_object_is_read_once(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct resolved *r = calloc(1, sizeof(*r));
	unsigned long hits, misses, hits2, misses2;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	walk_resolved(f, f->pid, c, r);
	pycode_cache__stats(c, &hits, &misses);
	assert_true(misses >= 5);
	walk_resolved(f, f->pid, c, r);
	pycode_cache__stats(c, &hits2, &misses2);
	assert_int_equal(misses2, misses);
	assert_true(hits2 >= hits + 5);
	pycode_cache__destroy(c);
	free(r);
}

/*
 * The names and line tables a process's cache holds are bounded in bytes
 * too: past the bound it is flushed and objects are read again (here a
 * bound that holds two of them: the second walk reads them all again).
 */
static void test_the_cache_is_bounded_in_bytes(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct resolved *r = calloc(1, sizeof(*r));
	unsigned long hits, misses, hits2, misses2;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	pycode_cache__set_bytes_max(c, 2 * (strlen(f->path) + 1 + 16 + 64));
	walk_resolved(f, f->pid, c, r);
	pycode_cache__stats(c, &hits, &misses);
	walk_resolved(f, f->pid, c, r);
	pycode_cache__stats(c, &hits2, &misses2);
	assert_true(misses2 >= misses + 3);
	pycode_cache__destroy(c);
	free(r);
}

/*
 * Every process's cache shares one bound (mem_share.h): past it, a cache
 * over its share is flushed rather than grow, and the caches within theirs
 * keep what they hold. Two caches of one process stand for two processes
 * (a third, alone, measures what a walk's objects take): the bound is a
 * walk and a half; the first holds a walk's objects, the second, past the
 * bound and its share, gives way (it reads its objects again), the first
 * keeps every one, and what both hold stays within the bound and a share.
 */
static void test_caches_of_many_processes_share_one_bound(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *one, *a, *b;
	struct resolved *r = calloc(1, sizeof(*r));
	unsigned long hits, misses, hits2, misses2;
	struct mem_share share;
	size_t walk;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &one), 0);
	walk_resolved(f, f->pid, one, r);
	walk = pycode_cache__bytes(one); /* what one walk's objects take */
	pycode_cache__destroy(one);
	assert_true(walk > 0);

	mem_share__init(&share, walk + walk / 2);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &a), 0);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &b), 0);
	pycode_cache__set_share(a, &share);
	pycode_cache__set_share(b, &share);
	walk_resolved(f, f->pid, a, r);
	assert_int_equal(pycode_cache__bytes(a), walk);
	assert_int_equal(mem_share__bytes(&share), walk);

	walk_resolved(f, f->pid, b, r);
	pycode_cache__stats(b, &hits, &misses);
	walk_resolved(f, f->pid, b, r);
	pycode_cache__stats(b, &hits2, &misses2);
	assert_true(misses2 > misses); /* b gave way: it reads again */
	assert_true(mem_share__refused(&share) > 0);
	assert_true(pycode_cache__bytes(b) <= share.max / 2);

	pycode_cache__stats(a, &hits, &misses);
	walk_resolved(f, f->pid, a, r);
	pycode_cache__stats(a, &hits2, &misses2);
	assert_int_equal(misses2, misses); /* a kept every object */
	assert_int_equal(pycode_cache__bytes(a), walk);
	assert_true(mem_share__bytes(&share) <= share.max + share.max / 2);
	assert_int_equal(mem_share__bytes(&share), pycode_cache__bytes(a) + pycode_cache__bytes(b));

	pycode_cache__destroy(b);
	assert_int_equal(mem_share__bytes(&share), walk);
	pycode_cache__destroy(a);
	assert_int_equal(mem_share__bytes(&share), 0);
	assert_int_equal(share.holders, 0);
	free(r);
}

/*
 * A stack being named keeps each frame's name while it looks up the next
 * (user/session/stacks.c): between a hold and its release the names stay
 * valid even when the cache fills and is flushed on the way (here a bound
 * of two objects, so every walk flushes it). Without the hold they were
 * freed under the caller: ASan calls that a use after free, and glibc's
 * free list writes over their first bytes.
 */
static void test_names_handed_out_while_held_outlive_a_flush(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *names, *c;
	struct resolved *r = calloc(1, sizeof(*r));
	struct gp_py_frame fr[GP_PY_MAX_FRAMES];
	const char *kept[GP_PY_MAX_FRAMES];
	char want[GP_PY_MAX_FRAMES][PYCODE_NAME_MAX];
	enum gp_py_walk_status st;
	struct pycode_frame pf;
	uint32_t n, k = 0;

	NEED_PYTHON(f);
	assert_non_null(r);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &names), 0);
	walk_resolved(f, f->pid, names, r); /* the thread sleeps in inner() now */
	assert_int_equal(pyruntime__walk_thread(f->bounded, f->pid, &f->rt.config, f->pid, fr,
						GP_PY_MAX_FRAMES, &n, &st), 0);
	assert_int_equal(st, GP_PY_WALK_OK);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	pycode_cache__set_bytes_max(c, 2 * (strlen(f->path) + 1 + 16 + 64));
	pycode_cache__hold(c);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t code = fr[i].code & ~GP_PY_FRAME_FLAGS;

		if (fr[i].code == GP_PY_FRAME_SHIM || pycode_cache__lookup(names, code, fr[i].instr, &pf))
			continue;
		snprintf(want[k], sizeof(want[k]), "%s", pf.qualname);
		assert_int_equal(pycode_cache__lookup(c, code, fr[i].instr, &pf), 0);
		kept[k++] = pf.qualname;
	}
	assert_true(k >= 5);
	for (uint32_t i = 0; i < k; i++)
		assert_string_equal(kept[i], want[i]);
	pycode_cache__release(c);
	pycode_cache__destroy(c);
	pycode_cache__destroy(names);
	free(r);
}

static void test_a_garbage_code_address_is_an_error_not_a_crash(void **state)
{
	struct fixture *f = *state;
	struct pycode_cache *c;
	struct pycode_frame pf;

	NEED_PYTHON(f);
	assert_int_equal(pycode_cache__new(f->bounded, f->pid, &f->rt.code, &c), 0);
	assert_int_equal(pycode_cache__lookup(c, 0, 0, &pf), -EINVAL);
	assert_int_equal(pycode_cache__lookup(c, 0x1001, 0, &pf), -EINVAL);  /* misaligned */
	assert_int_equal(pycode_cache__lookup(c, 0x1000, 0, &pf), -EFAULT);  /* unmapped */
	assert_int_equal(pycode_cache__lookup(c, 0x7ffffffff000ull, 0, &pf), -EFAULT);
	/* Mapped, aligned, but not a code object: _PyRuntime itself. */
	assert_int_equal(pycode_cache__lookup(c, f->rt.runtime_addr, 0, &pf), -EINVAL);
	/* A thread state is not one either. */
	assert_int_equal(pycode_cache__lookup(c, f->rt.config.interp_head_addr, 0, &pf), -EINVAL);
	pycode_cache__destroy(c);
}

static void test_a_wrong_thread_offset_walks_to_no_thread_not_to_garbage(void **state)
{
	struct fixture *f = *state;
	struct gp_py_config bad = f->rt.config;
	struct gp_py_frame fr[GP_PY_MAX_FRAMES];
	enum gp_py_walk_status st;
	uint64_t key;
	uint32_t n;

	NEED_PYTHON(f);
	assert_int_equal(pyruntime__thread_key(f->bounded, f->pid, &f->rt.config, &key), 0);
	bad.tstate_thread_id += 8;
	assert_int_equal(pyruntime__walk_key(f->bounded, f->pid, &bad, key, fr, GP_PY_MAX_FRAMES,
					     &n, &st), 0);
	assert_int_not_equal(st, GP_PY_WALK_OK);
	/* Nobody's thread: found by no key. */
	assert_int_equal(pyruntime__walk_key(f->bounded, f->pid, &f->rt.config, 0xdead0000beefull,
					     fr, GP_PY_MAX_FRAMES, &n, &st), 0);
	assert_int_equal(st, GP_PY_WALK_NO_THREAD);
	assert_int_equal(n, 0);
	/* The bound holds: two frames asked, two copied, truncated. */
	assert_int_equal(pyruntime__walk_key(f->bounded, f->pid, &f->rt.config, key, fr, 2, &n,
					     &st), 0);
	assert_int_equal(st, GP_PY_WALK_TRUNCATED);
	assert_int_equal(n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_process_without_python_is_reported_as_no_cpython),
		cmocka_unit_test(test_the_runtime_version_matches_sys_hexversion),
		cmocka_unit_test(test_the_main_thread_resolves_to_names_files_and_lines_in_order),
		cmocka_unit_test(test_the_c_call_inside_sorted_is_marked_as_an_entry),
		cmocka_unit_test(test_a_second_thread_has_its_own_chain),
		cmocka_unit_test(test_each_code_object_is_read_once),
		cmocka_unit_test(test_the_cache_is_bounded_in_bytes),
		cmocka_unit_test(test_caches_of_many_processes_share_one_bound),
		cmocka_unit_test(test_names_handed_out_while_held_outlive_a_flush),
		cmocka_unit_test(test_a_garbage_code_address_is_an_error_not_a_crash),
		cmocka_unit_test(test_a_wrong_thread_offset_walks_to_no_thread_not_to_garbage),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
