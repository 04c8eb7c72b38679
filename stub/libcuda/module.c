/* SPDX-License-Identifier: MIT */
/*
 * Modules, libraries and functions of the stub driver, and when their
 * resource callbacks fire.
 *
 * A cubin is an ELF64 image; its size is read from its own header (the end
 * of the section header table), as the real driver does. Modules get ids 1,
 * 2, 3, ... in load order; cuLibraryLoadData makes one module too.
 *
 * The loading rule (one rule for every path): under lazy loading, the
 * default, a module is "loaded on the device", and the module-loaded
 * callback fires, on the first call that needs its code: a launch of one of
 * its functions (inside cuLaunchKernel*, cuLaunchCooperativeKernel*), or
 * cuKernelGetFunction, or cuGraphAddKernelNode. cuModuleGetFunction and
 * cuLibraryGetKernel only name a function and do not load. With
 * CUDA_MODULE_LOADING=EAGER (read at each load call) the callback fires
 * inside the load call itself. The unloading callback fires inside
 * cuModuleUnload/cuLibraryUnload, only for a module whose loaded callback
 * fired. Both run on the calling thread with the driver lock held.
 */
#include "stub/libcuda/internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ ELF size */

/*
 * Size of the cubin at image: e_shoff + e_shnum * e_shentsize, at least the
 * ELF header. avail bounds what may be read (SIZE_MAX: the caller vouches for
 * the memory, as cuModuleLoadData's contract says). -EINVAL: not ELF64.
 */
int stubelf_image_size(const void *image, size_t avail, size_t *ret_size)
{
	Elf64_Ehdr eh;
	uint64_t end;

	if (!image || avail < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, image, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -EINVAL;
	if (eh.e_shnum && eh.e_shentsize != sizeof(Elf64_Shdr))
		return -EINVAL;
	if (eh.e_shoff > STUB_MAX_IMAGE)
		return -EINVAL;
	end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	if (end < sizeof(eh))
		end = sizeof(eh);
	if (end > STUB_MAX_IMAGE || end > avail)
		return -EINVAL;
	*ret_size = (size_t)end;
	return 0;
}

/* ------------------------------------------------------------ names */

struct name_node {
	struct name_node *next;
	char name[];
};

static struct name_node *names;

/* Kernel names live as long as the process, like CUPTI's name pointers,
 * so a record read after its module is unloaded still names it. Caller
 * holds g_drv.mu. */
static const char *intern(const char *name)
{
	struct name_node *n;
	size_t len = strlen(name);

	for (n = names; n; n = n->next)
		if (strcmp(n->name, name) == 0)
			return n->name;
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->name, name, len + 1);
	n->next = names;
	names = n;
	return n->name;
}

/* ------------------------------------------------------------ modules */

static bool eager_loading(void)
{
	const char *v = getenv("CUDA_MODULE_LOADING");

	return v && strcmp(v, "EAGER") == 0;
}

static struct stub_module_event module_event(const struct CUmod_st *m)
{
	struct stub_module_event ev = {
		.module_id = m->id,
		.image = m->image,
		.size = m->size,
		.context = &g_drv.primary,
	};
	return ev;
}

/* Caller holds g_drv.mu, as the real driver holds its lock here. */
void drv_module_device_load(struct CUmod_st *m)
{
	const struct stub_cupti_ops *ops = atomic_load(&g_drv.cupti);
	struct stub_module_event ev;

	if (m->device_loaded)
		return;
	m->device_loaded = true;
	ev = module_event(m);
	if (ops)
		ops->module_loaded(&ev);
}

/*
 * GPUPROBE_STUB_CUBIN_DUMP=DIR: every module's image is written to
 * DIR/<pid>-<module id>.cubin, so a test can check the loader's view of the
 * cubins (CRCs, kernel names) against the bytes the driver really loaded.
 * Best effort: a failure here never fails the load.
 */
