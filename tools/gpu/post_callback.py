"""A backward pass whose final callback launches a kernel (as DDP's
reducer does at the end of backward): the callback is queued from a
tensor hook with Variable._execution_engine.queue_callback and runs in
GraphTask::exec_post_processing, on the engine thread that finished the
pass. The kernel it launches (a fill: torch.full) belongs to the step
that called backward (post_step). STEPS (default 20). Prints the main
thread's tid and the callbacks' thread ids.
"""
import os
import threading

import torch

from torch.autograd import Variable

ran_on = set()


def final_callback(buf):
    ran_on.add(threading.get_native_id())
    buf.fill_(2.0)  # one kernel, launched from the callback


def post_step(w, x, buf):
    y = (w * x).sum()
    y.register_hook(lambda g: Variable._execution_engine.queue_callback(lambda: final_callback(buf)))
    y.backward()
    torch.cuda.synchronize()


def main():
    steps = int(os.environ.get("STEPS", "20"))
    w = torch.randn(1 << 20, device="cuda", requires_grad=True)
    x = torch.randn(1 << 20, device="cuda")
    buf = torch.empty(1 << 20, device="cuda")
    for _ in range(steps):
        post_step(w, x, buf)
    print("post_callback: main=%d callbacks_on=%s steps=%d" % (
        threading.get_native_id(), sorted(ran_on), steps), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
