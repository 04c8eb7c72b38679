/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for user/proc/: liveness, comm, pids, maps (libraries and
 * memfds), NSpid parsing and thread translation, cgroup paths and ids, and
 * opening inside a fake root without escaping it (through openat2 and
 * through the fallback walker).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/util/bounded.h"

#include "tests/skip.h"

static void read_fd_all(int fd, char *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap - 1);

	assert_true(n >= 0);
	buf[n] = '\0';
}

/* ------------------------------------------------------------ liveness, comm */

static void test_self_is_alive(void **state)
{
	assert_true(proc__alive(getpid()));
}

static void test_nonpositive_and_unused_pids_are_not_alive(void **state)
{
	assert_false(proc__alive(0));
	assert_false(proc__alive(-1));
	assert_false(proc__alive(INT_MAX));
}

static void test_child_is_alive_then_a_zombie_is_not_alive_then_gone(void **state)
{
	int pfd[2];
	siginfo_t si;
	pid_t child;
	char c = 'x', comm[64];

	assert_int_equal(pipe(pfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pfd[1]);
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	assert_true(proc__alive(child));
	assert_int_equal(proc__comm(child, comm, sizeof(comm)), 0);

	assert_int_equal(write(pfd[1], &c, 1), 1);
	close(pfd[1]);
	/* Wait for the exit without reaping: the child stays a zombie. */
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(si.si_pid, child);
	assert_false(proc__alive(child));

	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_false(proc__alive(child));
	assert_int_equal(proc__comm(child, comm, sizeof(comm)), -ENOENT);
}

/*
 * A child named with a ')' and spaces spins 0.4 s of CPU on 48 MiB it
 * touched, then waits: its usage says both (comm parsed past the last ')').
 */
static void test_usage_of_a_child_counts_its_cpu_and_peak_memory(void **state)
{
	int ready[2];
	double cpu = 0;
	unsigned long hwm = 0;
	char c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec t0, t;
		size_t n = 48u << 20, i;
		volatile char *p = malloc(n);

		prctl(PR_SET_NAME, "a) b c) d", 0, 0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* a failed assert leaves none behind */
		for (i = 0; i < n; i += 4096)
			p[i] = 1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 400000000L);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(p[0]);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(proc__usage(pid, &cpu, &hwm), 0);
	print_message("child: cpu %.2f s, VmHWM %lu KiB\n", cpu, hwm);
	assert_true(cpu >= 0.35 && cpu < 5.0);
	assert_true(hwm >= 48u << 10 && hwm < 1u << 20);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	assert_int_not_equal(proc__usage(pid, &cpu, &hwm), 0);
}

static void test_comm_of_self_is_what_prctl_set_even_with_parens_and_spaces(void **state)
{
	char saved[32] = { 0 }, comm[32];

	assert_int_equal(prctl(PR_GET_NAME, saved), 0);
	assert_int_equal(prctl(PR_SET_NAME, "gp) Z (x"), 0);
	assert_int_equal(proc__comm(getpid(), comm, sizeof(comm)), 0);
	assert_string_equal(comm, "gp) Z (x");
	/* A comm that looks like a state must not fool the stat parser. */
	assert_true(proc__alive(getpid()));
	assert_int_equal(prctl(PR_SET_NAME, saved), 0);
}

static void test_comm_that_does_not_fit_is_refused_and_buffer_untouched(void **state)
{
	char saved[32] = { 0 }, buf[4] = "abc";

	assert_int_equal(prctl(PR_GET_NAME, saved), 0);
	assert_int_equal(prctl(PR_SET_NAME, "longer-name"), 0);
	assert_int_equal(proc__comm(getpid(), buf, sizeof(buf)), -ENAMETOOLONG);
	assert_string_equal(buf, "abc");
	assert_int_equal(prctl(PR_SET_NAME, saved), 0);
}

static void test_list_pids_holds_self_and_is_ascending(void **state)
{
	pid_t *pids = NULL;
	size_t n = 0, i;
	bool self = false;

	assert_int_equal(proc__list_pids(&pids, &n), 0);
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		assert_true(pids[i] > 0);
		if (i)
			assert_true(pids[i - 1] < pids[i]);
		self |= pids[i] == getpid();
	}
	assert_true(self);
	free(pids);
}

/* ------------------------------------------------------------ maps */

static void test_find_libs_on_self_finds_libc_with_a_host_path_that_opens(void **state)
{
	struct proc_lib *libs = NULL;
	size_t n = 0;
	char want[64];
	struct statfs sfs;
	struct stat st;
	int fd;

	assert_int_equal(proc__find_libs(getpid(), "libc.so", &libs, &n), 0);
	assert_int_equal(n, 1);
	assert_non_null(strstr(libs[0].path, "/libc.so"));
	snprintf(want, sizeof(want), "/proc/%d/root/", (int)getpid());
	assert_memory_equal(libs[0].host_path, want, strlen(want));
	assert_string_equal(libs[0].host_path + strlen(want) - 1, libs[0].path);

	fd = open(libs[0].host_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(fstatfs(fd, &sfs), 0);
	close(fd);
	assert_true(st.st_ino == libs[0].ino);
	if (sfs.f_type != OVERLAYFS_SUPER_MAGIC)   /* maps shows the real layer's dev */
		assert_true(st.st_dev == libs[0].dev);

	/* The safe way to open it reaches the same file. */
	fd = proc__root_open(getpid(), libs[0].path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_true(st.st_ino == libs[0].ino);
	free(libs);
}

static void *map_file_exec(const char *path, size_t *ret_len)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, pg), 0);
	p = mmap(NULL, (size_t)pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	*ret_len = (size_t)pg;
	return p;
}

