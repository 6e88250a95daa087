/* SPDX-License-Identifier: MIT */
/*
 * tutti-topo: the machine as tutti sees it. The default view is a matrix of
 * how every GPU and NIC pair is connected, in the classes of
 * `nvidia-smi topo -m`, with each device's CPUs and NUMA node and the NIC
 * each GPU should use; --tree shows the PCI tree; --json everything.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tutti-topo [--matrix | --tree | --json] [-i FILE.xml]\n"
               "  --matrix        how each GPU/NIC pair is connected (default)\n"
               "  --tree          packages, NUMA nodes and the PCI tree down to each GPU and NIC\n"
               "  --json          all of it, machine-readable\n"
               "  -i, --input F   read an hwloc XML export instead of this machine\n");
}

static void print_matrix(const tt_topo_t *t)
{
    char cell[16];
    int links;
    printf("%-8s", "");
    for (int j = 0; j < t->ndevs; j++)
        printf("%-7s", t->devs[j].name);
    printf("%-16s%s\n", "CPU Affinity", "NUMA Affinity");
    for (int i = 0; i < t->ndevs; i++) {
        printf("%-8s", t->devs[i].name);
        for (int j = 0; j < t->ndevs; j++) {
            tt_path_t path = tt_topo_path(t, i, j, &links);
            tt_topo_path_name(path, links, cell, sizeof cell);
            printf("%-7s", cell);
        }
        char numa[16] = "N/A";
        if (t->devs[i].numa >= 0)
            snprintf(numa, sizeof numa, "%d", t->devs[i].numa);
        printf("%-16s%s\n", t->devs[i].cpus[0] ? t->devs[i].cpus : "N/A", numa);
    }
    if (t->ndevs == 0)
        printf("(no GPUs or NICs found)\n");
    printf("\nLegend:\n"
           "  X    = self\n"
           "  SYS  = through the interconnect between NUMA nodes (e.g. QPI/UPI)\n"
           "  NODE = between PCIe host bridges within one NUMA node\n"
           "  PHB  = through a PCIe host bridge (typically the CPU)\n"
           "  PXB  = through several PCIe bridges, not the host bridge\n"
           "  PIX  = through at most one PCIe bridge (switch)\n"
           "  NV#  = a bonded set of # NVLinks\n");
    if (t->nnics) {
        printf("\nNICs:\n");
        for (int i = 0; i < t->ndevs; i++)
            if (t->devs[i].kind == TT_DEV_NIC)
                printf("  %s: %s (%s)\n", t->devs[i].name, t->devs[i].os_name[0] ? t->devs[i].os_name : "?",
                       t->devs[i].busid);
    }
    if (t->ngpus && t->nnics) {
        printf("\nNearest NIC per GPU:\n");
        for (int i = 0; i < t->ndevs; i++)
            if (t->devs[i].kind == TT_DEV_GPU) {
                int nic = tt_topo_nearest_nic(t, i);
                tt_path_t path = tt_topo_path(t, i, nic, &links);
                tt_topo_path_name(path, links, cell, sizeof cell);
                printf("  %s -> %s (%s)\n", t->devs[i].name, t->devs[nic].name, cell);
            }
    }
}

/* "host (product)", whichever of the two is known. */
static void machine_name(const tt_topo_t *t, char *out, size_t len)
{
    if (t->host[0] && t->machine[0] && strcmp(t->host, t->machine) != 0)
        snprintf(out, len, "%s (%s)", t->host, t->machine);
    else
        snprintf(out, len, "%s", t->host[0] ? t->host : t->machine[0] ? t->machine : "unnamed machine");
}

