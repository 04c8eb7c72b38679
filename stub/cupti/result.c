/* SPDX-License-Identifier: MIT */
/*
 * The stub CUPTI's answers that need no state: result strings and the cubin
 * CRC.
 *
 * cuptiGetCubinCrc here is CRC-32C (Castagnoli, reflected polynomial
 * 0x82F63B78, initial value and final xor 0xFFFFFFFF) of the cubin bytes,
 * zero-extended to 64 bits. That is this stub's own definition, NOT what
 * real CUPTI computes (which DESIGN.md only knows is not zlib's CRC-32):
 * code must treat the value as opaque and only compare CRCs from one CUPTI.
 */
#include "stub/cupti/internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/time.h>

#define STUB_RESULTS(X) \
	X(CUPTI_SUCCESS) \
	X(CUPTI_ERROR_INVALID_PARAMETER) \
	X(CUPTI_ERROR_INVALID_DEVICE) \
	X(CUPTI_ERROR_INVALID_CONTEXT) \
	X(CUPTI_ERROR_INVALID_OPERATION) \
	X(CUPTI_ERROR_OUT_OF_MEMORY) \
	X(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT) \
	X(CUPTI_ERROR_API_NOT_IMPLEMENTED) \
	X(CUPTI_ERROR_MAX_LIMIT_REACHED) \
	X(CUPTI_ERROR_NOT_READY) \
	X(CUPTI_ERROR_NOT_COMPATIBLE) \
	X(CUPTI_ERROR_NOT_INITIALIZED) \
	X(CUPTI_ERROR_QUEUE_EMPTY) \
	X(CUPTI_ERROR_INVALID_HANDLE) \
	X(CUPTI_ERROR_INVALID_STREAM) \
	X(CUPTI_ERROR_INVALID_KIND) \
	X(CUPTI_ERROR_DISABLED) \
	X(CUPTI_ERROR_INVALID_MODULE) \
	X(CUPTI_ERROR_NOT_SUPPORTED) \
	X(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) \
	X(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) \
	X(CUPTI_ERROR_UNKNOWN)

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
#define STUB_RESULT_CASE(code) case code: *str = #code; return CUPTI_SUCCESS;
	switch (result) {
	STUB_RESULTS(STUB_RESULT_CASE)
	default:
		*str = NULL;
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
#undef STUB_RESULT_CASE
}

CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str)
{
	return cuptiGetResultString(result, str);
}

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t stub_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	pthread_once(&crc_once, crc_init);
	while (n--)
		c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams *pParams)
{
	if (!pParams || !pParams->cubin || !pParams->cubinSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (pParams->size < CUpti_GetCubinCrcParamsSize)
		return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
	/*
	 * Test hooks for the sandbox around this call (tests/test_crc_helper.c):
	 * a cubin that asks for it tries to open a file, or never returns, as a
	 * hostile cubin might make a closed-source parser do, or waits a moment
	 * and reads the time, as a library's own threads do.
	 */
	if (pParams->cubinSize >= 16 && !memcmp(pParams->cubin, "GPUPROBE-T-OPEN\0", 16)) {
		int fd = open("/etc/hostname", O_RDONLY);

		if (fd >= 0)
			close(fd);
	} else if (pParams->cubinSize >= 16 && !memcmp(pParams->cubin, "GPUPROBE-T-SPIN\0", 16)) {
		for (volatile int spin = 1; spin;)
			;
	} else if (pParams->cubinSize >= 16 && !memcmp(pParams->cubin, "GPUPROBE-T-WAIT\0", 16)) {
		struct timespec t = { 0, 1000 };
		struct timeval tv;

		/* The syscalls themselves: glibc's nanosleep is clock_nanosleep, gettimeofday the vDSO. */
		syscall(SYS_nanosleep, &t, NULL);
		syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &t, NULL);
		syscall(SYS_gettimeofday, &tv, NULL);
	}
	pParams->cubinCrc = stub_crc32c(pParams->cubin, pParams->cubinSize);
	return CUPTI_SUCCESS;
}
