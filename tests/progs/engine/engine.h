/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for PyTorch's autograd engine, built as libtorch_cpu.so beside
 * the test programs (the loader looks for that name): a device thread runs the nodes of
 * backward passes that other threads begin and wait for, through two
 * functions exported under the names, and with the calling conventions,
 * of libtorch's Engine::execute_with_graph_task and
 * Engine::evaluate_function (user/probe/entry_points.c), so the loader's
 * autograd probes attach to it as to libtorch_cpu.so.
 */
#ifndef GP_TESTS_ENGINE_H
#define GP_TESTS_ENGINE_H

/*
 * A backward pass: its address is the graph task's; nodes calls of fn(arg)
 * on the engine thread; then, when set, post(arg) on the thread that ran
 * the last node, outside any node (PyTorch's final callbacks, run by
 * GraphTask::exec_post_processing), before the caller is told.
 */
struct engine_task {
	void (*fn)(void *arg);
	void *arg;
	int nodes;
	int done;      /* nodes run (the engine's) */
	void (*post)(void *arg);
};

/* Starts the engine's device thread (named "pt_autograd_0"). 0 or -1. */
int engine__start(void);
/* Runs task's nodes on the engine thread; returns once they ran (the caller waits). */
void engine__backward(struct engine_task *task);
/*
 * The same, without the call into the engine a pass begins with (a pass
 * the probes never saw begin, as when the loader attaches mid-pass).
 */
void engine__backward_unannounced(struct engine_task *task);
/*
 * A pass whose nodes the calling thread runs itself, inside the call (as
 * a pass's CPU nodes run on the thread that began it).
 */
void engine__backward_here(struct engine_task *task);
/*
 * A reentrant backward, called from inside a node on the engine thread:
 * the device queue's next node (another thread's, if one waits) first,
 * then task's nodes, all on this thread (PyTorch's reentrant thread_main).
 */
void engine__backward_mixed(struct engine_task *task);
/* Whether a node waits in the device queue. */
int engine__queued(void);
/* Whether the first byte of both engine functions is a breakpoint (uprobes installed). */
int engine__probed(void);
/* Whether evaluate_function's is (the node probe there: the loader takes it away once learnt). */
int engine__node_probed(void);

#endif
