/* SPDX-License-Identifier: MIT */
/*
 * hostile_fuse: a process that maps a libcuda.so.1 from a FUSE file system
 * it serves itself, then stops answering: whoever walks to that file or
 * opens it (a root loader reading the maps' paths) waits as long as it
 * likes, in the kernel.
 *
 *   hostile_fuse DIR LIBCUDA [reads|fd|overlay]   (root: mounts FUSE in a
 *                      mount namespace of its own, gone with the process)
 *
 * A thread serves /dev/fuse (raw protocol: INIT, LOOKUP, GETATTR, OPEN,
 * READ from a copy of LIBCUDA, RELEASE, FLUSH, STATFS); the main thread maps
 * DIR/libcuda.so.1 executable. Once mapped, the daemon stops answering
 * (requests are read and left waiting), and it prints "hostile_fuse: ready
 * pid=PID" (flushed). With "reads", it goes on answering all but READ: the
 * file can be looked up, statted and opened, and only a read of it waits.
 * With "fd", it also keeps the file open at fd HOSTILE_FUSE_FD, where a
 * loader looking for a shim ring by fd (shm_reader__grab_fd) may look.
 * With "overlay", as with "reads", but the file is reached through an
 * overlayfs whose lower layers are on the FUSE mount (a container's root
 * over a remote layer), mounted over /tmp in its namespace: it maps
 * /tmp/libcuda.so.1, and its /tmp/perf-PID.map is the same FUSE file. The
 * overlay's own file system type hides the FUSE one under it.
 * It exits on SIGTERM or SIGINT (the kernel then fails every request left
 * waiting).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fuse.h>

#define FILE_INO 2
#define DIR_A_INO 3 /* "overlay": the overlay's two lower layers, on this one mount */
#define DIR_B_INO 4
#define HOSTILE_FUSE_FD 100
#define REQ_MAX (1 << 17)

static int fuse_fd = -1;
static unsigned char *content;
static size_t content_len;
static atomic_int silent; /* 1: read requests, answer none */
static int answer_all_but_reads; /* then, while silent: only READ waits */
static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int die(const char *what)
{
	fprintf(stderr, "hostile_fuse: %s: %s\n", what, strerror(errno));
	return 1;
}

static void reply(const struct fuse_in_header *in, int error, const void *data, size_t len)
{
	unsigned char buf[sizeof(struct fuse_out_header) + 65536];
	struct fuse_out_header *out = (struct fuse_out_header *)buf;

	if (len > sizeof(buf) - sizeof(*out))
		len = sizeof(buf) - sizeof(*out);
	out->len = (uint32_t)(sizeof(*out) + (error ? 0 : len));
	out->error = error;
	out->unique = in->unique;
	if (!error && len)
		memcpy(buf + sizeof(*out), data, len);
	if (write(fuse_fd, buf, out->len) < 0 && errno != ENOENT)
		perror("hostile_fuse: reply");
}

static void attr_of(uint64_t ino, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = 1;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID || ino == DIR_A_INO || ino == DIR_B_INO) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0755;
		a->size = content_len;
		a->blocks = (content_len + 511) / 512;
	}
}

/* name's inode in directory dir, 0: none. The file is in the root, and in "a". */
static uint64_t lookup(uint64_t dir, const char *name)
{
	bool file = !strcmp(name, "libcuda.so.1") || !strncmp(name, "perf-", 5);

	if (dir == FUSE_ROOT_ID && !strcmp(name, "a"))
		return DIR_A_INO;
	if (dir == FUSE_ROOT_ID && !strcmp(name, "b"))
		return DIR_B_INO;
	return file && (dir == FUSE_ROOT_ID || dir == DIR_A_INO) ? FILE_INO : 0;
}

