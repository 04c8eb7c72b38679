/* SPDX-License-Identifier: MIT */
/* gpuprobe-bpf: command-line entry point (placeholder until the CLI lands). */
#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argc; (void)argv;
	puts("gpuprobe-bpf");
	return 0;
}
