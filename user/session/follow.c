/* SPDX-License-Identifier: MIT */
/*
 * The processes the session follows (session_internal.h): met through their
 * first driver call the probes see (a module load, a launch) or ring, their
 * libcuda files probed, set up for their Python frames once CPython is up,
 * handed the rings the watch thread held for them, and retired once gone,
 * with what they counted kept for the report.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/session/session_internal.h"
#include "user/probe/libcuda.h"
#include "user/python/pyruntime.h"
#include "user/python/pycode.h"
#include "user/util/log.h"
#include "user/util/test_env.h"

#define PY_RETRY_NS (50 * NS_PER_MS) /* in effect: every tick */
/*
 * No CPython mapped yet and no launch seen: looked for again after a wait
 * that doubles from PY_RETRY_NS up to this (each look reads the whole of
 * its maps; a process that is not Python, idle for hours, was read every
 * tick). Its first launch looks at once.
 */
#define PY_UNSEEN_WAIT_MAX_NS (2 * NS_PER_S)
/* Detections that found a half-started interpreter before it is given up. */
#define PY_MAX_TRIES 40

/*
 * For tests: GPUPROBE_TEST_PY_CACHE_BYTES=N bounds each process's
 * code-object cache at N bytes (1: it fills at every lookup), so that a
 * stack's names are looked up across flushes. 0: the default.
 */
#define PY_CACHE_BYTES_ENV "GPUPROBE_TEST_PY_CACHE_BYTES"

/*
 * A libcuda file a scan refused, said once per reason (every one is
 * counted: libcuda_refused, libcuda_no_slot). Its path is the target's
 * choice: printed with anything unprintable replaced.
 */
void session__say_refusal(struct session *s, const struct libcuda_refusal *ref)
{
	char path[256];
	size_t i;

	if ((ref->err == -ENOEXEC && s->said_not_driver) || (ref->err == -E2BIG && s->said_no_slot) ||
	    (ref->err == -EREMOTE && s->said_remote) || !ref->err)
		return;
	for (i = 0; ref->path[i] && i < sizeof(path) - 1; i++)
		path[i] = ref->path[i] >= 0x20 && ref->path[i] < 0x7f ? ref->path[i] : '?';
	path[i] = 0;
	if (ref->err == -EREMOTE) {
		s->said_remote = true;
		log_warn("pid %d maps %s on a FUSE file system, or an overlay not in the node's mount "
			 "table: not opened, not attached (a FUSE daemon under it could hold every read "
			 "of it; counted: libcuda_refused; said once)",
			 (int)ref->pid, path);
	} else if (ref->err == -ENOEXEC) {
		s->said_not_driver = true;
		log_warn("pid %d maps %s, which is not a CUDA driver (it lacks the driver's own "
			 "exports): not attached (counted: libcuda_refused; said once)",
			 (int)ref->pid, path);
	} else {
		s->said_no_slot = true;
		log_warn("every attach slot is taken: %s of pid %d is not attached until a slot "
			 "is freed (counted: libcuda_no_slot; said once)", path, (int)ref->pid);
	}
}

void session__probe_libcuda(struct session *s, struct target *t)
{
	struct libcuda_refusal ref = { 0 };

	/* Launches before its libcuda was probed cannot be joined. */
	if (libcuda__attach_pid(s->lp, s->bounded, t->pid, &ref, s->o->verbose) > 0) {
		t->attach_ns = now_ns();
		join__attach(s->join, t->pid, t->attach_ns);
	}
	session__say_refusal(s, &ref);
}

struct target *session__target(struct session *s, pid_t pid)
{
	struct target *t = target_table__find(&s->tt, pid);
	int err;

	if (t)
		return t;
	/*
	 * Seen first through a driver event: the probes have watched it since
	 * they went in (or its libcuda was attached: session.c's scan_new_libcuda).
	 */
	err = target_table__add(&s->tt, pid, s->probes_ns, &t);
	if (err == -ENOSPC) {
		if (!s->targets_full++)
			log_warn("following %zu processes, the most at once: pid %d and any other new one "
				 "are not followed while they are (counted in targets_full)", s->tt.n, pid);
		return NULL;
	}
	if (err)
		return NULL;
	if (s->have_child && pid == s->child.pid) {
		t->shm_fd = dup(s->child.shm_fd);
	}
	join__attach(s->join, pid, t->attach_ns);
	session__declare_proc(s, t);
	log_debug(s->o->verbose, "following pid %d (%s)", pid, t->comm);
	return t;
}

/*
 * CPython in t, found once it has an interpreter (a -- COMMAND child has
 * none at exec): the probes then walk its Python frames at each launch.
 */
