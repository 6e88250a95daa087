/* SPDX-License-Identifier: MIT */
/* tutti-info: what this build of tutti has and how it can be configured. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "device/memkind.h"
#include "algorithms/registry.h"
#include "comm/join.h"
#include "topo/hwloc_lib.h"
#include "core/env_config.h"
#include "reduce/reduce.h"
#include "transports/transport.h"
#include "tutti.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: tutti-info [-v] [-l] [-A] [-e] [-h]\n"
                 "  -v  version and build features\n"
                 "  -l  transports\n"
                 "  -A  algorithms and the collectives they serve\n"
                 "  -e  TUTTI_* environment variables with defaults and help\n"
                 "  (no option: all of the above)\n");
}

static const tt_transport_ops_t *transport_built(const char *name)
{
    for (int i = 0; tt_transports[i]; i++)
        if (strcmp(tt_transports[i]->name, name) == 0)
            return tt_transports[i];
    return NULL;
}

/* Whether a built transport is offered on this machine, as -l says it. */
static void say_offered(const tt_transport_ops_t *t)
{
    char why[128] = "";
    if (!t->probe || t->probe(why, sizeof why))
        printf("offered here\n");
    else
        printf("not offered here: %s\n", why);
}

/* What this build has, said from what was compiled in and what this
 * machine offers, never from plans. */
static void print_build(void)
{
    int major, minor, patch;
    tutti_get_version(&major, &minor, &patch);
    printf("tutti %d.%d.%d (headers %d.%d.%d)\n", major, minor, patch, TUTTI_VERSION_MAJOR,
           TUTTI_VERSION_MINOR, TUTTI_VERSION_PATCH);
    printf("reduction kernels: %s (usable:", tt_isa_name(tt_reduce_isa()));
    for (int isa = 0; isa < TT_ISA_COUNT; isa++)
        if (tt_isa_usable((tt_isa_t)isa))
            printf(" %s", tt_isa_name((tt_isa_t)isa));
    printf(")\n");
    /* built with their headers; their libraries open at run time, or not */
    char pmix[200] = "no (not built)", hwloc[200] = "no (not built)";
#ifdef TT_HAVE_PMIX
    char pmix_why[160];
    snprintf(pmix, sizeof pmix, "%s (%s)", tt_comm_pmix_usable(pmix_why, sizeof pmix_why) ? "yes" : "no",
             pmix_why);
#endif
#ifdef TT_HAVE_HWLOC
    char hwloc_why[160];
    const tt_hwloc_t *hw = tt_hwloc(hwloc_why, sizeof hwloc_why);
    snprintf(hwloc, sizeof hwloc, "%s (%s)", hw ? "yes" : "no", hw ? hw->version : hwloc_why);
#endif
    printf("features: pmix=%s hwloc=%s\n", pmix, hwloc);
    char why[160] = "";
#ifdef TT_HAVE_CUDA
    if (tt_device_usable(why, sizeof why) == TUTTI_SUCCESS)
        snprintf(why, sizeof why, "a GPU is usable here");
    printf("cuda: built (device buffers, GPU kernels, the cuda_ipc transport); %s\n", why);
#else
    (void)why;
    printf("cuda: not built (configure found no usable CUDA toolkit; device buffers are refused)\n");
#endif
    const tt_transport_ops_t *verbs = transport_built("verbs");
    if (verbs) {
        printf("verbs: built (the verbs transport; libibverbs.so.1 is opened at run time); ");
        say_offered(verbs);
    } else {
        printf("verbs: not built (configure found no rdma-core headers)\n");
    }
#ifdef TT_HAVE_NCCL_ABI
    printf("nccl: libnccl.so.2 built (NCCL's API over tutti, in %s; tutti-nccl(7))\n", TT_PKGLIBDIR);
#else
    printf("nccl: libnccl.so.2 not built\n");
#endif
}

static void print_transports(void)
{
    printf("transports (default priority order; TUTTI_TRANSPORTS picks):\n");
    for (int i = 0; tt_transports[i]; i++) {
        const tt_transport_ops_t *t = tt_transports[i];
        char why[128] = "";
        int offered = !t->probe || t->probe(why, sizeof why);
        printf("  %-8s %s buffers, %s links: %s\n  %-8s %s%s\n", t->name,
               t->caps & TT_CAP_DEVICE_MEM ? "device" : "host", tt_link_name(t->link), t->summary, "",
               offered ? "offered here" : "not offered here: ", why);
    }
}

static void print_algorithms(void)
{
    printf("algorithms:\n");
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *a = tt_algorithms[i];
        printf("  %-18s %s\n  %-18s collectives:", a->name, a->summary, "");
        for (int c = 0; c < TT_COLL_COUNT; c++)
            if (a->build[c])
                printf(" %s", tt_coll_name((tt_coll_t)c));
        printf("\n");
    }
}

static void print_table(const tt_config_table_t *t)
{
    static const char *const types[] = {"string", "integer", "size"};
    for (int i = 0; i < t->count; i++) {
        const tt_config_entry_t *e = &t->entries[i];
        char allowed[200];
        tt_config_table_allowed(t, i, allowed, sizeof allowed);
        printf("  %-24s %-8s default \"%s\"\n      %s\n      takes %s\n", e->name, types[e->type], e->def,
               e->help, allowed);
    }
}

static void print_variables(void)
{
    printf("environment variables:\n");
    print_table(&tt_config_core);
    printf("  (TUTTI_TRANSPORTS unset:");
    for (int i = 0; tt_transports[i]; i++)
        printf("%s%s", i ? "," : " ", tt_transports[i]->name);
    printf(")\n");
    for (const tt_config_table_t *const *t = tt_transport_configs(); *t; t++) {
        printf("%s transport:\n", (*t)->owner);
        print_table(*t);
    }
}

int main(int argc, char **argv)
{
    int opt, any = 0, v = 0, l = 0, A = 0, e = 0;
    while ((opt = getopt(argc, argv, "vlAeh")) != -1) {
        any = 1;
        switch (opt) {
        case 'v': v = 1; break;
        case 'l': l = 1; break;
        case 'A': A = 1; break;
        case 'e': e = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!any)
        v = l = A = e = 1;
    if (v)
        print_build();
    if (l)
        print_transports();
    if (A)
        print_algorithms();
    if (e)
        print_variables();
    return 0;
}
