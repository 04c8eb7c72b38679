/* SPDX-License-Identifier: MIT */
/* A stand-in for PyTorch's autograd engine (engine.h). */
#define _GNU_SOURCE
#include "engine.h"

#include <pthread.h>
#include <string.h>

/* std::shared_ptr<GraphTask>'s layout: the object first. */
struct shared_ptr {
	void *obj;
	void *ctrl;
};

struct node {
	struct engine_task *task;
	struct node *next;
};

/* libtorch's names, declared for the prototypes' sake. */
void _ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
	void *self, struct shared_ptr *task, void *node, void *inputs, void *queue);
void _ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE(
	void **ret, void *self, const struct shared_ptr *task, void *root, void *input);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER, ran = PTHREAD_COND_INITIALIZER;
static struct node *head, *tail;
static char engine_obj[64]; /* "this" */
static char engine_here[64]; /* "this" of a pass the caller runs itself */
static char engine_mixed[64]; /* "this" of a reentrant pass: the device queue's next node first */
static struct node *pop_one(void);

/* Engine::evaluate_function(this, std::shared_ptr<GraphTask> &, Node *, InputBuffer &, ...) */
__attribute__((noinline, visibility("default"))) void
_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
	void *self, struct shared_ptr *task, void *node, void *inputs, void *queue)
{
	struct engine_task *t = task->obj;

	(void)self, (void)node, (void)inputs, (void)queue;
	t->fn(t->arg);
	__asm__ volatile("" ::: "memory");
}

static void push(struct engine_task *t)
{
	static struct node nodes[4096];
	static unsigned next;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < t->nodes; i++) {
		struct node *n = &nodes[next++ % 4096];

		n->task = t;
		n->next = NULL;
		if (tail)
			tail->next = n;
		else
			head = n;
		tail = n;
	}
	pthread_mutex_unlock(&lock);
	pthread_cond_signal(&more);
}

static void wait_done(struct engine_task *t)
{
	pthread_mutex_lock(&lock);
	while (t->done < t->nodes)
		pthread_cond_wait(&ran, &lock);
	pthread_mutex_unlock(&lock);
}

/*
 * Engine::execute_with_graph_task(sret, this, std::shared_ptr<GraphTask> const &,
 * std::shared_ptr<Node>, InputBuffer &&): a c10::intrusive_ptr returned in memory.
 */
__attribute__((noinline, visibility("default"))) void
_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE(
	void **ret, void *self, const struct shared_ptr *task, void *root, void *input)
{
	struct engine_task *t = task->obj;

	(void)root, (void)input;
	if (self == engine_mixed) {
		/*
		 * A reentrant backward on the engine thread (PyTorch's inner
		 * thread_main): it takes whatever the device queue holds next,
		 * another thread's node, before its own pass's nodes.
		 */
		struct shared_ptr sp = *task, fsp = { 0 };
		struct node *n = pop_one();

		if (n) {
			fsp.obj = n->task;
			_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
				engine_obj, &fsp, n, NULL, NULL);
			pthread_mutex_lock(&lock);
			n->task->done++;
			pthread_mutex_unlock(&lock);
			pthread_cond_broadcast(&ran);
		}
		for (int i = 0; i < t->nodes; i++)
			_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
				self, &sp, NULL, NULL, NULL);
		t->done = t->nodes;
	} else if (self == engine_here) {
		struct shared_ptr sp = *task;

		for (int i = 0; i < t->nodes; i++)
			_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
				self, &sp, NULL, NULL, NULL);
		t->done = t->nodes;
	} else {
		push(t);
		wait_done(t);
	}
	*ret = NULL;
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct shared_ptr sp = { 0 };
		struct node *n;

		pthread_mutex_lock(&lock);
		while (!head)
			pthread_cond_wait(&more, &lock);
		n = head;
		head = n->next;
		if (!head)
			tail = NULL;
		pthread_mutex_unlock(&lock);
		sp.obj = n->task;
		_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE(
			engine_obj, &sp, n, NULL, NULL);
		if (n->task->post && n->task->done + 1 == n->task->nodes)
			n->task->post(n->task->arg); /* the pass's post-processing */
		pthread_mutex_lock(&lock);
		n->task->done++;
		pthread_mutex_unlock(&lock);
		pthread_cond_broadcast(&ran);
	}
	return NULL;
}

int engine__start(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, thread_main, NULL))
		return -1;
	pthread_setname_np(th, "pt_autograd_0");
	pthread_detach(th);
	return 0;
}

void engine__backward(struct engine_task *task)
{
	struct shared_ptr sp = { .obj = task };
	void *ret;

	task->done = 0;
	_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE(
		&ret, engine_obj, &sp, NULL, NULL);
}

void engine__backward_here(struct engine_task *task)
{
	struct shared_ptr sp = { .obj = task };
	void *ret;

	task->done = 0;
	_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE(
		&ret, engine_here, &sp, NULL, NULL);
}

void engine__backward_mixed(struct engine_task *task)
{
	struct shared_ptr sp = { .obj = task };
	void *ret;

	task->done = 0;
	_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE(
		&ret, engine_mixed, &sp, NULL, NULL);
}

int engine__queued(void)
{
	int q;

	pthread_mutex_lock(&lock);
	q = head != NULL;
	pthread_mutex_unlock(&lock);
	return q;
}

static struct node *pop_one(void)
{
	struct node *n;

	pthread_mutex_lock(&lock);
	n = head;
	if (n) {
		head = n->next;
		if (!head)
			tail = NULL;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

void engine__backward_unannounced(struct engine_task *task)
{
	task->done = 0;
	push(task);
	wait_done(task);
}

int engine__node_probed(void)
{
	const volatile unsigned char *b = (const void *)
		_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE;

	return *b == 0xcc;
}

int engine__probed(void)
{
	const volatile unsigned char *a = (const void *)
		_ZN5torch8autograd6Engine23execute_with_graph_taskERKSt10shared_ptrINS0_9GraphTaskEES2_INS0_4NodeEEONS0_11InputBufferE;
	const volatile unsigned char *b = (const void *)
		_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERNS0_11InputBufferERKS2_INS0_10ReadyQueueEE;

	return *a == 0xcc && *b == 0xcc;
}