void session__python_setup(struct session *s, struct target *t, __u64 now)
{
	struct pyruntime rt;
	size_t bytes_max;
	int err;

	if (t->py_done || now < t->py_next_try_ns)
		return;
	s->py_looks++;
	err = pyruntime__detect(s->bounded, t->pid, &rt);
	if (err == -EAGAIN) {
		if (!t->py_next_try_ns)
			log_debug(s->o->verbose, "pid %d (%s): CPython not ready: %s", t->pid, t->comm,
				  pyruntime__strerror(err));
		t->py_next_try_ns = now + PY_RETRY_NS;
		return;
	}
	if (err == -ENOENT && !t->first_launch_ns) {
		/* Maybe not exec'd yet (a -- COMMAND child) or not loaded: look again. */
		t->py_wait_ns = t->py_wait_ns ? t->py_wait_ns * 2 : PY_RETRY_NS;
		if (t->py_wait_ns > PY_UNSEEN_WAIT_MAX_NS)
			t->py_wait_ns = PY_UNSEEN_WAIT_MAX_NS;
		t->py_next_try_ns = now + t->py_wait_ns;
		return;
	}
	/* An interpreter caught half way through its start-up: look again, a while. */
	if ((err == -EUCLEAN || err == -EFAULT) && ++t->py_tries < PY_MAX_TRIES) {
		t->py_next_try_ns = now + PY_RETRY_NS;
		return;
	}
	t->py_done = true;
	if (err == -ENOENT || err == -ESRCH) {
		log_debug(s->o->verbose, "pid %d (%s): not CPython: %s", t->pid, t->comm, pyruntime__strerror(err));
		return;
	}
	if (!err)
		err = pycode_cache__new(s->bounded, t->pid, &rt.code, &t->py);
	if (!err)
		pycode_cache__set_share(t->py, &s->py_share);
	if (!err && (bytes_max = test_env__bytes(PY_CACHE_BYTES_ENV)))
		pycode_cache__set_bytes_max(t->py, bytes_max);
	if (!err)
		err = launch_probe__set_python(s->lp, t->pid, &rt.config);
	if (err) {
		log_warn("pid %d (%s): no Python frames: %s", t->pid, t->comm, pyruntime__strerror(err));
		pycode_cache__destroy(t->py);
		t->py = NULL;
		return;
	}
	t->py_entry_kind = rt.config.entry_kind;
	log_debug(s->o->verbose, "pid %d: CPython %u.%u.%u in %s", t->pid, rt.major, rt.minor, rt.micro, rt.path);
}

/*
 * Rings the watch thread held as their processes made them: each becomes
 * its target's ring, read like any other, also after the process exits. A
 * ring it could not hold (gone at once, not a memfd) is counted missed.
 */
void session__take_held_rings(struct session *s)
{
	struct held_ring h[64];
	size_t n;

	while ((n = ring_watch__take(&s->rw, h, 64))) {
		for (size_t i = 0; i < n; i++) {
			struct target *t = h[i].fd >= 0 ? session__target(s, h[i].pid) : NULL;

			if (!t || t->shm || t->shm_fd >= 0) {
				if (h[i].fd >= 0)
					close(h[i].fd);
				if (!t) {
					s->rings_missed++;
					log_debug(s->o->verbose, "pid %d: its new shim ring could not be held: %s",
						  h[i].pid, strerror(h[i].fd < 0 ? -h[i].fd : ENOMEM));
				}
				continue;
			}
			t->shm_fd = h[i].fd;
			t->shm_fd_its_own = true;
			t->next_shm_try_ns = 0;
		}
	}
}

void session__retire_target(struct session *s, struct target *t)
{
	pid_t pid = t->pid;

	session__keep_counters_of(s, t);
	TIMED(s, STAGE_NAME, session__resolve_pending(s, pid)); /* while its maps and root are at hand */
	join__finish_pid(s->join, pid);
	if (s->cache)
		stack_cache__forget_pid(s->cache, (__u32)pid);
	launch_probe__forget_maps_gen(s->lp, (__u32)pid);
	launch_probe__unfollow(s->lp, pid);
	if (t->py)
		launch_probe__set_python(s->lp, pid, NULL);
	autograd_callers__add_stats(t->autograd, &s->autograd_gone);
	t->names_hold = NULL; /* its tenant's: its names stay counted there */
	if (t->graphs) {
		graph_nodes__add_stats(t->graphs, &s->graphs_gone);
		/* What waited for its call is given up: none will come now. */
		s->graphs_gone.unbound += s->graphs_gone.waiting;
		s->graphs_gone.waiting = 0;
		s->graph_targets--;
	}
	target_table__remove(&s->tt, pid);
	log_debug(s->o->verbose, "pid %d exited", pid);
}
