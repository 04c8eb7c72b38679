/* SPDX-License-Identifier: MIT */
/*
 * hostile_pty: a process whose maps name a libcuda.so.1 that, opened by
 * path in its root, is a terminal: it maps a copy of a libcuda file, then
 * (in a mount namespace of its own, so the host's view is untouched) hides
 * that file's directory under a tmpfs where the same name is a symlink to
 * the slave of a pty it holds. A root loader that opens the path without
 * O_NOCTTY, as a session leader without a terminal, makes that pty its
 * controlling terminal; closing the master then sends it SIGHUP.
 *
 *   hostile_pty DIR LIBCUDA    (root: unshare and mount)
 *
 * It prints "hostile_pty: ready pid=PID tty=/dev/pts/N" (flushed), closes
 * the master on SIGUSR1 (printing "hostile_pty: hung up"), and exits 0 on
 * SIGTERM or SIGINT.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag, hangup_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	hangup_flag = 1;
}

static int die(const char *what)
{
	fprintf(stderr, "hostile_pty: %s: %s\n", what, strerror(errno));
	return 1;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0755);
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return close(out) || n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	char dir[4096], lib[4096 + 32];
	const char *slave;
	struct stat st;
	int fd, master;
	void *map;

	if (argc != 3) {
		fprintf(stderr, "usage: hostile_pty DIR LIBCUDA\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/lib", argv[1]);
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return die("mkdir");
	if (copy_file(argv[2], lib))
		return die("copy");
	fd = open(lib, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return die("open the copy");
	/* An executable mapping of the file: its maps line names it libcuda.so.1. */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return die("mmap");
	close(fd);
	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master) || !(slave = ptsname(master)))
		return die("pty");
	/* From here on the name resolves, in our root, to the pty's slave. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return die("mount namespace");
	if (mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
		return die("mount tmpfs");
	if (symlink(slave, lib))
		return die("symlink");
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	signal(SIGUSR1, on_usr1);
	printf("hostile_pty: ready pid=%d tty=%s\n", (int)getpid(), slave);
	fflush(stdout);
	while (!stop_flag) {
		if (hangup_flag && master >= 0) {
			close(master); /* the slave's session leader, if any, gets SIGHUP */
			master = -1;
			printf("hostile_pty: hung up\n");
			fflush(stdout);
		}
		usleep(10000);
	}
	return 0;
}