static void test_find_libs_finds_paths_with_spaces_and_skips_deleted_files(void **state)
{
	char dir[] = "/tmp/gp-proc-libs-XXXXXX", spaced[PATH_MAX], deleted[PATH_MAX];
	struct proc_lib *libs = NULL;
	size_t n = 0, l1, l2;
	void *p1, *p2;

	assert_non_null(mkdtemp(dir));
	snprintf(spaced, sizeof(spaced), "%s/libgptest a b.so.1", dir);
	snprintf(deleted, sizeof(deleted), "%s/libgptest-gone.so", dir);
	p1 = map_file_exec(spaced, &l1);
	p2 = map_file_exec(deleted, &l2);
	if (p1 == MAP_FAILED || p2 == MAP_FAILED) {
		unlink(spaced);
		unlink(deleted);
		rmdir(dir);
		SKIP_BECAUSE("cannot map an executable file under /tmp (noexec?)");
	}
	assert_int_equal(unlink(deleted), 0);

	assert_int_equal(proc__find_libs(getpid(), "libgptest", &libs, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(libs[0].path, spaced);
	free(libs);

	munmap(p1, l1);
	munmap(p2, l2);
	unlink(spaced);
	rmdir(dir);
}

static void test_find_libs_without_a_match_returns_nothing(void **state)
{
	struct proc_lib *libs = (void *)1;
	size_t n = 7;

	assert_int_equal(proc__find_libs(getpid(), "libno-such-lib-gp.so", &libs, &n), 0);
	assert_int_equal(n, 0);
	assert_null(libs);
	assert_int_equal(proc__find_libs(getpid(), "a/b", &libs, &n), -EINVAL);
}

static void test_maps_line_parser_reads_kernel_lines(void **state)
{
	static const char l1[] =
		"7f704e429000-7f704e57f000 r-xp 00026000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n";
	static const char l2[] = "7ffd1c1f2000-7ffd1c213000 rw-p 00000000 00:00 0                          [stack]";
	static const char l3[] = "55d0c8a00000-55d0c8a21000 rw-p 00000000 00:00 0";
	static const char l4[] = "7f0000000000-7f0000001000 rw-s 00000000 00:01 1234 /memfd:gp ring (deleted)";
	struct proc_maps_line ml;

	assert_int_equal(proc__parse_maps_line(l1, strlen(l1), &ml), 0);
	assert_true(ml.map.start == 0x7f704e429000ULL);
	assert_true(ml.map.end == 0x7f704e57f000ULL);
	assert_true(ml.map.offset == 0x26000);
	assert_string_equal(ml.map.perms, "r-xp");
	assert_true(ml.map.dev == makedev(0xfe, 0));
	assert_true(ml.map.ino == 332835);
	assert_int_equal(ml.path_len, strlen("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	assert_memory_equal(ml.path, "/usr/lib/x86_64-linux-gnu/libc.so.6", ml.path_len);

	assert_int_equal(proc__parse_maps_line(l2, strlen(l2), &ml), 0);
	assert_memory_equal(ml.path, "[stack]", ml.path_len);
	assert_int_equal(proc__parse_maps_line(l3, strlen(l3), &ml), 0);
	assert_int_equal(ml.path_len, 0);
	assert_int_equal(proc__parse_maps_line(l4, strlen(l4), &ml), 0);
	assert_memory_equal(ml.path, "/memfd:gp ring (deleted)", ml.path_len);
}

static void test_maps_line_parser_rejects_garbage(void **state)
{
	static const char *bad[] = {
		"",
		"7f00-7e00 r-xp 00000000 00:00 0",          /* end before start */
		"7f00-7f10 r-xq 00000000 00:00 0",          /* bad perms */
		"7f00-7f10 r-xp 0000000g 00:00 0",          /* bad hex */
		"-7f10 r-xp 00000000 00:00 0",
		"7f00-7f10 r-xp 00000000 00:00",            /* no inode */
		"7f00-7f10 r-xp 00000000 0000 0",           /* no ':' */
		"+7f00-7f10 r-xp 00000000 00:00 0",         /* sign */
		"0x7f00-7f10 r-xp 00000000 00:00 0",        /* prefix */
		"7f00-7f10 r-xp 00000000 00:00 -1",
		"7f00-7f10 r-xp 00000000 100000000:00 0",   /* major > 32 bits */
		"7f00-17f1000000000000000 r-xp 00000000 00:00 0", /* > 64 bits */
		"7f00-7f10 r-xp 00000000 00:00 99999999999999999999999",
	};
	struct proc_maps_line ml;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (proc__parse_maps_line(bad[i], strlen(bad[i]), &ml) == 0)
			fail_msg("accepted: \"%s\"", bad[i]);
	}
}

static void test_memfd_with_a_known_name_is_found_and_its_map_files_path_opens(void **state)
{
	static const char name[] = "gpuprobe test ring";
	long pg = sysconf(_SC_PAGESIZE);
	struct proc_mapping m;
	char path[128], want[128];
	struct stat st_memfd, st_mf;
	void *p;
	int fd, mf;

	if (geteuid() != 0)
		SKIP_BECAUSE("opening map_files needs root (CAP_SYS_ADMIN)");
	fd = (int)syscall(SYS_memfd_create, name, 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, pg * 2), 0);
	p = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);

	assert_int_equal(proc__find_memfd(getpid(), name, &m), 0);
	assert_true(m.start == (uintptr_t)p);
	assert_true(m.end == (uintptr_t)p + (uintptr_t)pg * 2);
	assert_true(m.offset == 0);
	assert_string_equal(m.perms, "rw-s");

	assert_int_equal(proc__map_files_path(getpid(), &m, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "/proc/%d/map_files/%lx-%lx", (int)getpid(),
		 (unsigned long)(uintptr_t)p, (unsigned long)((uintptr_t)p + (uintptr_t)pg * 2));
	assert_string_equal(path, want);
	mf = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(mf >= 0);
	assert_int_equal(fstat(fd, &st_memfd), 0);
	assert_int_equal(fstat(mf, &st_mf), 0);
	assert_true(st_memfd.st_ino == st_mf.st_ino);
	close(mf);

	/* A prefix of the name is not the name. */
	assert_int_equal(proc__find_memfd(getpid(), "gpuprobe test", &m), -ENOENT);
	munmap(p, (size_t)pg * 2);
	close(fd);
	assert_int_equal(proc__find_memfd(getpid(), name, &m), -ENOENT);
}

static void test_map_files_path_is_lowercase_hex_without_prefix(void **state)
{
	struct proc_mapping m = { .start = 0x7F00ABC000ULL, .end = 0x7F00ABD000ULL };
	char buf[64], small[8];

	assert_int_equal(proc__map_files_path(42, &m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/proc/42/map_files/7f00abc000-7f00abd000");
	assert_int_equal(proc__map_files_path(42, &m, small, sizeof(small)), -ENAMETOOLONG);
}

/* ------------------------------------------------------------ PID namespaces */

static int nspid(const char *text, pid_t *inner, pid_t *outer)
{
	return proc__parse_nspid(text, strlen(text), inner, outer);
}

static void test_nspid_of_one_namespace_level_is_both_innermost_and_outermost(void **state)
{
	pid_t in = 0, out = 0;

	assert_int_equal(nspid("Name:\tx\nTgid:\t5\nNSpid:\t5128\nNSpgid:\t1\n", &in, &out), 0);
	assert_int_equal(in, 5128);
	assert_int_equal(out, 5128);
}

static void test_nspid_of_two_levels_gives_the_last_as_innermost(void **state)
{
	pid_t in = 0, out = 0;

	assert_int_equal(nspid("Pid:\t4242\nNSpid:\t4242\t7\n", &in, &out), 0);
	assert_int_equal(in, 7);
	assert_int_equal(out, 4242);
	/* Without a trailing newline, at the very start of the text. */
	assert_int_equal(nspid("NSpid:\t100\t20\t3", &in, &out), 0);
	assert_int_equal(in, 3);
	assert_int_equal(out, 100);
}

static void test_nspid_malformed_lines_are_rejected_and_outputs_untouched(void **state)
{
	static const char *bad[] = {
		"NSpid:\n",
		"NSpid:\t\t\n",
		"NSpid:\t12a\n",
		"NSpid:\t-5\n",
		"NSpid:\t+5\n",
		"NSpid:\t0\n",
		"NSpid:\t5\t0x10\n",
		"NSpid:\t5\nNSpid:\t6\n",   /* repeated */
	};
	pid_t in = -7, out = -7;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (nspid(bad[i], &in, &out) >= 0)
			fail_msg("accepted: \"%s\"", bad[i]);
	}
	assert_int_equal(in, -7);
	assert_int_equal(out, -7);
}

static void test_nspid_huge_numbers_are_out_of_range(void **state)
{
	pid_t in = 0;

	assert_int_equal(nspid("NSpid:\t2147483648\n", &in, NULL), -ERANGE);
	assert_int_equal(nspid("NSpid:\t1\t99999999999999999999999999\n", &in, NULL), -ERANGE);
	assert_int_equal(nspid("NSpid:\t1234567890123456789012345678901234567890\n", &in, NULL),
			 -ERANGE);
	assert_int_equal(nspid("NSpid:\t2147483647\n", &in, NULL), 0);
	assert_int_equal(in, INT_MAX);
}

static void test_nspid_missing_line_is_not_found(void **state)
{
	pid_t in;

	assert_int_equal(nspid("Name:\tx\nPid:\t5\n", &in, NULL), -ENOENT);
	assert_int_equal(nspid("", &in, NULL), -ENOENT);
	/* Only a line that starts with the key counts. */
	assert_int_equal(nspid("Name:\tNSpid:\t5\n", &in, NULL), -ENOENT);
	assert_int_equal(proc__parse_nspid(NULL, 0, &in, NULL), -ENOENT);
}

static void test_nspid_text_is_not_read_past_its_length(void **state)
{
	/* The 9 is past len: the line must read as "NSpid:\t12". */
	static const char text[] = "NSpid:\t129";
	pid_t in = 0;

	assert_int_equal(proc__parse_nspid(text, sizeof(text) - 2, &in, NULL), 0);
	assert_int_equal(in, 12);
}

static void test_ns_pid_of_self_is_self_outside_a_new_namespace(void **state)
{
	pid_t ns = 0;

	assert_int_equal(proc__ns_pid(getpid(), &ns), 0);
	assert_int_equal(ns, getpid());
	assert_int_equal(proc__ns_pid(INT_MAX, &ns), -ENOENT);
}

static void test_child_in_a_new_pid_namespace_is_pid_one_there(void **state)
{
	struct proc_tid_map *map = NULL;
	pid_t child, ns = 0, host = 0;
	int pfd[2];
	char c = 'x';

	if (geteuid() != 0)
		SKIP_BECAUSE("a new PID namespace needs root");
	assert_int_equal(pipe(pfd), 0);
	/* fork() into a new PID namespace: the child is pid 1 inside it. */
	child = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
	if (child < 0) {
		close(pfd[0]);
		close(pfd[1]);
		SKIP_BECAUSE("cannot create a PID namespace here");
	}
	if (child == 0) {
		close(pfd[1]);
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	assert_int_equal(proc__ns_pid(child, &ns), 0);
	assert_int_equal(ns, 1);
	assert_int_equal(proc__ns_tids(child, &map), 0);
	assert_int_equal(proc_tid_map__size(map), 1);
	assert_true(proc_tid_map__lookup(map, 1, &host));
	assert_int_equal(host, child);
	assert_false(proc_tid_map__lookup(map, child == 1 ? 2 : child, &host));
	proc_tid_map__free(map);
	assert_int_equal(write(pfd[1], &c, 1), 1);
	close(pfd[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
}

/*
 * A process with NGROUPS_MAX supplementary groups of 10 digits: its status
 * file is over 700 KiB, Groups before NSpid. Its ids are still read.
 */
static void test_status_of_a_process_with_65536_groups_is_read_whole(void **state)
{
	struct proc_tid_map *map = NULL;
	pid_t child, ns = 0, host = 0;
	char path[64], c = 'x';
	uid_t uid = 1;
	int pfd[2], fd;
	size_t total = 0;
	ssize_t r;
	char *buf;

	if (geteuid() != 0)
		SKIP_BECAUSE("setgroups needs root");
	assert_int_equal(pipe(pfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		static gid_t groups[65536];
		size_t i;

		for (i = 0; i < 65536; i++)
			groups[i] = (gid_t)(4000000000u + i);
		close(pfd[1]);
		if (setgroups(65536, groups))
			_exit(1);
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	/* Wait for the groups: the status file's length says they are set. */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)child);
	buf = malloc(1 << 20);
	assert_non_null(buf);
	for (int tries = 0; tries < 100000 && total <= 65536; tries++) {
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		total = 0;
		while ((r = read(fd, buf, 1 << 20)) > 0)
			total += (size_t)r;
		close(fd);
		if (total <= 65536)
			sched_yield();
	}
	free(buf);
	assert_true(total > 65536);
	assert_int_equal(proc__ns_pid(child, &ns), 0);
	assert_int_equal(ns, child);
	assert_int_equal(proc__status_ids(child, &ns, &uid), 0);
	assert_int_equal(ns, child);
	assert_int_equal(uid, 0);
	assert_int_equal(proc__ns_tids(child, &map), 0);
	assert_true(proc_tid_map__lookup(map, child, &host));
	assert_int_equal(host, child);
	proc_tid_map__free(map);
	assert_int_equal(write(pfd[1], &c, 1), 1);
	close(pfd[1]);
	assert_int_equal(waitpid(child, NULL, 0), child);
}

#define N_THREADS 4

struct thread_arg {
	pthread_barrier_t *start, *stop;
	pid_t tid;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	a->tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(a->start);
	pthread_barrier_wait(a->stop);
	return NULL;
}

static void test_ns_tids_on_self_map_each_thread_to_itself(void **state)
{
	pthread_barrier_t start, stop;
	struct thread_arg args[N_THREADS];
	pthread_t th[N_THREADS];
	struct proc_tid_map *map = NULL;
	pid_t host = 0;
	int i;

	pthread_barrier_init(&start, NULL, N_THREADS + 1);
	pthread_barrier_init(&stop, NULL, N_THREADS + 1);
	for (i = 0; i < N_THREADS; i++) {
		args[i] = (struct thread_arg){ .start = &start, .stop = &stop };
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
	}
	pthread_barrier_wait(&start);

	assert_int_equal(proc__ns_tids(getpid(), &map), 0);
	assert_true(proc_tid_map__size(map) >= N_THREADS + 1);
	assert_true(proc_tid_map__lookup(map, getpid(), &host));
	assert_int_equal(host, getpid());
	for (i = 0; i < N_THREADS; i++) {
		host = 0;
		assert_true(proc_tid_map__lookup(map, args[i].tid, &host));
		assert_int_equal(host, args[i].tid);
	}
	host = 12345;
	assert_false(proc_tid_map__lookup(map, INT_MAX, &host));
	assert_int_equal(host, 12345);
	proc_tid_map__free(map);
	proc_tid_map__free(NULL);

	pthread_barrier_wait(&stop);
	for (i = 0; i < N_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&stop);
}

/* ------------------------------------------------------------ cgroups */

static void test_cgroup_path_of_self_is_the_v2_line(void **state)
{
	char path[PATH_MAX], text[8192], *line;
	int fd;

	assert_int_equal(proc__cgroup_path(getpid(), path, sizeof(path)), 0);
	assert_int_equal(path[0], '/');
	fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	read_fd_all(fd, text, sizeof(text));
	close(fd);
	line = strncmp(text, "0::", 3) == 0 ? text : strstr(text, "\n0::");
	assert_non_null(line);
	line += line == text ? 3 : 4;
	line[strcspn(line, "\n")] = '\0';
	assert_string_equal(path, line);
}

/* ------------------------------------------------------------ root_open */

typedef int (*root_open_fn)(int rootfd, const char *path, int flags);

struct fake_root {
	char dir[64];
	int fd;
};

static void write_file(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void make_link(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static void make_dir(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int rm_tree(const char *path)
{
	char cmd[PATH_MAX + 16];

	/* Only our own mkdtemp directory. */
	if (strncmp(path, "/tmp/gp-proc-", 13) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

/*
 * A fake root holding every trap:
 *   etc/passwd, etc/hostname    "fake-..." files
 *   abs -> /etc                 absolute: must stay inside
 *   up -> ../../..              climbs past the root
 *   sub/deep/up2 -> ../../../../etc
 *   sub/deep/abs2 -> /etc       absolute, from below the root
 *   self -> /proc/self/root     a path to a magic link
 *   loop1 -> loop2 -> loop1
 *   chain0 -> chain1 -> ... -> chain40 -> etc
 */
static int fake_root_setup(void **state)
{
	struct fake_root *r = calloc(1, sizeof(*r));
	char name[32], target[32];
	int i;

	assert_non_null(r);
	strcpy(r->dir, "/tmp/gp-proc-root-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	make_dir(r->dir, "etc");
	write_file(r->dir, "etc/passwd", "fake-passwd\n");
	write_file(r->dir, "etc/hostname", "fake-hostname\n");
	make_link(r->dir, "abs", "/etc");
	make_link(r->dir, "up", "../../..");
	make_dir(r->dir, "sub");
	make_dir(r->dir, "sub/deep");
	make_link(r->dir, "sub/deep/up2", "../../../../etc");
	make_link(r->dir, "sub/deep/abs2", "/etc");
	make_link(r->dir, "self", "/proc/self/root");
	make_link(r->dir, "loop1", "loop2");
	make_link(r->dir, "loop2", "loop1");
	for (i = 0; i < 41; i++) {
		snprintf(name, sizeof(name), "chain%d", i);
		snprintf(target, sizeof(target), "chain%d", i + 1);
		make_link(r->dir, name, i == 40 ? "etc" : target);
	}
	r->fd = open(r->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(r->fd >= 0);
	*state = r;
	return 0;
}

static int fake_root_teardown(void **state)
{
	struct fake_root *r = *state;

	close(r->fd);
	rm_tree(r->dir);
	free(r);
	return 0;
}

/* Opens path with fn and returns what it holds ("" on failure, err set). */
static int open_read(root_open_fn fn, int rootfd, const char *path, char *buf, size_t cap)
{
	int fd = fn(rootfd, path, O_RDONLY);

	buf[0] = '\0';
	if (fd < 0)
		return fd;
	read_fd_all(fd, buf, cap);
	close(fd);
	return 0;
}

static void check_stays_inside(root_open_fn fn, int rootfd)
{
	static const char *to_fake_passwd[] = {
		"etc/passwd", "/etc/passwd", "abs/passwd", "up/etc/passwd",
		"../../../etc/passwd", "/../etc/./passwd", "sub/deep/up2/passwd",
		"sub/deep/../../up/up/etc/passwd", "chain1/passwd", "sub/deep/abs2/passwd",
	};
	char buf[64];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(to_fake_passwd) / sizeof(to_fake_passwd[0]); i++) {
		assert_int_equal(open_read(fn, rootfd, to_fake_passwd[i], buf, sizeof(buf)), 0);
		if (strcmp(buf, "fake-passwd\n"))
			fail_msg("\"%s\" read \"%s\"", to_fake_passwd[i], buf);
	}
	assert_int_equal(open_read(fn, rootfd, "abs/hostname", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fake-hostname\n");

	/* Leads nowhere inside: must fail, not reach the host's /proc. */
	assert_true(open_read(fn, rootfd, "self/etc/passwd", buf, sizeof(buf)) < 0);
	assert_int_equal(open_read(fn, rootfd, "loop1", buf, sizeof(buf)), -ELOOP);
	assert_int_equal(open_read(fn, rootfd, "chain0/passwd", buf, sizeof(buf)), -ELOOP);
	assert_int_equal(open_read(fn, rootfd, "etc/passwd/", buf, sizeof(buf)), -ENOTDIR);
	assert_int_equal(open_read(fn, rootfd, "etc/nothing", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(open_read(fn, rootfd, "", buf, sizeof(buf)), -ENOENT);

	/* O_NOFOLLOW applies to the last component only. */
	fd = fn(rootfd, "abs", O_RDONLY | O_NOFOLLOW);
	assert_int_equal(fd, -ELOOP);
	fd = fn(rootfd, "abs/passwd", O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	close(fd);

	/* Paths that end on a directory open the directory inside. */
	fd = fn(rootfd, "up/..", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(faccessat(fd, "etc/passwd", F_OK, 0), 0);
	close(fd);

	assert_int_equal(fn(rootfd, "etc/new", O_WRONLY | O_CREAT), -EINVAL);
}

static void test_root_openat_stays_inside_a_fake_root(void **state)
{
	struct fake_root *r = *state;

	check_stays_inside(proc__root_openat, r->fd);
}

static void test_fallback_walker_stays_inside_a_fake_root(void **state)
{
	struct fake_root *r = *state;

	check_stays_inside(proc__root_walk, r->fd);
}

static void test_root_with_an_absolute_etc_symlink_never_reaches_host_etc(void **state)
{
	char dir[] = "/tmp/gp-proc-etc-XXXXXX", buf[256];
	root_open_fn fns[] = { proc__root_openat, proc__root_walk };
	size_t i;
	int rootfd;

	assert_non_null(mkdtemp(dir));
	make_link(dir, "etc", "/etc");   /* inside the root, "/etc" is this link */
	make_link(dir, "up", "../../..");
	rootfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(open_read(fns[i], rootfd, "etc/hostname", buf, sizeof(buf)), -ELOOP);
		assert_int_equal(open_read(fns[i], rootfd, "up/etc/passwd", buf, sizeof(buf)), -ELOOP);
	}
	close(rootfd);
	rm_tree(dir);
}

static void test_root_open_of_self_reaches_own_files(void **state)
{
	struct stat a, b;
	int fd;

	fd = proc__root_open(getpid(), "/proc/self/../self/status", O_RDONLY);
	/* /proc/self is a magic-ish link: refused or resolved, never a crash. */
	if (fd >= 0)
		close(fd);
	fd = proc__root_open(getpid(), "/etc/passwd", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat("/etc/passwd", &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(fd);
	assert_int_equal(proc__root_open(INT_MAX, "/etc/passwd", O_RDONLY), -ENOENT);
	assert_int_equal(proc__root_open(getpid(), "/etc/passwd", O_RDWR | O_TMPFILE), -EINVAL);
}

/* ------------------------------------------------------ opening a target's file */

/* tty_nr of /proc/self/stat: the controlling terminal, 0 for none. */
static long own_tty_nr(void)
{
	char buf[1024], *p;
	int fd = open("/proc/self/stat", O_RDONLY);
	long v = -1;

	read_fd_all(fd, buf, sizeof(buf));
	close(fd);
	p = strrchr(buf, ')');
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %ld", &v);
	return v;
}

/*
 * What a path in a target's maps names now is the target's choice: a FIFO
 * (an open blocks), a tty (a session leader without one would take it as its
 * controlling terminal, then SIGHUP when its master closes), a directory,
 * another file. Only the regular file with the maps line's identity opens,
 * and nothing else is opened even for a moment.
 */
static void test_open_file_opens_only_the_regular_file_it_was_told_of(void **state)
{
	char dir[] = "/tmp/gp-proc-open-XXXXXX", p[PATH_MAX], *slave;
	struct bounded *b = bounded__new();
	struct proc_file_id id;
	struct stat st;
	int rootfd, fd, master, status;
	pid_t child;

	assert_non_null(b);
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/f", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	id = (struct proc_file_id){ .dev = st.st_dev, .ino = st.st_ino };
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0644), 0);
	master = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	slave = ptsname(master);
	assert_non_null(slave);
	snprintf(p, sizeof(p), "%s/tty", dir);
	assert_int_equal(symlink(slave, p), 0);
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);

	snprintf(p, sizeof(p), "%s/f", dir);
	assert_int_equal(proc__open_file_at(b, 0, rootfd, p, &id, &fd), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(proc__open_file_at(b, 0, rootfd, p, NULL, &fd), -EINVAL);
	assert_int_equal(proc__open_file_at(b, 0, rootfd, dir, NULL, &fd), -EISDIR);
	id.ino++;
	snprintf(p, sizeof(p), "%s/f", dir);
	assert_int_equal(proc__open_file_at(b, 0, rootfd, p, &id, &fd), -ESTALE);
	/* A session leader without a terminal, as a daemon loader is. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		int cfd;

		if (setsid() < 0 || own_tty_nr() != 0)
			_exit(2);
		snprintf(p, sizeof(p), "%s/tty", dir);
		if (proc__open_file_at(b, 0, rootfd, p, NULL, &cfd) != -EINVAL)
			_exit(3);
		if (proc__open_file(b, getpid(), p, NULL, &cfd) != -EINVAL)
			_exit(4);
		_exit(own_tty_nr() == 0 ? 0 : 5);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(master);
	close(rootfd);
	rm_tree(dir);
	bounded__free(b);
}

/* map_files reaches the mapped file itself, with the same checks. */
static void test_open_mapped_reaches_the_mapped_file_whatever_its_path_names(void **state)
{
	char dir[] = "/tmp/gp-proc-mapped-XXXXXX", p[PATH_MAX], q[PATH_MAX];
	struct proc_file_id id;
	struct stat st, got;
	struct bounded *b;
	void *map;
	int fd;

	if (geteuid() != 0)
		SKIP_BECAUSE("map_files needs CAP_SYS_ADMIN");
	b = bounded__new();
	assert_non_null(b);
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/lib.so", dir);
	fd = open(p, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(fstat(fd, &st), 0);
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	/* The path now names a FIFO: the mapping still has its file. */
	snprintf(q, sizeof(q), "%s/other", dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(mkfifo(p, 0644), 0);
	id = (struct proc_file_id){ .dev = st.st_dev, .ino = st.st_ino };
	assert_int_equal(proc__open_file(b, getpid(), p, &id, &fd), -EINVAL);
	assert_int_equal(proc__open_mapped(b, getpid(), (uintptr_t)map, (uintptr_t)map + 4096, &id,
					   O_RDONLY, &fd), 0);
	assert_int_equal(fstat(fd, &got), 0);
	assert_true(got.st_ino == st.st_ino && got.st_dev == st.st_dev);
	close(fd);
	id.ino++;
	assert_int_equal(proc__open_mapped(b, getpid(), (uintptr_t)map, (uintptr_t)map + 4096, &id,
					   O_RDONLY, &fd), -ESTALE);
	munmap(map, 4096);
	rm_tree(dir);
	bounded__free(b);
}

/* Kernel mountinfo lines: ids, the superblock's device and options, root, type, optional fields or none. */
static void test_mountinfo_lines_give_id_device_and_type(void **state)
{
	const char *a = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue\n";
	const char *b = "2151 1852 0:158 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/x/rootfs "
			"rw,relatime - overlay overlay rw,lowerdir=/a:/b,upperdir=/u,workdir=/w";
	struct proc_mount m;

	(void)state;
	assert_int_equal(proc__parse_mountinfo_line(a, strlen(a), &m), 0);
	assert_int_equal(m.id, 36);
	assert_int_equal(m.dev, makedev(98, 0));
	assert_int_equal(m.point_len, 5);
	assert_memory_equal(m.point, "/mnt2", 5);
	assert_int_equal(m.type_len, 4);
	assert_memory_equal(m.type, "ext3", 4);
	assert_int_equal(m.root_len, 5);
	assert_memory_equal(m.root, "/mnt1", 5);
	assert_int_equal(m.super_len, 18);
	assert_memory_equal(m.super, "rw,errors=continue", 18);
	assert_int_equal(proc__parse_mountinfo_line(b, strlen(b), &m), 0);
	assert_int_equal(m.id, 2151);
	assert_int_equal(m.dev, makedev(0, 158));
	assert_memory_equal(m.type, "overlay", 7);
	/* A line that ends at its type has no superblock options. */
	assert_int_equal(proc__parse_mountinfo_line("1 0 0:5 / / rw - cgroup", 23, &m), 0);
	assert_int_equal(m.super_len, 0);
}

static void test_mountinfo_garbage_is_refused(void **state)
{
	const char *bad[] = {
		"",
		"36 35 98:0 /mnt1 /mnt2 rw - \n",                /* no type */
		"36 35 98:0 /mnt1 /mnt2 rw ext3 /dev/root rw\n", /* no "-" */
		"x 35 98:0 / / rw - ext3 a b\n",
		"36 35 980 / / rw - ext3 a b\n",                 /* no major:minor */
		"36 35 98:99999999 / / rw - ext3 a b\n",         /* minor out of range */
		"36 35 -1:0 / / rw - ext3 a b\n",
		"36  35 98:0 / / rw - ext3 a b\n",               /* an empty field */
		"99999999999 35 98:0 / / rw - ext3 a b\n",
	};
	struct proc_mount m = { .id = -7 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(proc__parse_mountinfo_line(bad[i], strlen(bad[i]), &m), -EINVAL);
	assert_int_equal(m.id, -7);
}

/* A table is searched by id, or by device and type; bad lines are passed over. */
static void test_mountinfo_find_by_id_or_by_device_and_type(void **state)
{
	const char *t = "garbage line\n"
			"20 1 0:40 / /a rw - fuse.x x rw\n"
			"21 1 0:41 / /b rw - overlay overlay rw\n"
			"22 1 0:41 / /c rw - overlay overlay rw\n";
	struct proc_mount m;

	(void)state;
	assert_true(proc__mountinfo_find(t, strlen(t), 22, 0, NULL, &m));
	assert_int_equal(m.dev, makedev(0, 41));
	assert_false(proc__mountinfo_find(t, strlen(t), 20, 0, "overlay", &m));
	assert_true(proc__mountinfo_find(t, strlen(t), -1, makedev(0, 41), "overlay", &m));
	assert_int_equal(m.id, 21);
	assert_false(proc__mountinfo_find(t, strlen(t), -1, makedev(0, 40), "overlay", &m));
	assert_false(proc__mountinfo_find(t, strlen(t), 23, 0, NULL, &m));
	/* No id, no device: the first of that type. */
	assert_true(proc__mountinfo_find(t, strlen(t), -1, 0, "overlay", &m));
	assert_int_equal(m.id, 21);
	assert_memory_equal(m.point, "/b", 2);
	assert_false(proc__mountinfo_find(t, strlen(t), -1, 0, "cgroup2", &m));
	/* The length is the bound: the last line cut off is not read past it. */
	assert_false(proc__mountinfo_find(t, strlen(t) - 30, 22, 0, NULL, &m));
}

/* Lines come whole and in order, empty ones too; the last needs no '\n'; nothing past the length. */
static void test_lines_of_a_text_come_in_order_to_its_length(void **state)
{
	const char *t = "ab\n\ncd", *line;
	size_t pos = 0, n;

	(void)state;
	assert_true(proc__next_line(t, strlen(t), &pos, &line, &n));
	assert_int_equal(n, 2);
	assert_memory_equal(line, "ab", 2);
	assert_true(proc__next_line(t, strlen(t), &pos, &line, &n));
	assert_int_equal(n, 0);
	assert_true(proc__next_line(t, strlen(t), &pos, &line, &n));
	assert_int_equal(n, 2);
	assert_memory_equal(line, "cd", 2);
	assert_false(proc__next_line(t, strlen(t), &pos, &line, &n));
	pos = 0;
	assert_true(proc__next_line(t, 3, &pos, &line, &n)); /* "ab\n": one line */
	assert_false(proc__next_line(t, 3, &pos, &line, &n));
	pos = 0;
	assert_false(proc__next_line(t, 0, &pos, &line, &n));
}

/* The mounts of a table one after the other, bad lines passed over. */
static void test_mountinfo_mounts_come_one_after_the_other(void **state)
{
	const char *t = "20 1 0:40 / /a rw - fuse.x x rw\n"
			"garbage\n"
			"21 1 0:41 / /b rw - overlay overlay rw";
	struct proc_mount m;
	size_t pos = 0;

	(void)state;
	assert_true(proc__mountinfo_next(t, strlen(t), &pos, &m));
	assert_int_equal(m.id, 20);
	assert_true(proc__mountinfo_next(t, strlen(t), &pos, &m));
	assert_int_equal(m.id, 21);
	assert_false(proc__mountinfo_next(t, strlen(t), &pos, &m));
}

/* In a mount namespace of its own: a kept table is read once, then again only after a mount. */
static int kept_table_child(void)
{
	struct proc_mount_table t = PROC_MOUNT_TABLE(0);
	char dir[] = "/tmp/gp-mtab-XXXXXX";
	const char *text, *before;
	size_t len;
	bool changed = false;
	int ret = 10;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) || !mkdtemp(dir))
		return 2;
	if (proc__mount_table_get(&t, &text, &len, &changed) || !changed)
		goto out;
	before = text;
	ret++;
	if (proc__mount_table_get(&t, &text, &len, &changed) || changed || text != before)
		goto out;
	ret++;
	if (memmem(text, len, dir, strlen(dir)) || mount("gp", dir, "tmpfs", 0, "size=64k"))
		goto out;
	ret++;
	if (proc__mount_table_get(&t, &text, &len, &changed) || !changed ||
	    !memmem(text, len, dir, strlen(dir)))
		goto out;
	ret = 0;
	umount2(dir, MNT_DETACH);
out:
	rmdir(dir);
	return ret;
}

static void test_a_kept_mount_table_is_read_again_only_after_a_mount(void **state)
{
	int status = 0;
	pid_t child;

	(void)state;
	if (geteuid() != 0)
		SKIP_BECAUSE("a mount namespace of its own needs root");
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(kept_table_child());
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		SKIP_BECAUSE("cannot make a private mount namespace here");
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The cgroup2 line of a cgroup file, wherever it is; none, or one not the kernel's, is said so. */
static void test_cgroup_v2_line_is_found_among_v1_lines(void **state)
{
	const char *v1 = "12:pids:/a\n1:name=systemd:/user.slice\n";
	const char *hybrid = "12:pids:/a\n0::/user.slice/x.scope\n1:cpu:/b";
	const char *bad = "0::user.slice\n";
	const char *p;
	size_t n;

	(void)state;
	assert_int_equal(proc__cgroup_v2_line(v1, strlen(v1), &p, &n), -ENOENT);
	assert_int_equal(proc__cgroup_v2_line(hybrid, strlen(hybrid), &p, &n), 0);
	assert_int_equal(n, strlen("/user.slice/x.scope"));
	assert_memory_equal(p, "/user.slice/x.scope", n);
	assert_int_equal(proc__cgroup_v2_line("0::/", 4, &p, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(proc__cgroup_v2_line(bad, strlen(bad), &p, &n), -EINVAL);
}

/* The loader's cgroup2 mount is a cgroup2 file system, or there is none in its table. */
static void test_cgroup2_mount_is_one(void **state)
{
	char dir[PATH_MAX], *text;
	struct statfs fs;
	size_t n;
	int err = proc__cgroup2_mount(dir, sizeof(dir));

	(void)state;
	if (err == -ENOENT) {
		assert_int_equal(proc__read_mount_table("/proc/self/mountinfo", &text, &n), 0);
		assert_null(strstr(text, " - cgroup2 "));
		free(text);
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal(statfs(dir, &fs), 0);
	assert_true(fs.f_type == CGROUP2_SUPER_MAGIC);
	assert_int_equal(proc__cgroup2_mount(dir, 2), -ENAMETOOLONG);
}

/* A file that is not on an overlay is never called a trusted overlay. */
static void test_a_file_off_any_overlay_is_not_a_trusted_overlay(void **state)
{
	int fd = open("/proc/self/status", O_PATH | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(proc__overlay_trusted(fd, getpid()), -EREMOTE);
	close(fd);
}

/* The real uid is the Uid line's first field; a missing or malformed line is refused. */
static void test_uid_of_a_status_text_is_its_first_field(void **state)
{
	const char *ok = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
	const char *bad[] = { "Name:\tx\n", "Uid:\t\n", "Uid:\t-1\t0\n", "Uid:\t12a\t0\n",
			      "Uid:\t4294967295\t0\n" };
	uid_t uid = 7;

	(void)state;
	assert_int_equal(proc__parse_uid(ok, strlen(ok), &uid), 0);
	assert_int_equal(uid, 1000);
	assert_int_equal(proc__parse_uid(bad[0], strlen(bad[0]), &uid), -ENOENT);
	for (size_t i = 1; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(proc__parse_uid(bad[i], strlen(bad[i]), &uid), -EINVAL);
	assert_int_equal(uid, 1000);
	/* The length is the bound: a line past it is not read. */
	assert_int_equal(proc__parse_uid(ok, 8, &uid), -ENOENT);
}

static void test_status_ids_of_self_are_its_pid_and_uid(void **state)
{
	pid_t ns_pid = 0;
	uid_t uid = (uid_t)-1;

	(void)state;
	assert_int_equal(proc__status_ids(getpid(), &ns_pid, &uid), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(ns_pid, getpid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_is_alive),
		cmocka_unit_test(test_lines_of_a_text_come_in_order_to_its_length),
		cmocka_unit_test(test_mountinfo_mounts_come_one_after_the_other),
		cmocka_unit_test(test_a_kept_mount_table_is_read_again_only_after_a_mount),
		cmocka_unit_test(test_nonpositive_and_unused_pids_are_not_alive),
		cmocka_unit_test(test_child_is_alive_then_a_zombie_is_not_alive_then_gone),
		cmocka_unit_test(test_usage_of_a_child_counts_its_cpu_and_peak_memory),
		cmocka_unit_test(test_comm_of_self_is_what_prctl_set_even_with_parens_and_spaces),
		cmocka_unit_test(test_comm_that_does_not_fit_is_refused_and_buffer_untouched),
		cmocka_unit_test(test_list_pids_holds_self_and_is_ascending),
		cmocka_unit_test(test_find_libs_on_self_finds_libc_with_a_host_path_that_opens),
		cmocka_unit_test(test_find_libs_finds_paths_with_spaces_and_skips_deleted_files),
		cmocka_unit_test(test_find_libs_without_a_match_returns_nothing),
		cmocka_unit_test(test_maps_line_parser_reads_kernel_lines),
		cmocka_unit_test(test_maps_line_parser_rejects_garbage),
		cmocka_unit_test(test_mountinfo_lines_give_id_device_and_type),
		cmocka_unit_test(test_uid_of_a_status_text_is_its_first_field),
		cmocka_unit_test(test_status_ids_of_self_are_its_pid_and_uid),
		cmocka_unit_test(test_mountinfo_garbage_is_refused),
		cmocka_unit_test(test_mountinfo_find_by_id_or_by_device_and_type),
		cmocka_unit_test(test_cgroup_v2_line_is_found_among_v1_lines),
		cmocka_unit_test(test_cgroup2_mount_is_one),
		cmocka_unit_test(test_a_file_off_any_overlay_is_not_a_trusted_overlay),
		cmocka_unit_test(test_memfd_with_a_known_name_is_found_and_its_map_files_path_opens),
		cmocka_unit_test(test_map_files_path_is_lowercase_hex_without_prefix),
		cmocka_unit_test(test_nspid_of_one_namespace_level_is_both_innermost_and_outermost),
		cmocka_unit_test(test_nspid_of_two_levels_gives_the_last_as_innermost),
		cmocka_unit_test(test_nspid_malformed_lines_are_rejected_and_outputs_untouched),
		cmocka_unit_test(test_nspid_huge_numbers_are_out_of_range),
		cmocka_unit_test(test_nspid_missing_line_is_not_found),
		cmocka_unit_test(test_nspid_text_is_not_read_past_its_length),
		cmocka_unit_test(test_ns_pid_of_self_is_self_outside_a_new_namespace),
		cmocka_unit_test(test_ns_tids_on_self_map_each_thread_to_itself),
		cmocka_unit_test(test_child_in_a_new_pid_namespace_is_pid_one_there),
		cmocka_unit_test(test_status_of_a_process_with_65536_groups_is_read_whole),
		cmocka_unit_test(test_cgroup_path_of_self_is_the_v2_line),
		cmocka_unit_test_setup_teardown(test_root_openat_stays_inside_a_fake_root,
						fake_root_setup, fake_root_teardown),
		cmocka_unit_test_setup_teardown(test_fallback_walker_stays_inside_a_fake_root,
						fake_root_setup, fake_root_teardown),
		cmocka_unit_test(test_root_with_an_absolute_etc_symlink_never_reaches_host_etc),
		cmocka_unit_test(test_root_open_of_self_reaches_own_files),
		cmocka_unit_test(test_open_file_opens_only_the_regular_file_it_was_told_of),
		cmocka_unit_test(test_open_mapped_reaches_the_mapped_file_whatever_its_path_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
