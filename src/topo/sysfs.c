/* SPDX-License-Identifier: MIT */
/*
 * Topology from Linux sysfs, for builds without hwloc: CPUs and NUMA nodes
 * from /sys/devices/system, GPUs and NICs from /sys/bus/pci/devices, their
 * bridges from where each device sits under /sys/devices/pci*. NVLinks are
 * not visible here (they need NVML or hwloc's NVML plug-in).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

/* Copies s into out, cut to fit (names here are short in practice). */
static void copy_cut(char *out, size_t len, const char *s)
{
    size_t n = strlen(s);
    if (n >= len)
        n = len - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

static int read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

static unsigned read_hex(const char *path)
{
    char line[64];
    return read_line(path, line, sizeof line) ? 0 : (unsigned)strtoul(line, NULL, 16);
}

static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t plen = strlen(prefix);
        if (strncmp(e->d_name, prefix, plen) == 0 && e->d_name[plen] >= '0' && e->d_name[plen] <= '9')
            n++;
    }
    closedir(d);
    return n;
}

/* Packages and cores: distinct physical_package_id and (package, core_id). */
static void count_cpus(tt_topo_t *t, const char *root)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], line[32];
    snprintf(dir, sizeof dir, "%s/sys/devices/system/cpu", root);
    int npus = count_entries(dir, "cpu");
    long *seen_pkg = calloc((size_t)npus + 1, sizeof *seen_pkg),
         *seen_core = calloc((size_t)npus + 1, sizeof *seen_core);
    if (!seen_pkg || !seen_core) {
        free(seen_pkg);
        free(seen_core);
        return;
    }
    for (int c = 0; c < npus; c++) {
        snprintf(path, sizeof path, "%s/cpu%d/topology/physical_package_id", dir, c);
        long pkg = read_line(path, line, sizeof line) ? 0 : strtol(line, NULL, 10);
        snprintf(path, sizeof path, "%s/cpu%d/topology/core_id", dir, c);
        long core = (read_line(path, line, sizeof line) ? c : strtol(line, NULL, 10)) + pkg * 65536;
        int new_pkg = 1, new_core = 1;
        for (int i = 0; i < t->npackages; i++)
            new_pkg &= seen_pkg[i] != pkg;
        for (int i = 0; i < t->ncores; i++)
            new_core &= seen_core[i] != core;
        if (new_pkg)
            seen_pkg[t->npackages++] = pkg;
        if (new_core)
            seen_core[t->ncores++] = core;
        t->npus++;
    }
    free(seen_pkg);
    free(seen_core);
}

/* The first entry of a device's net/ or infiniband/ folder (or of a
 * virtio child's net/), as its OS name. */
static void os_name_of(const char *devdir, char *out, size_t len)
{
    static const char *const subdirs[] = {"infiniband", "net"};
    char path[PATH_MAX + 32];
    for (int i = 0; i < 2 && !out[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", devdir, subdirs[i]);
        DIR *d = opendir(path);
        if (!d)
            continue;
        for (struct dirent *e; (e = readdir(d)) && !out[0];)
            if (e->d_name[0] != '.')
                copy_cut(out, len, e->d_name);
        closedir(d);
    }
    if (out[0])
        return;
    DIR *d = opendir(devdir); /* virtio puts the interface one level down */
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) && !out[0];)
        if (strncmp(e->d_name, "virtio", 6) == 0) {
            snprintf(path, sizeof path, "%s/%s", devdir, e->d_name);
            os_name_of(path, out, len);
        }
    closedir(d);
}

static void add_device(tt_topo_t *t, const char *root, const char *name)
{
    char dev[PATH_MAX], path[PATH_MAX + 64], real[PATH_MAX], line[64];
    snprintf(dev, sizeof dev, "%s/sys/bus/pci/devices/%s", root, name);
    snprintf(path, sizeof path, "%s/class", dev);
    unsigned cls = read_hex(path) >> 8;
    snprintf(path, sizeof path, "%s/vendor", dev);
    unsigned vendor = read_hex(path);
    int gpu = (cls == 0x0302 || cls == 0x0300) && (vendor == 0x10de || vendor == 0x1002),
        nic = cls >> 8 == 0x02;
    if ((!gpu && !nic) || t->ndevs >= TT_TOPO_MAX_DEVS || !realpath(dev, real))
        return;
    tt_topo_dev_t *d = &t->devs[t->ndevs++];
    memset(d, 0, sizeof *d);
    d->kind = nic ? TT_DEV_NIC : TT_DEV_GPU;
    d->vendor = vendor;
    d->pci_class = cls;
    copy_cut(d->busid, sizeof d->busid, name);
    snprintf(path, sizeof path, "%s/numa_node", dev);
    d->numa = read_line(path, line, sizeof line) ? -1 : atoi(line);
    if (d->numa < 0 && t->nnuma <= 1)
        d->numa = 0; /* one node: the kernel reports -1 */
    snprintf(path, sizeof path, "%s/local_cpulist", dev);
    if (read_line(path, d->cpus, sizeof d->cpus))
        d->cpus[0] = '\0';
    os_name_of(dev, d->os_name, sizeof d->os_name);
    /* /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0: the host bridge,
     * then every bridge down to the device itself (not a bridge). */
    char *s = strstr(real, "/devices/pci");
    for (char *tok = s ? strtok(s + strlen("/devices/"), "/") : NULL; tok; tok = strtok(NULL, "/")) {
        if (strcmp(tok, name) == 0)
            break;
        if (d->depth < TT_TOPO_MAX_DEPTH)
            snprintf(d->bridges[d->depth++], TT_TOPO_LABEL, "%s%s",
                     strncmp(tok, "pci", 3) == 0 ? "host " : "", strncmp(tok, "pci", 3) == 0 ? tok + 3 : tok);
    }
}

tutti_status_t tt_topo_load_sysfs(tt_topo_t *t, const char *root, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    snprintf(t->source, sizeof t->source, "sysfs");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sys/devices/system/node", root);
    t->nnuma = count_entries(dir, "node");
    if (t->nnuma == 0)
        t->nnuma = 1; /* kernels without NUMA support */
    count_cpus(t, root);
    if (t->npus == 0) {
        snprintf(err, errlen, "%s/sys: no CPUs found", root);
        return TUTTI_ERR_CONFIG;
    }
    snprintf(dir, sizeof dir, "%s/sys/bus/pci/devices", root);
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.')
                add_device(t, root, e->d_name);
        closedir(d);
    }
    snprintf(dir, sizeof dir, "%s/sys/class/dmi/id/product_name", root);
    if (read_line(dir, t->machine, sizeof t->machine))
        t->machine[0] = '\0'; /* no product name: the host name says which machine */
    tt_topo_finish(t);
    return TUTTI_SUCCESS;
}
