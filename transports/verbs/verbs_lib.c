/* SPDX-License-Identifier: MIT */
/*
 * libibverbs, opened at run time: libtutti.so must load on machines without
 * rdma-core. The library is opened once per process; TUTTI_IBVERBS_LIB names
 * another one to open instead (the tests' stand-in). Without it, a host with
 * no RDMA driver loaded (no /sys/class/infiniband) is not searched further.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dl.h"
#include "core/env_config.h"
#include "core/log.h"
#include "transports/verbs/verbs.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static tt_ibv_t lib;
static int loaded;
static char lib_why[TT_VERBS_WHY];

/* The symbols, by name and where they go; optional ones may be absent. */
#define SYM(field, name, optional)                                                                           \
    {                                                                                                        \
        (void **)&lib.field, name, optional                                                                  \
    }
static const tt_dl_sym_t symbols[] = {
    SYM(get_device_list, "ibv_get_device_list", 0),
    SYM(free_device_list, "ibv_free_device_list", 0),
    SYM(get_device_name, "ibv_get_device_name", 0),
    SYM(open_device, "ibv_open_device", 0),
    SYM(close_device, "ibv_close_device", 0),
    SYM(query_device, "ibv_query_device", 0),
    SYM(query_port, "ibv_query_port", 0),
    SYM(query_gid, "ibv_query_gid", 0),
    SYM(query_gid_ex, "_ibv_query_gid_ex", 1),
    SYM(alloc_pd, "ibv_alloc_pd", 0),
    SYM(dealloc_pd, "ibv_dealloc_pd", 0),
    SYM(reg_mr, "ibv_reg_mr", 0),
    SYM(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", 1),
    SYM(dereg_mr, "ibv_dereg_mr", 0),
    SYM(create_cq, "ibv_create_cq", 0),
    SYM(destroy_cq, "ibv_destroy_cq", 0),
    SYM(create_qp, "ibv_create_qp", 0),
    SYM(modify_qp, "ibv_modify_qp", 0),
    SYM(destroy_qp, "ibv_destroy_qp", 0),
    SYM(wc_status_str, "ibv_wc_status_str", 1),
    SYM(create_comp_channel, "ibv_create_comp_channel", 1),
    SYM(destroy_comp_channel, "ibv_destroy_comp_channel", 1),
    SYM(get_cq_event, "ibv_get_cq_event", 1),
    SYM(ack_cq_events, "ibv_ack_cq_events", 1),
};

static void load(void)
{
    const char *path = tt_config_table_str(&tt_verbs_config, TT_CFG_IBVERBS_LIB);
    struct stat st;
    if (!*path) {
        /* rdma-core lists devices from sysfs; no class directory means no
         * RDMA driver is loaded, and opening the library would only cost. */
        if (stat("/sys/class/infiniband", &st) != 0) {
            snprintf(lib_why, sizeof lib_why,
                     "no RDMA device (no /sys/class/infiniband: no RDMA driver loaded)");
            return;
        }
        path = "libibverbs.so.1";
    }
    snprintf(lib.path, sizeof lib.path, "%s", path);
    lib.handle = tt_dl_open(path, RTLD_NOW | RTLD_LOCAL, symbols, sizeof symbols / sizeof symbols[0],
                            "rdma-core's libibverbs1", lib_why, sizeof lib_why);
    if (!lib.handle) {
        memset(&lib, 0, sizeof lib);
        return;
    }
    loaded = 1;
    TT_DEBUG(TT_SUB_NET, "verbs: using %s", path);
}

const tt_ibv_t *tt_verbs_lib(char *why, size_t len)
{
    pthread_once(&once, load);
    if (!loaded)
        snprintf(why, len, "%s", lib_why);
    return loaded ? &lib : NULL;
}

int tt_ibv_query_port(const tt_ibv_t *ibv, struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
    /* Providers of an extended context answer through query_port, which
     * knows the size of the caller's struct; others through the old entry. */
    struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
    if (vctx)
        return vctx->query_port(ctx, port, attr, sizeof *attr);
    memset(attr, 0, sizeof *attr);
    return ibv->query_port(ctx, port, (struct _compat_ibv_port_attr *)attr);
}
