/* SPDX-License-Identifier: MIT */
/*
 * CPython inside another process, found without its cooperation: which
 * file holds the interpreter (the python executable or libpython3.x.so,
 * opened inside the target's root), which version it is, where _PyRuntime
 * lies after relocation, and the offsets (bpf/python.h's gp_py_config) that
 * let the BPF program at cuLaunchKernel walk the launching thread's Python
 * frames. Tables are per minor version (3.10, 3.11, 3.12); 3.13 describes
 * itself through _Py_DebugOffsets. A table that does not match the process
 * fails validation (-EUCLEAN) instead of producing frames.
 *
 * pyruntime__walk_key is the reference implementation of the BPF walk
 * (bpf/python.h says it step by step); tests run it through
 * process_vm_readv.
 */
#ifndef GP_PYTHON_PYRUNTIME_H
#define GP_PYTHON_PYRUNTIME_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/python.h"
#include "user/python/pycode.h"

struct pyruntime {
	pid_t pid;
	struct gp_py_config config;  /* for the BPF map */
	struct pycode_layout code;   /* for pycode_cache__new */
	uint64_t runtime_addr;       /* &_PyRuntime in the target */
	uint64_t load_bias;
	unsigned major, minor, micro;
	char path[PATH_MAX];         /* the file defining _PyRuntime, as the target sees it */
};

/*
 * The functions below read the target's memory, open its files and stop
 * its threads only as bounded calls through b (user/util/bounded.h).
 */
struct bounded;

/*
 * Finds CPython in pid and fills *ret. Errors (see pyruntime__strerror):
 * -ENOENT no CPython mapped; -EPROTONOSUPPORT a version without a table;
 * -EAGAIN the runtime has no interpreter or thread yet; -EUCLEAN the table
 * does not match what the process holds; others from /proc, ELF, reads.
 */
int pyruntime__detect(struct bounded *b, pid_t pid, struct pyruntime *ret);

/* A sentence for an error of pyruntime__detect (or strerror's). */
const char *pyruntime__strerror(int err);

/*
 * The value that step 0 of the walk compares with: for GP_PY_TID_NATIVE the
 * thread's tid in its own pid namespace; for GP_PY_TID_PTHREAD (3.10) its
 * pthread_self(), read as the FS base through a brief ptrace stop (x86-64
 * only: -EOPNOTSUPP elsewhere). host_tid as seen in our /proc.
 */
int pyruntime__thread_key(struct bounded *b, pid_t host_tid, const struct gp_py_config *cfg,
			  uint64_t *ret_key);

/*
 * The walk of bpf/python.h, in user space: frames of the thread whose key is
 * key, youngest first, at most max. Returns 0 and the status (the frames
 * copied before a fault are kept), or -EINVAL.
 */
int pyruntime__walk_key(struct bounded *b, pid_t pid, const struct gp_py_config *cfg, uint64_t key,
			struct gp_py_frame *frames, uint32_t max, uint32_t *ret_n,
			enum gp_py_walk_status *ret_status);
/* pyruntime__thread_key + pyruntime__walk_key. */
int pyruntime__walk_thread(struct bounded *b, pid_t pid, const struct gp_py_config *cfg,
			   pid_t host_tid, struct gp_py_frame *frames, uint32_t max,
			   uint32_t *ret_n, enum gp_py_walk_status *ret_status);

#endif /* GP_PYTHON_PYRUNTIME_H */
