/* SPDX-License-Identifier: MIT */
/*
 * The RDMA ports' rates, from libibverbs opened at run time, so tutti-bw
 * runs on machines without rdma-core. Lane rates are the data rates after
 * line encoding (8b/10b up to QDR, 64b/66b from FDR10 on).
 */
#include <dlfcn.h>
#include <stdio.h>

#include "bw_ib.h"
#include "core/env_config.h"

#ifdef TT_HAVE_VERBS
#include <infiniband/verbs.h>

#include "transports/verbs/verbs.h"

/* Gb/s of one lane for ibv_port_attr.active_speed. */
static double lane_gbit(unsigned speed, const char **name)
{
    switch (speed) {
    case 1: *name = "SDR"; return 2.0;
    case 2: *name = "DDR"; return 4.0;
    case 4: *name = "QDR"; return 8.0;
    case 8: *name = "FDR10"; return 10.0;
    case 16: *name = "FDR"; return 13.64;
    case 32: *name = "EDR"; return 25.0;
    case 64: *name = "HDR"; return 50.0;
    case 128: *name = "NDR"; return 100.0;
    default: *name = "?"; return 0;
    }
}

static int lanes(unsigned width)
{
    switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
    }
}

typedef struct ibv_device **(*get_list_fn)(int *);
typedef void (*free_list_fn)(struct ibv_device **);
typedef struct ibv_context *(*open_fn)(struct ibv_device *);
typedef int (*close_fn)(struct ibv_context *);
typedef int (*query_dev_fn)(struct ibv_context *, struct ibv_device_attr *);
typedef int (*query_port_fn)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
typedef const char *(*dev_name_fn)(struct ibv_device *);

double tt_bw_ib_rate_gbps(char *what, size_t len)
{
    /* The library the verbs transport opens (TUTTI_IBVERBS_LIB), so the peak is the same NIC's. */
    const char *name = tt_config_table_str(&tt_verbs_config, TT_CFG_IBVERBS_LIB);
    if (!*name)
        name = "libibverbs.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(what, len, "libibverbs is not installed");
        return 0;
    }
    get_list_fn get_list = (get_list_fn)dlsym(lib, "ibv_get_device_list");
    free_list_fn free_list = (free_list_fn)dlsym(lib, "ibv_free_device_list");
    open_fn open_dev = (open_fn)dlsym(lib, "ibv_open_device");
    close_fn close_dev = (close_fn)dlsym(lib, "ibv_close_device");
    query_dev_fn query_dev = (query_dev_fn)dlsym(lib, "ibv_query_device");
    query_port_fn query_port = (query_port_fn)dlsym(lib, "ibv_query_port");
    dev_name_fn dev_name = (dev_name_fn)dlsym(lib, "ibv_get_device_name");
    double best = 0;
    int n = 0;
    snprintf(what, len, "libibverbs lacks the calls tutti-bw needs");
    if (get_list && free_list && open_dev && close_dev && query_dev && query_port && dev_name) {
        struct ibv_device **devs = get_list(&n);
        snprintf(what, len, "libibverbs finds no RDMA device");
        for (int d = 0; devs && d < n; d++) {
            struct ibv_context *ctx = open_dev(devs[d]);
            struct ibv_device_attr attr;
            if (!ctx)
                continue;
            for (int p = 1; query_dev(ctx, &attr) == 0 && p <= attr.phys_port_cnt; p++) {
                struct ibv_port_attr pa = {0};
                const char *speed;
                if (query_port(ctx, (uint8_t)p, &pa) || pa.state != IBV_PORT_ACTIVE)
                    continue;
                double g = lane_gbit(pa.active_speed, &speed) * lanes(pa.active_width) / 8;
                if (g > best) {
                    best = g;
                    snprintf(what, len, "%s port %d: %dx %s (libibverbs)", dev_name(devs[d]), p,
                             lanes(pa.active_width), speed);
                }
            }
            close_dev(ctx);
        }
        if (devs)
            free_list(devs);
        if (n > 0 && best == 0)
            snprintf(what, len, "no active RDMA port on %d device%s", n, n == 1 ? "" : "s");
    }
    dlclose(lib);
    return best;
}

#else

double tt_bw_ib_rate_gbps(char *what, size_t len)
{
    snprintf(what, len, "this tutti was built without libibverbs");
    return 0;
}

#endif
