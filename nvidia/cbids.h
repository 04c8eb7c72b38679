/* SPDX-License-Identifier: MIT */
/*
 * Which CUDA calls the shim records, and each one's class: a launch, a copy
 * or memset, or a call that adds a graph node (the loader joins the classes
 * apart). As lists by domain, to switch CUPTI's callbacks or per-call
 * records on for them; as tables by callback id, filled once at start, for
 * the callbacks and records as they come.
 */
#ifndef GP_NVIDIA_CBIDS_H
#define GP_NVIDIA_CBIDS_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A call's class (cbids__class). */
enum cbid_class { CBID_OTHER = -1, CBID_LAUNCH = 0, CBID_COPY = 1, CBID_NODE = 2 };

struct cbid_list {
	CUpti_CallbackDomain domain; /* CUPTI_CB_DOMAIN_DRIVER_API or _RUNTIME_API */
	const CUpti_CallbackId *ids;
	size_t n;
};

/* The lists of recorded calls (ret_lists) and how many lists there are. */
size_t cbids__lists(const struct cbid_list **ret_lists);
/* Fills the tables by id: once, before any callback or record can come. */
void cbids__init(void);
/* A call's enum cbid_class: CBID_OTHER for a call not listed. */
int cbids__class(bool driver, CUpti_CallbackId cbid);

#endif
