/* SPDX-License-Identifier: MIT */
/* When the autograd node probe is needed (node_watch.h). */
#include "user/session/node_watch.h"

#include <string.h>

void node_watch__init(struct node_watch *w, bool never, __u64 now)
{
	memset(w, 0, sizeof(*w));
	w->never = never;
	w->steady_since = now;
}

/* The probe wanted back (or kept): the steady spell starts again. */
static void unsettle(struct node_watch *w, __u64 now)
{
	w->steady_since = now;
	w->steady_nodes = 0;
	if (w->quiet)
		w->wakes++;
	w->quiet = false;
}

bool node_watch__look(struct node_watch *w, __u64 now, __u64 nodes, __u64 learned,
		      __u64 unlearned, bool engine_new)
{
	__u64 new_nodes = nodes >= w->nodes ? nodes - w->nodes : 0;
	bool woken = engine_new || unlearned != w->unlearned;
	bool learnt = learned != w->learned;

	w->nodes = nodes;
	w->learned = learned;
	w->unlearned = unlearned;
	if (w->never)
		return false;
	if (woken || learnt) {
		unsettle(w, now);
		return false;
	}
	w->steady_nodes += new_nodes;
	if (!w->quiet && now - w->steady_since >= NODE_WATCH_QUIET_NS &&
	    w->steady_nodes >= NODE_WATCH_QUIET_NODES) {
		w->quiet = true;
		w->quiets++;
	}
	return w->quiet;
}
