/* SPDX-License-Identifier: MIT */
/* Opening a library at run time and resolving a table of its symbols. */
#include <dlfcn.h>
#include <stdio.h>

#include "core/dl.h"

void *tt_dl_open(const char *path, int flags, const tt_dl_sym_t *syms, size_t nsyms, const char *install,
                 char *why, size_t len)
{
    void *handle = dlopen(path, flags);
    if (!handle) {
        snprintf(why, len, "cannot open %s (install %s): %s", path, install, dlerror());
        return NULL;
    }
    for (size_t i = 0; i < nsyms; i++) {
        *syms[i].slot = dlsym(handle, syms[i].name);
        if (!*syms[i].slot && !syms[i].optional) {
            snprintf(why, len, "%s lacks %s (too old a version)", path, syms[i].name);
            dlclose(handle);
            return NULL;
        }
    }
    return handle;
}
