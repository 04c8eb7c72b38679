/* SPDX-License-Identifier: MIT */
/*
 * Pin the glibc symbol versions the shim references to the oldest ones, so a
 * shim built on a new distribution loads into programs on an old one
 * (tools/check-portable-elf allows nothing above GLIBC_2.28). glibc 2.34
 * moved libpthread and libdl into libc and gave their functions new default
 * versions; the old versions are still exported and behave the same.
 *
 * Not under sanitizers: their interceptors are unversioned definitions in
 * the test executable, and a versioned reference could bypass them.
 * Never pin pthread_cond_*: their 2.2.5 versions are the old ABI.
 */
#ifndef GP_GLIBC_COMPAT_H
#define GP_GLIBC_COMPAT_H

#include <features.h> /* defines __GLIBC__ */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define GP_NO_SYMVER 1
#endif
#endif

#if !defined(GP_NO_SYMVER) && defined(__GLIBC__)
#if defined(__x86_64__)
#define GP_SYMVER(sym) __asm__(".symver " #sym "," #sym "@GLIBC_2.2.5")
#elif defined(__aarch64__)
#define GP_SYMVER(sym) __asm__(".symver " #sym "," #sym "@GLIBC_2.17")
#endif
#endif

#ifdef GP_SYMVER
GP_SYMVER(pthread_create);
GP_SYMVER(pthread_once);
GP_SYMVER(pthread_detach);
GP_SYMVER(pthread_sigmask);
GP_SYMVER(pthread_mutexattr_init);
GP_SYMVER(pthread_mutexattr_settype);
GP_SYMVER(pthread_mutexattr_destroy);
GP_SYMVER(pthread_mutex_trylock);
GP_SYMVER(dlopen);
GP_SYMVER(dlsym);
GP_SYMVER(dlerror);
GP_SYMVER(dladdr);
GP_SYMVER(dlclose);
#endif

#endif /* GP_GLIBC_COMPAT_H */
