/* SPDX-License-Identifier: MIT */
/*
 * keys: launches built to test the stack cache's keys, on the stub vendor.
 *
 *   keys collide N M [GO]   N launches through site_a, then (once the file GO
 *                           exists, if given) M through site_b, then N through
 *                           site_a again. Both sites are frames of one size
 *                           called from one place, and call one middle() that
 *                           calls launch_via(): same stack pointer, return
 *                           address and kernel at the launch: one key, two stacks.
 *   keys rotate N [GO]      N rounds of one launch from each of four call
 *                           sites with frames of four sizes (four stacks, four
 *                           keys, in turn); after the first round, waits for
 *                           GO (if given).
 *   keys reload N LIBA LIBB [GO [DONE]]
 *                           dlopen LIBA, N launches through its keylib_launch,
 *                           (once GO exists) dlclose it; dlopen LIBB, which
 *                           must land at LIBA's address (exit 3 if not), N
 *                           launches through it, and (once DONE exists) exit.
 *                           The libraries are one source built twice
 *                           (tests/progs/keylib), their launching functions
 *                           named apart.
 *   keys libs N GO LIB...   dlopen every LIB first (the maps read at the first
 *                           launch hold them all), then (once the file GO
 *                           exists; "-": at once) N launches through each
 *                           one's keylib_launch in turn: a stack through each
 *                           file.
 * Each launch is 1000 GPU ns on the stub. Prints "keys: launches=N" at the end.
 */
#include <cuda.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/progs/args.h"
#include "tests/progs/cubin.h"

#define CHECK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "keys: %s failed: %d\n", #call, (int)r_); \
			exit(1); \
		} \
	} while (0)

static CUfunction kernel;
static CUstream stream;
static unsigned long launches;

/* Waits for file (NULL: not at all); a test that never makes it failed: exit, do not hang. */
static void wait_for(const char *file)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

	for (int i = 0; file && access(file, F_OK) != 0; i++) {
		if (i == 12000) {
			fprintf(stderr, "keys: %s never came (120 s)\n", file);
			exit(4);
		}
		nanosleep(&ts, NULL);
	}
}

__attribute__((noinline)) static void launch_via(void)
{
	CHECK(cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
	launches++;
	__asm__ volatile("" ::: "memory");
}

/* The volatile asm after each call keeps the two sites two functions. */
__attribute__((noinline)) static void middle(void)
{
	launch_via();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void site_a(void)
{
	middle();
	__asm__ volatile("nop" ::: "memory");
}

__attribute__((noinline)) static void site_b(void)
{
	middle();
	__asm__ volatile("nop; nop" ::: "memory");
}

/* n calls of fn, from one place: whichever site, the same stack below it. */
__attribute__((noinline)) static void run(void (*volatile fn)(void), long n)
{
	for (long i = 0; i < n; i++)
		fn();
	__asm__ volatile("" ::: "memory");
}

/* Four call sites whose frames differ in size: four stacks, four keys. */
#define ROT(name, pad)                                                        \
	__attribute__((noinline)) static void name(void)                      \
	{                                                                     \
		volatile char room[pad];                                      \
		room[0] = 0;                                                  \
		launch_via();                                                 \
		__asm__ volatile("" ::"r"(room) : "memory");                  \
	}
ROT(rot_0, 16)
ROT(rot_1, 48)
ROT(rot_2, 80)
ROT(rot_3, 112)

typedef void (*keylib_fn)(CUfunction f, CUstream s);

/* Loads lib, launches n times through it; the library's base address. */
static unsigned long through_lib(const char *lib, long n, void **ret_handle)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	keylib_fn fn;
	Dl_info info;

	if (!h) {
		fprintf(stderr, "keys: %s\n", dlerror());
		exit(1);
	}
	fn = (keylib_fn)dlsym(h, "keylib_launch");
	if (!fn || !dladdr((void *)fn, &info)) {
		fprintf(stderr, "keys: %s has no keylib_launch\n", lib);
		exit(1);
	}
	for (long i = 0; i < n; i++) {
		fn(kernel, stream);
		launches++;
	}
	*ret_handle = h;
	return (unsigned long)info.dli_fbase;
}

int main(int argc, char **argv)
{
	static const char *const kernels[] = { "keys_kernel" };
	uint8_t img[1024];
	CUcontext ctx;
	CUmodule mod;
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: keys collide N M [GO] | rotate N | reload N LIBA LIBB [GO] |"
				" libs N GO LIB...\n");
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	if (!cubin_build(img, sizeof(img), "keys", kernels, 1))
		return 1;
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&kernel, mod, "keys_kernel"));
	CHECK(cuStreamCreate(&stream, 0));
	if (!strcmp(argv[1], "collide") && argc >= 4) {
		long n = parse_count("keys", argv[2]), m = parse_count("keys", argv[3]);

		run(site_a, n);
		wait_for(argc > 4 ? argv[4] : NULL);
		run(site_b, m);
		run(site_a, n);
	} else if (!strcmp(argv[1], "rotate")) {
		for (long i = parse_count("keys", argv[2]); i > 0; i--) {
			rot_0();
			rot_1();
			rot_2();
			rot_3();
			if (i == parse_count("keys", argv[2]))
				wait_for(argc > 3 ? argv[3] : NULL);
		}
	} else if (!strcmp(argv[1], "libs") && argc >= 5) {
		long n = parse_count("keys", argv[2]);

		for (int i = 4; i < argc; i++)
			if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
				fprintf(stderr, "keys: %s\n", dlerror());
				return 1;
			}
		wait_for(strcmp(argv[3], "-") ? argv[3] : NULL);
		for (int i = 4; i < argc; i++)
			through_lib(argv[i], n, &h); /* each stays loaded: no dlclose */
	} else if (!strcmp(argv[1], "reload") && argc >= 5) {
		long n = parse_count("keys", argv[2]);
		unsigned long a, b;

		a = through_lib(argv[3], n, &h);
		CHECK(cuStreamSynchronize(stream));
		wait_for(argc > 5 ? argv[5] : NULL);
		dlclose(h);
		b = through_lib(argv[4], n, &h);
		if (a != b) {
			fprintf(stderr, "keys: %s loaded at 0x%lx, not at %s's 0x%lx\n", argv[4], b,
				argv[3], a);
			return 3;
		}
		CHECK(cuStreamSynchronize(stream));
		wait_for(argc > 6 ? argv[6] : NULL);
		dlclose(h);
	} else {
		fprintf(stderr, "keys: unknown mode or missing arguments\n");
		return 2;
	}
	CHECK(cuStreamSynchronize(stream));
	CHECK(cuModuleUnload(mod));
	printf("keys: launches=%lu\n", launches);
	return 0;
}