static void serve(const struct fuse_in_header *in, const void *arg)
{
	switch (in->opcode) {
	case FUSE_INIT: {
		struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
					   .max_readahead = 65536, .max_write = 65536, .time_gran = 1,
					   .max_pages = 16 };

		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out o = { .nodeid = lookup(in->nodeid, arg), .generation = 1 };

		if (!o.nodeid) {
			reply(in, -ENOENT, NULL, 0);
			break;
		}
		attr_of(o.nodeid, &o.attr); /* entry and attributes valid 0 s: always asked again */
		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out o = { 0 };

		attr_of(in->nodeid, &o.attr);
		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_OPEN: {
		struct fuse_open_out o = { .fh = 1 };

		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_READ: {
		const struct fuse_read_in *r = arg;
		size_t off = r->offset < content_len ? (size_t)r->offset : content_len;
		size_t n = content_len - off < r->size ? content_len - off : r->size;

		reply(in, 0, content + off, n);
		break;
	}
	case FUSE_STATFS: {
		struct fuse_statfs_out o = { .st = { .bsize = 4096, .namelen = 255, .frsize = 4096 } };

		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_RELEASE:
	case FUSE_FLUSH:
	case FUSE_ACCESS:
		reply(in, 0, NULL, 0);
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break; /* no answer expected (an interrupt: the request stays unanswered) */
	default:
		reply(in, -ENOSYS, NULL, 0);
	}
}

static void *daemon_main(void *arg)
{
	static unsigned char buf[REQ_MAX];

	(void)arg;
	for (;;) {
		ssize_t n = read(fuse_fd, buf, sizeof(buf));
		const struct fuse_in_header *in = (const void *)buf;

		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in))
			return NULL; /* unmounted, or the connection aborted */
		if (atomic_load(&silent) && (!answer_all_but_reads || in->opcode == FUSE_READ))
			continue; /* the request waits, as long as we live */
		serve(in, buf + sizeof(*in));
	}
}

/*
 * An overlay whose two lower layers are dir/a and dir/b, both on the FUSE
 * mount (one file system under it: the overlay's files then show its own
 * device, in maps and to stat alike), put over /tmp: lib is then
 * /tmp/libcuda.so.1.
 */
static int mount_overlay(const char *dir, char *lib, size_t size)
{
	char ovl[4096 + 16], opts[2 * 4096 + 64];

	snprintf(ovl, sizeof(ovl), "%s.ovl", dir);
	if (mkdir(ovl, 0755) && errno != EEXIST)
		return -1;
	snprintf(opts, sizeof(opts), "lowerdir=%s/a:%s/b", dir, dir);
	if (mount("overlay", ovl, "overlay", MS_RDONLY, opts) || mount(ovl, "/tmp", NULL, MS_BIND, NULL))
		return -1;
	snprintf(lib, size, "/tmp/libcuda.so.1");
	return 0;
}

static int load(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return -1;
	content_len = (size_t)st.st_size;
	content = malloc(content_len);
	if (!content || read(fd, content, content_len) != (ssize_t)content_len)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char opts[256], lib[4096 + 32];
	pthread_t th;
	void *map;
	int fd;

	const char *mode = argc == 4 ? argv[3] : "";
	bool overlay = !strcmp(mode, "overlay");

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(mode, "reads") && strcmp(mode, "fd") && !overlay)) {
		fprintf(stderr, "usage: hostile_fuse DIR LIBCUDA [reads|fd|overlay]\n");
		return 2;
	}
	answer_all_but_reads = !strcmp(mode, "reads") || overlay;
	if (load(argv[2]))
		return die("read LIBCUDA");
	if (mkdir(argv[1], 0755) && errno != EEXIST)
		return die("mkdir");
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return die("mount namespace");
	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse_fd < 0)
		return die("/dev/fuse");
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse_fd);
	if (mount("hostile", argv[1], "fuse.hostile", MS_NOSUID | MS_NODEV, opts))
		return die("mount fuse");
	if (pthread_create(&th, NULL, daemon_main, NULL))
		return die("thread");
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", argv[1]);
	if (overlay && mount_overlay(argv[1], lib, sizeof(lib)))
		return die("overlay over FUSE");
	fd = open(lib, O_RDONLY);
	if (fd < 0)
		return die("open on FUSE");
	map = mmap(NULL, content_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return die("mmap on FUSE");
	if (!strcmp(mode, "fd")) {
		/* Its attributes made stale: whoever stats it next asks the daemon. */
		struct {
			struct fuse_out_header h;
			struct fuse_notify_inval_inode_out o;
		} inval = { .h = { .len = sizeof(inval), .error = FUSE_NOTIFY_INVAL_INODE },
			    .o = { .ino = FILE_INO } };

		if (dup2(fd, HOSTILE_FUSE_FD) < 0)
			return die("dup2");
		if (write(fuse_fd, &inval, sizeof(inval)) != (ssize_t)sizeof(inval))
			return die("notify");
	}
	close(fd);
	atomic_store(&silent, 1);
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	printf("hostile_fuse: ready pid=%d\n", (int)getpid());
	fflush(stdout);
	while (!stop_flag)
		usleep(10000);
	/* The close of a FUSE file waits for its FLUSH: answered, or this exit would wait on itself. */
	atomic_store(&silent, 0);
	close(HOSTILE_FUSE_FD);
	return 0;
}
