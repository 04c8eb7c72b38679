/* SPDX-License-Identifier: MIT */
/*
 * C++ (Itanium ABI) name demangling through libstdc++'s __cxa_demangle,
 * a maintained demangler, rather than one of our own.
 */
#ifndef GP_SYMBOLIZE_DEMANGLE_H
#define GP_SYMBOLIZE_DEMANGLE_H

/*
 * Demangles name into a malloc'ed string. -EINVAL when name is not a
 * mangled name, -ENOMEM when out of memory.
 */
int demangle__cxx(const char *name, char **ret_name);
/* Demangled if possible, else a copy of name; NULL only when out of memory. */
char *demangle__or_copy(const char *name);

#endif /* GP_SYMBOLIZE_DEMANGLE_H */