static void module_dump(const struct CUmod_st *m)
{
	const char *dir = getenv("GPUPROBE_STUB_CUBIN_DUMP");
	char path[4096];
	size_t done = 0;
	int fd;

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/%d-%llu.cubin", dir, (int)getpid(),
		 (unsigned long long)m->id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	while (done < m->size) {
		ssize_t n = write(fd, m->image + done, m->size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
}

/* Takes ownership of image (malloc'd, size bytes). */
static CUresult module_create(uint8_t *image, size_t size,
			      struct CUmod_st **ret_mod)
{
	struct CUmod_st *m = calloc(1, sizeof(*m));

	if (!m) {
		free(image);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = STUB_MAGIC_MODULE;
	m->image = image;
	m->size = size;
	pthread_mutex_lock(&g_drv.mu);
	m->id = g_drv.next_module_id++;
	m->next = g_drv.modules;
	g_drv.modules = m;
	if (eager_loading())
		drv_module_device_load(m);
	pthread_mutex_unlock(&g_drv.mu);
	module_dump(m);
	*ret_mod = m;
	return CUDA_SUCCESS;
}

static CUresult module_from_memory(const void *image, struct CUmod_st **ret_mod)
{
	size_t size;
	uint8_t *copy;

	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	if (stubelf_image_size(image, SIZE_MAX, &size) != 0)
		return CUDA_ERROR_INVALID_IMAGE;
	copy = malloc(size);
	if (!copy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(copy, image, size);
	return module_create(copy, size, ret_mod);
}

static CUresult read_all(int fd, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return CUDA_ERROR_INVALID_IMAGE;
		done += (size_t)n;
	}
	return CUDA_SUCCESS;
}

static CUresult module_from_file(const char *path, struct CUmod_st **ret_mod)
{
	Elf64_Ehdr eh;
	struct stat st;
	uint8_t *image;
	size_t size;
	CUresult r;
	int fd;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = CUDA_ERROR_INVALID_IMAGE;
	if (fstat(fd, &st) != 0 || read_all(fd, (uint8_t *)&eh, sizeof(eh)) != 0 ||
	    stubelf_image_size(&eh, (size_t)st.st_size, &size) != 0)
		goto err_close;
	r = CUDA_ERROR_OUT_OF_MEMORY;
	image = malloc(size);
	if (!image)
		goto err_close;
	r = read_all(fd, image, size);
	close(fd);
	if (r != CUDA_SUCCESS) {
		free(image);
		return r;
	}
	return module_create(image, size, ret_mod);

err_close:
	close(fd);
	return r;
}

/* Functions go to the graveyard, not free(): a stale handle then fails
 * with INVALID_HANDLE instead of reading freed memory. */
static CUresult module_destroy(struct CUmod_st *m)
{
	const struct stub_cupti_ops *ops;
	struct stub_module_event ev;
	struct CUmod_st **pp;
	struct CUfunc_st *f;

	pthread_mutex_lock(&g_drv.mu);
	for (pp = &g_drv.modules; *pp && *pp != m; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&g_drv.mu);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*pp = m->next;
	ops = atomic_load(&g_drv.cupti);
	ev = module_event(m);
	if (m->device_loaded && ops)
		ops->module_unloading(&ev);
	while ((f = m->funcs)) {
		m->funcs = f->next;
		f->mod = NULL;
		f->next = g_drv.graveyard;
		g_drv.graveyard = f;
	}
	m->magic = 0;
	pthread_mutex_unlock(&g_drv.mu);
	free(m->image);
	free(m);
	return CUDA_SUCCESS;
}

/* Caller holds g_drv.mu. */
static struct CUfunc_st *module_func(struct CUmod_st *m, const char *name)
{
	struct CUfunc_st *f;
	const char *iname = intern(name);

	if (!iname)
		return NULL;
	for (f = m->funcs; f; f = f->next)
		if (f->name == iname)
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->magic = STUB_MAGIC_FUNC;
	f->mod = m;
	f->name = iname;
	f->next = m->funcs;
	m->funcs = f;
	return f;
}

/* Caller holds g_drv.mu. NULL: not a live function. */
struct CUfunc_st *drv_func(CUfunction h)
{
	struct CUfunc_st *f = (struct CUfunc_st *)h;

	if (!f || f->magic != STUB_MAGIC_FUNC || !f->mod)
		return NULL;
	return f;
}

static bool module_live(const struct CUmod_st *m)
{
	return m && m->magic == STUB_MAGIC_MODULE;
}

static CUresult get_function(struct CUmod_st *m, const char *name,
			     struct CUfunc_st **ret_f)
{
	struct CUfunc_st *f;

	if (!name || !ret_f)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_drv.mu);
	if (!module_live(m)) {
		pthread_mutex_unlock(&g_drv.mu);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	f = module_func(m, name);
	pthread_mutex_unlock(&g_drv.mu);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ret_f = f;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ module API */

static CUresult load_checked(CUmodule *module, const void *image,
			     const char *path)
{
	struct CUmod_st *m;
	CUresult r = drv_check_ctx();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	r = path ? module_from_file(path, &m) : module_from_memory(image, &m);
	if (r == CUDA_SUCCESS)
		*module = m;
	return r;
}

STUB_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	API_BEGIN(cuModuleLoad);
	if (!fname)
		API_END(CUDA_ERROR_INVALID_VALUE);
	API_END(load_checked(module, NULL, fname));
}

STUB_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	API_BEGIN(cuModuleLoadData);
	API_END(load_checked(module, image, NULL));
}

STUB_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				     unsigned int numOptions, CUjit_option *options,
				     void **optionValues)
{
	API_BEGIN(cuModuleLoadDataEx);
	(void)numOptions, (void)options, (void)optionValues;
	API_END(load_checked(module, image, NULL));
}

STUB_API CUresult cuModuleUnload(CUmodule hmod)
{
	API_BEGIN(cuModuleUnload);
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!hmod)
		API_END(CUDA_ERROR_INVALID_HANDLE);
	API_END(module_destroy(hmod));
}

