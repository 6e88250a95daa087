/* SPDX-License-Identifier: MIT */
/*
 * Where a buffer lives and whether a GPU can be used, as the device
 * layer's runtime table (rt.h) answers: CUDA's where built, the tests'
 * stream model in their place.
 */
#include <stdio.h>

#include "device/memkind.h"
#include "device/rt.h"

#ifdef TT_HAVE_CUDA
static const tt_device_rt_t *current_rt = &tt_device_cuda_rt;
#else
static const tt_device_rt_t *current_rt;
#endif

const tt_device_rt_t *tt_device_runtime(void)
{
    return current_rt;
}

void tt_device_set_rt(const tt_device_rt_t *rt)
{
    current_rt = rt;
}

tt_mem_kind_t tt_mem_kind(const void *p)
{
    int device = -1;
    if (!p || !current_rt || current_rt->device_of(p, &device))
        return TT_MEM_HOST;
    return device >= 0 ? TT_MEM_DEVICE : TT_MEM_HOST;
}

tutti_status_t tt_device_usable(char *why, size_t whylen)
{
    if (!current_rt) {
        snprintf(why, whylen, "this tutti was built without CUDA");
        return TUTTI_ERR_UNSUPPORTED;
    }
    return current_rt->usable(why, whylen);
}
