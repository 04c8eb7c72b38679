/* SPDX-License-Identifier: MIT */
/*
 * Detecting CPython in a process and describing its thread and frame
 * layout for the BPF walk.
 *
 * Finding it: the executable mappings whose file is called python* or
 * libpython* are opened inside the target's root (proc__root_open, checked
 * against the mapping's dev/inode) and their symbol tables searched for
 * _PyRuntime; the first file defining it wins (a distro python3 links
 * libpython statically, a pyenv one loads libpython3.x.so). The load bias
 * comes from the executable mapping and the PT_LOAD that holds it.
 *
 * Version: Py_Version (3.11+) read from the target; else the file name
 * ("python3.10", "libpython3.10.so.1.0"); else the presence of Py_Is
 * (new in 3.10) without Py_Version.
 *
 * Offsets: the tables below were taken with offsetof() against the
 * installed internal headers of 3.10.13, 3.11.7 (and Debian's 3.11.2),
 * 3.12.1 and 3.13.0; the fields they name did not move between patch
 * releases of a minor version. 3.13 and later carry _Py_DebugOffsets at
 * the start of _PyRuntime (cookie "xdebugpy"); its layout is fixed per minor
 * version, so only 3.13's is read here. Patch releases *can* move fields of
 * _PyRuntimeState, which is why the result is validated against the live
 * process: the interpreter chain ends in the main interpreter (id 0), each
 * thread state points back at its interpreter, and (3.11+) some thread
 * state's native_thread_id names one of the process's threads.
 */
#include "user/python/pyruntime.h"
#include "user/python/pymem.h"
#include "user/python/pyrt_check.h"
#include "user/util/bounded.h"
#include "user/proc/proc.h"
#include "user/proc/proc_maps.h"
#include "user/symbolize/elf_symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <sys/ptrace.h>
#include <sys/user.h>
#endif

#define PYRT_MAX_CANDIDATES 8

/* ---------------------------------------------------------------- tables */

struct pyrt_table {
	unsigned minor;
	uint32_t runtime_interp_head; /* offset in _PyRuntimeState */
	uint32_t interp_id;           /* validation */
	struct gp_py_config cfg;      /* interp_head_addr and version left 0 */
	struct pycode_layout code;    /* types and version left 0 */
};

#define NO GP_PY_NO_OFFSET

static const struct pyrt_table pyrt_tables[] = {
	{
		.minor = 10, .runtime_interp_head = 32, .interp_id = 24,
		.cfg = {
			.tid_kind = GP_PY_TID_PTHREAD, .interp_next = 0,
			.interp_threads_head = 8, .tstate_next = 8, .tstate_thread_id = 176,
			.tstate_frame = 24, .cframe_current_frame = NO, .frame_previous = 24,
			.frame_code = 32, .frame_instr = 96, .instr_size = 4,
			.entry_kind = GP_PY_ENTRY_NONE, .frame_entry = NO, .tstate_interp = 16,
		},
		.code = {
			.ob_type = 8, .ob_size = 16, .co_name = 112, .co_qualname = UINT32_MAX,
			.co_filename = 104, .co_firstlineno = 40, .co_linetable = 120,
			.co_code_adaptive = 0, .bytes_ob_size = 16, .bytes_ob_sval = 32,
			.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48,
			.unicode_compact_size = 72, .linetable_format = PYCODE_LINETABLE_310,
		},
	},
	{
		.minor = 11, .runtime_interp_head = 40, .interp_id = 48,
		.cfg = {
			.tid_kind = GP_PY_TID_NATIVE, .interp_next = 0,
			.interp_threads_head = 16, .tstate_next = 8, .tstate_thread_id = 160,
			.tstate_frame = 56, .cframe_current_frame = 8, .frame_previous = 48,
			.frame_code = 32, .frame_instr = 56, .instr_size = 8,
			.entry_kind = GP_PY_ENTRY_IS_ENTRY, .frame_entry = 68, .entry_size = 1,
			.tstate_interp = 16,
		},
		.code = {
			.ob_type = 8, .ob_size = 16, .co_name = 120, .co_qualname = 128,
			.co_filename = 112, .co_firstlineno = 72, .co_linetable = 136,
			.co_code_adaptive = 184, .bytes_ob_size = 16, .bytes_ob_sval = 32,
			.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48,
			.unicode_compact_size = 72, .linetable_format = PYCODE_LINETABLE_311,
		},
	},
	{
		.minor = 12, .runtime_interp_head = 40, .interp_id = 8,
		.cfg = {
			.tid_kind = GP_PY_TID_NATIVE, .interp_next = 0,
			.interp_threads_head = 72, .tstate_next = 8, .tstate_thread_id = 144,
			.tstate_frame = 56, .cframe_current_frame = 0, .frame_previous = 8,
			.frame_code = 0, .frame_instr = 56, .instr_size = 8,
			.entry_kind = GP_PY_ENTRY_OWNER, .frame_entry = 70, .entry_size = 1,
			.entry_value = 3 /* FRAME_OWNED_BY_CSTACK */, .tstate_interp = 16,
		},
		.code = {
			.ob_type = 8, .ob_size = 16, .co_name = 120, .co_qualname = 128,
			.co_filename = 112, .co_firstlineno = 68, .co_linetable = 136,
			.co_code_adaptive = 192, .bytes_ob_size = 16, .bytes_ob_sval = 32,
			.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 40,
			.unicode_compact_size = 56, .linetable_format = PYCODE_LINETABLE_311,
		},
	},
};