static void print_tree(const tt_topo_t *t)
{
    char name[200];
    machine_name(t, name, sizeof name);
    printf("%s: %d package%s, %d NUMA node%s, %d cores, %d PUs (from %s)\n", name, t->npackages,
           t->npackages == 1 ? "" : "s", t->nnuma, t->nnuma == 1 ? "" : "s", t->ncores, t->npus, t->source);
    /* In bus order the devices that share bridges come together. */
    int order[TT_TOPO_MAX_DEVS];
    for (int i = 0; i < t->ndevs; i++) {
        int k = i;
        while (k > 0 && strcmp(t->devs[order[k - 1]].busid, t->devs[i].busid) > 0) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    for (int numa = -1; numa < t->nnuma; numa++) {
        const tt_topo_dev_t *prev = NULL;
        for (int o = 0; o < t->ndevs; o++) {
            const tt_topo_dev_t *d = &t->devs[order[o]];
            if (d->numa != numa)
                continue;
            if (!prev && numa < 0)
                printf("  NUMA node unknown\n");
            else if (!prev)
                printf("  NUMA node %d (CPUs %s)\n", numa, d->cpus[0] ? d->cpus : "?");
            int shared = 0;
            while (prev && shared < d->depth && shared < prev->depth &&
                   strcmp(prev->bridges[shared], d->bridges[shared]) == 0)
                shared++;
            for (int b = shared; b < d->depth; b++)
                printf("  %*s%s%s\n", 2 * (b + 1), "", b == 0 ? "" : "bridge ", d->bridges[b]);
            printf("  %*s%s %s %s\n", 2 * (d->depth + 1), "", d->name, d->busid, d->os_name);
            prev = d;
        }
    }
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void print_json(const tt_topo_t *t)
{
    char cell[16];
    int links;
    printf("{\"source\": ");
    json_string(t->source);
    printf(", \"machine\": ");
    json_string(t->machine);
    printf(", \"host\": ");
    json_string(t->host);
    printf(", \"packages\": %d, \"numa_nodes\": %d, \"cores\": %d, \"pus\": %d,\n  \"devices\": [",
           t->npackages, t->nnuma, t->ncores, t->npus);
    for (int i = 0; i < t->ndevs; i++) {
        const tt_topo_dev_t *d = &t->devs[i];
        printf("%s\n    {\"name\": \"%s\", \"kind\": \"%s\", \"busid\": ", i ? "," : "", d->name,
               d->kind == TT_DEV_GPU ? "gpu" : "nic");
        json_string(d->busid);
        printf(", \"os_name\": ");
        json_string(d->os_name);
        printf(", \"vendor\": \"%04x\", \"class\": \"%04x\", \"numa\": %d, \"cpus\": ", d->vendor,
               d->pci_class, d->numa);
        json_string(d->cpus);
        printf(", \"pci_path\": [");
        for (int b = 0; b < d->depth; b++) {
            printf("%s", b ? ", " : "");
            json_string(d->bridges[b]);
        }
        int nic = d->kind == TT_DEV_GPU ? tt_topo_nearest_nic(t, i) : -1;
        printf("], \"nearest_nic\": %s%s%s}", nic >= 0 ? "\"" : "", nic >= 0 ? t->devs[nic].name : "null",
               nic >= 0 ? "\"" : "");
    }
    printf("],\n  \"matrix\": {");
    for (int i = 0; i < t->ndevs; i++) {
        printf("%s\n    \"%s\": {", i ? "," : "", t->devs[i].name);
        for (int j = 0; j < t->ndevs; j++) {
            tt_path_t path = tt_topo_path(t, i, j, &links);
            tt_topo_path_name(path, links, cell, sizeof cell);
            printf("%s\"%s\": \"%s\"", j ? ", " : "", t->devs[j].name, cell);
        }
        printf("}");
    }
    printf("}}\n");
}

int main(int argc, char **argv)
{
    enum { MATRIX, TREE, JSON } view = MATRIX;
    static const struct option longs[] = {
        {"matrix", no_argument, 0, 'm'},      {"tree", no_argument, 0, 't'}, {"json", no_argument, 0, 'j'},
        {"input", required_argument, 0, 'i'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *input = NULL;
    for (int c; (c = getopt_long(argc, argv, "mtji:h", longs, NULL)) != -1;) {
        switch (c) {
        case 'm': view = MATRIX; break;
        case 't': view = TREE; break;
        case 'j': view = JSON; break;
        case 'i': input = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    tt_topo_t *t = malloc(sizeof *t);
    char err[256];
    if (!t)
        return fprintf(stderr, "tutti-topo: out of memory\n"), 1;
    tutti_status_t st =
        input ? tt_topo_load_xml(t, input, err, sizeof err) : tt_topo_load_local(t, err, sizeof err);
    if (st) {
        fprintf(stderr, "tutti-topo: %s\n", err);
        free(t);
        return 1;
    }
    if (view == MATRIX)
        print_matrix(t);
    else if (view == TREE)
        print_tree(t);
    else
        print_json(t);
    free(t);
    return 0;
}
