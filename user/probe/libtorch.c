/* SPDX-License-Identifier: MIT */
/* PyTorch's autograd engine in a target's maps (libtorch.h). */
#include "user/probe/libtorch.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "user/probe/launch_probe.h"
#include "user/probe/libcuda.h"
#include "user/proc/proc.h"

int libtorch__attach_pid(struct launch_probe *lp, struct bounded *b, pid_t pid)
{
	struct proc_lib *libs = NULL;
	size_t n = 0;
	int ret = 0;

	if (proc__find_libs(pid, "libtorch_cpu.so", &libs, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct launch_attach_result res;
		char fdpath[64];
		int fd, err;

		if (launch_probe__file_seen(lp, libs[i].dev, libs[i].ino) == 1) {
			ret = 1;
			break;
		}
		if ((err = libcuda__open_mapped(b, pid, &libs[i], &fd))) {
			ret = ret ? ret : err;
			continue;
		}
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		err = launch_probe__attach_autograd(lp, fdpath, &res);
		close(fd);
		if (!err) {
			ret = 1;
			break;
		}
		ret = ret ? ret : err;
	}
	free(libs);
	return ret;
}
