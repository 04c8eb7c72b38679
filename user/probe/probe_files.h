/* SPDX-License-Identifier: MIT */
/*
 * The libcuda (and libtorch) files the launch probes are attached to: the part of the
 * probe family that needs the uprobe program but not the skeleton (which
 * stays inside launch_probe.c). One set of probes per distinct file (dev,
 * inode): a uprobe on a file covers every process that maps it. Not an
 * interface of its own: launch_probe.h's launch_probe__attach_* and
 * __file_* functions are, and they hand over to these.
 */
#ifndef GP_PROBE_PROBE_FILES_H
#define GP_PROBE_PROBE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "user/probe/launch_probe.h"

/* Files attached at once, at most (each costs the kernel a set of uprobes). */
#define PROBE_FILES_MAX 64
/*
 * Of them, autograd engines at most, so that files a process makes up
 * cannot take the drivers' slots; swept like drivers when no target maps
 * them (a scan marks the ones its targets map, launch_probe__file_seen).
 */
#define PROBE_FILES_AUTOGRAD_MAX 16
/* Files refused as no driver, remembered (dev, inode) so that no scan reads them again. */
#define PROBE_FILES_REFUSED_MAX 1024

struct bpf_program;
struct bpf_link;

struct probe_file_id {
	dev_t dev;
	ino_t ino;
};

struct attached_file {
	dev_t dev;
	ino_t ino;
	int multi_fd;                 /* its uprobe_multi link (the loads, in windowed mode), or -1 */
	/*
	 * Windowed mode (multi links only): the launch, copy and graph-node
	 * probes are a link of their own, detached between the duty cycle's
	 * windows (-1) and made again from the file (file_fd) and what was
	 * read of it once.
	 */
	int win_fd, file_fd;
	unsigned nr_win;
	__u64 win_off[GP_PROBE_MAX], win_cookie[GP_PROBE_MAX];
	size_t first_link, nr_links;  /* its perf-event links in links */
	bool swept;                   /* attached for a target that maps it: freed when none does */
	bool autograd;                /* an autograd engine's (PROBE_FILE_AUTOGRAD) */
	bool seen;                    /* a target mapped it since the last sweep */
	unsigned missed;              /* sweeps in a row that found no target mapping it */
};

struct probe_files {
	struct bpf_program *prog;     /* the uprobe program every probe runs */
	bool multi;                   /* one uprobe_multi link per file (multi_fd) */
	bool paused;                  /* between windows: windowed links detached */
	bool nodes_quiet;             /* autograd engines' node probes detached: learnt (launch_probe__quiet_nodes) */
	__u64 win_errors;             /* windowed links that could not be made again */
	struct bpf_link **links;
	size_t nr_links, cap_links;
	struct attached_file files[PROBE_FILES_MAX];
	unsigned nr_files;
	unsigned nr_autograd;         /* autograd engine files among them */
	struct probe_file_id refused[PROBE_FILES_REFUSED_MAX]; /* a ring, the oldest forgotten */
	unsigned nr_refused, next_refused;
	struct launch_file_stats fst;
};

enum probe_file_kind {
	PROBE_FILE_CUDA,     /* a libcuda the user or the system named (launch_probe__attach_file) */
	PROBE_FILE_DRIVER,   /* one a target maps: only if a CUDA driver (__attach_driver) */
	PROBE_FILE_AUTOGRAD, /* libtorch's autograd engine, both its points or none (__attach_autograd) */
};

/*
 * Autograd engines' node probes away (quiet) or back; the windows' pause
 * keeps them away too. A link wanted back that could not be made is tried
 * again at the next call. Perf links (not multi) stay: nothing changes.
 * Returns how many links could not be made again.
 */
unsigned probe_files__quiet_nodes(struct probe_files *pf, bool quiet);
/* multi: prog was loaded for multi links (uprobe_multi.h). */
void probe_files__init(struct probe_files *pf, struct bpf_program *prog, bool multi);
/* launch_probe__attach_file, __attach_driver and __attach_autograd, by kind. */
int probe_files__attach(struct probe_files *pf, const char *path, enum probe_file_kind kind,
			struct launch_attach_result *ret_res);
/*
 * Between the duty cycle's windows (paused) the windowed links are
 * detached; back in one they are made again. Returns how many could not
 * be (counted in win_errors: those files' launches rest on the BPF flag).
 */
unsigned probe_files__pause(struct probe_files *pf, bool paused);
/* launch_probe__file_seen. */
int probe_files__seen(struct probe_files *pf, dev_t dev, ino_t ino);
/* A file that may not be opened (on a FUSE mount): refused, as a look-alike is (counted). */
void probe_files__refuse(struct probe_files *pf, dev_t dev, ino_t ino);
/* launch_probe__sweep_files. */
unsigned probe_files__sweep(struct probe_files *pf);
/* Detaches every file (perf-event links side by side: their removals each wait). */
void probe_files__fini(struct probe_files *pf);

#endif /* GP_PROBE_PROBE_FILES_H */