STUB_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
				      const char *name)
{
	struct CUfunc_st *f;
	CUresult r;

	API_BEGIN(cuModuleGetFunction);
	r = drv_check_ctx();
	if (r == CUDA_SUCCESS)
		r = get_function(hmod, name, &f);
	if (r == CUDA_SUCCESS)
		*hfunc = f;
	API_END(r);
}

/* ------------------------------------------------------------ library API */

STUB_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				    CUjit_option *jitOptions, void **jitOptionsValues,
				    unsigned int numJitOptions,
				    CUlibraryOption *libraryOptions,
				    void **libraryOptionValues,
				    unsigned int numLibraryOptions)
{
	struct CUlib_st *lib;
	struct CUmod_st *m;
	CUresult r;

	API_BEGIN(cuLibraryLoadData);
	(void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
	(void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
	if (!drv_is_initialized())
		API_END(CUDA_ERROR_NOT_INITIALIZED);
	if (!library)
		API_END(CUDA_ERROR_INVALID_VALUE);
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		API_END(CUDA_ERROR_OUT_OF_MEMORY);
	r = module_from_memory(code, &m);
	if (r != CUDA_SUCCESS) {
		free(lib);
		API_END(r);
	}
	lib->magic = STUB_MAGIC_LIBRARY;
	lib->mod = m;
	*library = lib;
	API_END(CUDA_SUCCESS);
}

STUB_API CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult r;

	API_BEGIN(cuLibraryUnload);
	if (!library || library->magic != STUB_MAGIC_LIBRARY)
		API_END(CUDA_ERROR_INVALID_HANDLE);
	r = module_destroy(library->mod);
	library->magic = 0;
	free(library);
	API_END(r);
}

STUB_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
				     const char *name)
{
	struct CUfunc_st *f;
	CUresult r;

	API_BEGIN(cuLibraryGetKernel);
	if (!pKernel)
		API_END(CUDA_ERROR_INVALID_VALUE);
	if (!library || library->magic != STUB_MAGIC_LIBRARY)
		API_END(CUDA_ERROR_INVALID_HANDLE);
	r = get_function(library->mod, name, &f);
	if (r == CUDA_SUCCESS)
		*pKernel = (CUkernel)f;
	API_END(r);
}

STUB_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct CUfunc_st *f;
	CUresult r;

	API_BEGIN(cuKernelGetFunction);
	r = drv_check_ctx();
	if (r != CUDA_SUCCESS)
		API_END(r);
	if (!pFunc)
		API_END(CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&g_drv.mu);
	f = drv_func((CUfunction)kernel);
	if (f)
		drv_module_device_load(f->mod);
	pthread_mutex_unlock(&g_drv.mu);
	if (!f)
		API_END(CUDA_ERROR_INVALID_HANDLE);
	*pFunc = (CUfunction)f;
	API_END(CUDA_SUCCESS);
}