#undef NO


/* ---------------------------------------------------------------- ELF */

enum pyrt_sym {
	SYM_RUNTIME,
	SYM_VERSION,
	SYM_PY_IS,
	SYM_CODE_TYPE,
	SYM_UNICODE_TYPE,
	SYM_BYTES_TYPE,
	SYM_MAX,
};

static const char *const pyrt_sym_names[SYM_MAX] = {
	"_PyRuntime", "Py_Version", "Py_Is", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type",
};

struct pyrt_elf {
	uint64_t sym[SYM_MAX]; /* ELF virtual addresses, 0: absent */
	struct elf_loads loads;
};

/* Symbols of any type: _PyRuntime and Py_Version are objects, Py_Is a function. */
static int elf__read(int fd, struct pyrt_elf *ret)
{
	int found = elf_symtab__lookup_names(fd, pyrt_sym_names, SYM_MAX, ELF_TYPE_ANY, ret->sym,
					     &ret->loads);

	return found < 0 ? -EINVAL : 0;
}

/* bias such that runtime address = ELF vaddr + bias, from one mapping. */
static int elf__bias(const struct pyrt_elf *elf, const struct proc_map *m, uint64_t *ret)
{
	for (size_t i = 0; i < elf->loads.n; i++) {
		const struct elf_load *l = &elf->loads.v[i];
		uint64_t off = l->offset & ~(uint64_t)0xfff;

		if (m->offset >= off && m->offset < l->offset + l->filesz) {
			*ret = m->start - m->offset - (l->vaddr - l->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* ---------------------------------------------------------------- finding */

static bool name__is_python(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* "3.NN" in a file name (python3.12, libpython3.12.so.1.0): the minor. */
static int name__minor(const char *path, unsigned *ret_minor)
{
	const char *base = strrchr(path, '/'), *p;
	unsigned minor = 0;
	int digits = 0;

	base = base ? base + 1 : path;
	p = strstr(base, "python3.");
	if (!p)
		return -ENOENT;
	for (p += 8; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		minor = minor * 10 + (unsigned)(*p - '0');
	if (!digits)
		return -ENOENT;
	*ret_minor = minor;
	return 0;
}

/* Opens the mapped file inside the target's root, only if it is the file
 * that is mapped (same dev and inode) and a regular file. */
static int map__open(struct bounded *b, pid_t pid, const struct proc_map *m, int *ret_fd)
{
	struct proc_file_id id = { .dev = m->dev, .ino = m->inode };

	return proc__open_file(b, pid, m->path, &id, ret_fd);
}

struct pyrt_found {
	struct pyrt_elf elf;
	uint64_t bias;
	char path[PATH_MAX];
};

static int pyrt__find(struct bounded *b, pid_t pid, struct pyrt_found *ret)
{
	struct { uint64_t dev, ino; } seen[PYRT_MAX_CANDIDATES];
	size_t n_seen = 0, i, j;
	struct proc_maps *maps;
	struct pyrt_elf elf;
	int err, fd, last = -ENOENT;

	err = proc_maps__load(pid, &maps);
	if (err)
		return err;
	for (i = 0; i < proc_maps__count(maps) && n_seen < PYRT_MAX_CANDIDATES; i++) {
		const struct proc_map *m = proc_maps__at(maps, i);

		if (m->kind != PROC_MAP_FILE || m->deleted || !name__is_python(m->path))
			continue;
		for (j = 0; j < n_seen; j++)
			if (seen[j].dev == m->dev && seen[j].ino == m->inode)
				break;
		if (j < n_seen)
			continue;
		seen[n_seen].dev = m->dev;
		seen[n_seen].ino = m->inode;
		n_seen++;
		err = map__open(b, pid, m, &fd);
		if (err) {
			last = err;
			continue;
		}
		err = elf__read(fd, &elf);
		close(fd);
		if (err || !elf.sym[SYM_RUNTIME])
			continue;
		err = elf__bias(&elf, m, &ret->bias);
		if (err)
			continue;
		ret->elf = elf;
		snprintf(ret->path, sizeof(ret->path), "%s", m->path);
		proc_maps__destroy(maps);
		return 0;
	}
	proc_maps__destroy(maps);
	/* Python-named files we could not open say more than "no CPython". */
	return last == -ENOENT ? -ENOENT : last;
}

/* ---------------------------------------------------------------- tables */

static int pyrt__from_table(const struct pyrt_table *t, uint64_t runtime,
			    struct gp_py_config *cfg, struct pycode_layout *code,
			    uint32_t *ret_interp_id)
{
	*cfg = t->cfg;
	*code = t->code;
	cfg->interp_head_addr = runtime + t->runtime_interp_head;
	*ret_interp_id = t->interp_id;
	return 0;
}

/* 3.13: the runtime describes itself (its _Py_DebugOffsets, read here). */
static int pyrt__from_debug(struct bounded *b, pid_t pid, uint64_t runtime, uint32_t version,
			    struct gp_py_config *cfg, struct pycode_layout *code,
			    uint32_t *ret_interp_id)
{
	uint8_t dbg[PYRT_DBG_SIZE];
	int err = pymem__read(b, pid, runtime, dbg, sizeof(dbg));

	if (err)
		return err;
	return pyrt__parse_debug(dbg, sizeof(dbg), runtime, version, cfg, code, ret_interp_id);
}

/* ---------------------------------------------------------------- validation */

struct pid_reader {
	struct bounded *b;
	pid_t pid;
};

static int pid_read_u64(void *ctx, uint64_t addr, uint64_t *ret)
{
	const struct pid_reader *r = ctx;

	return pymem__read_u64(r->b, r->pid, addr, ret);
}

static int pyrt__validate(struct bounded *b, pid_t pid, const struct gp_py_config *c,
			  uint32_t interp_id_off)
{
	struct pid_reader r = { .b = b, .pid = pid };
	struct pyrt_reader rd = { .read_u64 = pid_read_u64, .ctx = &r };
	struct proc_tid_map *tids = NULL;
	uint64_t interp;
	int err;

	/* No interpreter yet (the usual answer early on): said before the threads are read. */
	err = pymem__read_u64(b, pid, c->interp_head_addr, &interp);
	if (err)
		return err == -EFAULT ? -EUCLEAN : err;
	if (!interp)
		return -EAGAIN;
	if (c->tid_kind == GP_PY_TID_NATIVE && (err = proc__ns_tids(pid, &tids)))
		return err;
	err = pyrt__check_interps(&rd, c, interp, interp_id_off, tids);
	proc_tid_map__free(tids);
	return err;
}

/* ---------------------------------------------------------------- detect */

int pyruntime__detect(struct bounded *b, pid_t pid, struct pyruntime *ret)
{
	struct pyruntime rt = { .pid = pid };
	struct pyrt_found *f;
	uint32_t pyv = 0, interp_id = 0;
	unsigned minor = 0;
	size_t i;
	int err;

	if (!b || pid <= 0 || !ret)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = pyrt__find(b, pid, f);
	if (err)
		goto out;
	rt.load_bias = f->bias;
	rt.runtime_addr = f->elf.sym[SYM_RUNTIME] + f->bias;
	snprintf(rt.path, sizeof(rt.path), "%s", f->path);
	if (f->elf.sym[SYM_VERSION]) {
		err = pymem__read(b, pid, f->elf.sym[SYM_VERSION] + f->bias, &pyv, sizeof(pyv));
		if (err)
			goto out;
		if ((pyv >> 24) != 3) {
			err = -EUCLEAN;
			goto out;
		}
	} else if (!name__minor(f->path, &minor) && minor <= 10) {
		pyv = 0x03000000u | (minor << 16);
	} else if (f->elf.sym[SYM_PY_IS]) {
		pyv = 0x030a0000u;
	} else {
		err = -EPROTONOSUPPORT;
		goto out;
	}
	rt.major = pyv >> 24;
	rt.minor = (pyv >> 16) & 0xff;
	rt.micro = (pyv >> 8) & 0xff;
	if (rt.minor == 13) {
		err = pyrt__from_debug(b, pid, rt.runtime_addr, pyv, &rt.config, &rt.code,
				       &interp_id);
	} else {
		err = -EPROTONOSUPPORT;
		for (i = 0; i < sizeof(pyrt_tables) / sizeof(pyrt_tables[0]); i++)
			if (pyrt_tables[i].minor == rt.minor)
				err = pyrt__from_table(&pyrt_tables[i], rt.runtime_addr, &rt.config,
						       &rt.code, &interp_id);
	}
	if (err)
		goto out;
	rt.config.version = pyv;
	rt.code.version = pyv;
	rt.code.code_type = f->elf.sym[SYM_CODE_TYPE] ? f->elf.sym[SYM_CODE_TYPE] + f->bias : 0;
	rt.code.unicode_type =
		f->elf.sym[SYM_UNICODE_TYPE] ? f->elf.sym[SYM_UNICODE_TYPE] + f->bias : 0;
	rt.code.bytes_type = f->elf.sym[SYM_BYTES_TYPE] ? f->elf.sym[SYM_BYTES_TYPE] + f->bias : 0;
	err = pyrt__validate(b, pid, &rt.config, interp_id);
	if (err)
		goto out;
	*ret = rt;
out:
	free(f);
	return err;
}

const char *pyruntime__strerror(int err)
{
	switch (err) {
	case 0:
		return "CPython found";
	case -ENOENT:
		return "no CPython in this process (no python or libpython mapping defines _PyRuntime)";
	case -EPROTONOSUPPORT:
		return "CPython version without an offset table (supported: 3.10-3.13, GIL builds)";
	case -EAGAIN:
		return "CPython runtime has no interpreter or thread state yet";
	case -EUCLEAN:
		return "CPython offset table does not match this process (validation failed)";
	case -ESTALE:
		return "the mapped python file is not the one its path names (replaced or deleted)";
	default:
		return strerror(-err);
	}
}

/* ---------------------------------------------------------------- walk */

#if defined(__x86_64__)
/* pthread_self() of a thread is its FS base on x86-64 (glibc and musl). */
static int thread__fs_base(pid_t tid, uint64_t *ret)
{
	int status = 0, sig = 0, err = 0;
	long v;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		err = -errno;
		goto out_detach;
	}
	if (waitpid(tid, &status, __WALL) != tid) {
		err = -errno;
		goto out_detach;
	}
	if (!WIFSTOPPED(status)) {
		err = -ESRCH;
		goto out_detach;
	}
	/* A signal that raced with the interrupt is handed back on detach. */
	if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP)
		sig = WSTOPSIG(status);
	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, tid, (void *)offsetof(struct user_regs_struct, fs_base), NULL);
	if (errno)
		err = -errno;
	else
		*ret = (uint64_t)v;
out_detach:
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
	return err;
}
#else
static int thread__fs_base(pid_t tid, uint64_t *ret)
{
	return -EOPNOTSUPP;
}
#endif

struct fs_base_job {
	pid_t tid;
	int err;
	uint64_t fs_base;
};

static void fs_base_job__run(void *p, int in_fd, int *ret_fd)
{
	struct fs_base_job *j = p;

	j->err = thread__fs_base(j->tid, &j->fs_base);
}

/*
 * The stop waits for the thread: one in an uninterruptible wait (a vfork
 * parent whose child never execs, a FUSE request) holds it as long as its
 * process likes. A bounded call (user/util/bounded.h), in the worker that
 * traces it: a worker given up is killed, which detaches the thread.
 */
static int thread__fs_base_bounded(struct bounded *b, pid_t tid, uint64_t *ret)
{
	struct fs_base_job j = { .tid = tid };
	int err = bounded__call(b, tid, fs_base_job__run, &j, sizeof(j), -1, NULL);

	if (err)
		return err == -EDEADLK ? -ETIMEDOUT : err;
	if (j.err)
		return j.err;
	*ret = j.fs_base;
	return 0;
}

int pyruntime__thread_key(struct bounded *b, pid_t host_tid, const struct gp_py_config *cfg,
			  uint64_t *ret_key)
{
	pid_t ns_tid;
	uint64_t key;
	int err;

	if (host_tid <= 0 || !cfg || !ret_key)
		return -EINVAL;
	if (cfg->tid_kind == GP_PY_TID_NATIVE) {
		err = proc__ns_pid(host_tid, &ns_tid);
		if (err)
			return err;
		*ret_key = (uint64_t)ns_tid;
		return 0;
	}
	if (cfg->tid_kind != GP_PY_TID_PTHREAD)
		return -EINVAL;
	err = thread__fs_base_bounded(b, host_tid, &key);
	if (err)
		return err;
	*ret_key = key;
	return 0;
}

static int rd(struct bounded *b, pid_t pid, uint64_t addr, uint32_t size, uint64_t *ret)
{
	uint64_t v = 0;
	int err;

	if (size != 1 && size != 4 && size != 8)
		return -EINVAL;
	err = pymem__read(b, pid, addr, &v, size); /* little endian: zero-extended */
	if (err)
		return err;
	*ret = v;
	return 0;
}

int pyruntime__walk_key(struct bounded *b, pid_t pid, const struct gp_py_config *c, uint64_t key,
			struct gp_py_frame *frames, uint32_t max, uint32_t *ret_n,
			enum gp_py_walk_status *ret_status)
{
	enum gp_py_walk_status st = GP_PY_WALK_OK;
	uint64_t interp, ts = 0, f, code, instr, entry, id;
	uint32_t n = 0;
	bool found = false;
	int i, j;

	if (!c || (!frames && max) || !ret_n || !ret_status)
		return -EINVAL;
	/* 1 */
	if (rd(b, pid, c->interp_head_addr, 8, &interp)) {
		st = GP_PY_WALK_FAULT;
		goto out;
	}
	if (!interp) {
		st = GP_PY_WALK_NO_RUNTIME;
		goto out;
	}
	/* 2 */
	for (i = 0; !found && interp && i < GP_PY_MAX_INTERPS; i++) {
		if (rd(b, pid, interp + c->interp_threads_head, 8, &ts))
			goto fault;
		for (j = 0; ts && j < GP_PY_MAX_THREADS; j++) {
			if (rd(b, pid, ts + c->tstate_thread_id, 8, &id))
				goto fault;
			if (id == key) {
				found = true;
				break;
			}
			if (rd(b, pid, ts + c->tstate_next, 8, &ts))
				goto fault;
		}
		if (!found && rd(b, pid, interp + c->interp_next, 8, &interp))
			goto fault;
	}
	if (!found) {
		st = GP_PY_WALK_NO_THREAD;
		goto out;
	}
	/* 3 */
	if (rd(b, pid, ts + c->tstate_frame, 8, &f))
		goto fault;
	if (c->cframe_current_frame != GP_PY_NO_OFFSET && f &&
	    rd(b, pid, f + c->cframe_current_frame, 8, &f))
		goto fault;
	/* 4 */
	while (f) {
		if (n == max) {
			st = GP_PY_WALK_TRUNCATED;
			goto out;
		}
		if (rd(b, pid, f + c->frame_code, 8, &code) ||
		    rd(b, pid, f + c->frame_instr, c->instr_size, &instr))
			goto fault;
		if (code & GP_PY_FRAME_FLAGS) {
			st = GP_PY_WALK_BAD_FRAME;
			goto out;
		}
		if (c->entry_kind == GP_PY_ENTRY_IS_ENTRY || c->entry_kind == GP_PY_ENTRY_OWNER) {
			if (rd(b, pid, f + c->frame_entry, c->entry_size, &entry))
				goto fault;
			if (c->entry_kind == GP_PY_ENTRY_IS_ENTRY && entry) {
				code |= GP_PY_FRAME_ENTRY;
			} else if (c->entry_kind == GP_PY_ENTRY_OWNER && entry == c->entry_value) {
				code = GP_PY_FRAME_SHIM;
				instr = 0;
			}
		}
		frames[n].code = code;
		frames[n].instr = instr;
		n++;
		if (rd(b, pid, f + c->frame_previous, 8, &f))
			goto fault;
	}
	goto out;
fault:
	st = GP_PY_WALK_FAULT;
out:
	*ret_n = n;
	*ret_status = st;
	return 0;
}

int pyruntime__walk_thread(struct bounded *b, pid_t pid, const struct gp_py_config *cfg,
			   pid_t host_tid, struct gp_py_frame *frames, uint32_t max,
			   uint32_t *ret_n, enum gp_py_walk_status *ret_status)
{
	uint64_t key;
	int err;

	if (!cfg)
		return -EINVAL;
	err = pyruntime__thread_key(b, host_tid, cfg, &key);
	if (err)
		return err;
	return pyruntime__walk_key(b, pid, cfg, key, frames, max, ret_n, ret_status);
}
