/* SPDX-License-Identifier: MIT */
/* Libraries opened at run time (libibverbs, hwloc, PMIx), so that tutti and
 * libnccl.so.2 load on machines without them and link none of them. */
#ifndef TT_DL_H
#define TT_DL_H

#include <stddef.h>

/* One symbol to resolve: where its address goes, its name, and whether the
 * library may lack it (the slot is then NULL). */
typedef struct {
    void **slot;
    const char *name;
    int optional;
} tt_dl_sym_t;

/*
 * Opens path with dlopen's flags and resolves every symbol. The handle, or
 * NULL with why saying what failed (naming install, the package that has
 * the library, when it is absent).
 */
void *tt_dl_open(const char *path, int flags, const tt_dl_sym_t *syms, size_t nsyms, const char *install,
                 char *why, size_t len);

#endif
