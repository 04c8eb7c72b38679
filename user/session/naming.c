/* SPDX-License-Identifier: MIT */
/*
 * What the profile calls a process and its stacks (session_internal.h):
 * a process declared with its name and cgroup, and each stack named once,
 * later than it was met (loading a large library's symbols takes seconds,
 * and the BPF ring must be drained meanwhile).
 */
#include <stdlib.h>
#include <string.h>
#include "user/session/session_internal.h"
#include "user/python/pycode.h"
#include "user/util/grow.h"

/* Stacks waiting to be named, at most; past it a stack is named at once. */
#define PENDING_MAX (1u << 20)

int session__declare_proc(struct session *s, struct target *t)
{
	struct profile_proc pp = { .pid = t->pid, .comm = t->comm,
				   .cgroup = s->o->mode == GP_MODE_ALL && t->cgroup[0] ? t->cgroup : NULL };

	return profile__set_proc(s->prof, &pp);
}

static void resolve_stack(struct session *s, struct target *t, __u32 stack_id,
			  const struct raw_stack *raw)
{
	struct resolved_stack *rs = s->resolved;

	if (t && !t->comm_declared) {
		target__symbolizer(t); /* re-reads the comm, after exec */
		session__declare_proc(s, t);
		t->comm_declared = true;
	}
	/* rs keeps the Python names it looks up until the profile has copied them. */
	pycode_cache__hold(t ? t->py : NULL);
	raw_stack__resolve(t, raw, rs, &s->stack_stats);
	profile__set_stack(s->prof, stack_id, rs->f, rs->n, rs->truncated);
	pycode_cache__release(t ? t->py : NULL);
}

/*
 * Stacks met for the first time are named later (resolve_pending): loading
 * a large library's symbols takes seconds, and the BPF ring must be drained
 * meanwhile. Their Python code objects are read now, while they exist.
 */
void session__defer_stack(struct session *s, struct target *t, __u32 stack_id,
			  const struct raw_stack *raw)
{
	const struct gp_py_frame *py = (const struct gp_py_frame *)(raw->w + raw->n);
	struct pycode_frame f;
	__u32 *pending;

	if (t)
		target__symbolizer(t); /* its maps and root, read while it lives */
	for (__u32 i = 0; t && t->py && i < raw->npy; i++)
		if (py[i].code != GP_PY_FRAME_SHIM)
			pycode_cache__lookup_at(t->py, py[i].code & ~GP_PY_FRAME_FLAGS, py[i].instr,
						raw->epoch, &f);
	pending = grow__array_max(s->pending, &s->cap_pending, s->npending + 1, sizeof(*pending),
				  1024, PENDING_MAX);
	if (!pending) {
		resolve_stack(s, t, stack_id, raw); /* no room to wait: now */
		return;
	}
	s->pending = pending;
	s->pending[s->npending++] = stack_id;
}

void session__resolve_pending(struct session *s, pid_t pid)
{
	struct target *only = pid ? target_table__find(&s->tt, pid) : NULL;
	size_t keep = 0, len;

	for (size_t i = 0; i < s->npending; i++) {
		const struct raw_stack *raw = stack_table__get(&s->stacks, s->pending[i], &len);
		struct raw_stack copy;

		if (!raw || len > sizeof(copy) || len < offsetof(struct raw_stack, w)) {
			continue;
		}
		if (pid && raw->pid != (__u32)pid) {
			s->pending[keep++] = s->pending[i];
			continue;
		}
		memcpy(&copy, raw, len);
		resolve_stack(s, target_table__find(&s->tt, (pid_t)copy.pid), s->pending[i], &copy);
	}
	s->npending = keep;
	/* Nothing of their time waits to be named: earlier mappings can go. */
	if (only)
		target__drop_old_spaces(only);
	for (size_t i = 0; !pid && i < s->tt.n; i++)
		target__drop_old_spaces(s->tt.t[i]);
}
