/* SPDX-License-Identifier: MIT */
/*
 * Expected GPU link rates. PCIe lane rates after encoding: 8b/10b for
 * generations 1 and 2, 128b/130b for 3 to 5, and 1b/1b FLIT mode with
 * 242/256 payload for 6. NVLink per link and direction: 20 GB/s for
 * version 1, 25 for versions 2 to 4, 50 for version 5.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bw_gpu_peak.h"

static int read_line(const char *root, const char *busid, const char *file, char *out, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/%s", root, busid, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    return ok ? 0 : -1;
}

int tt_bw_pcie_link(const char *root, const char *busid, tt_pcie_link_t *out)
{
    char speed[64], width[32];
    memset(out, 0, sizeof *out);
    if (read_line(root, busid, "current_link_speed", speed, sizeof speed) ||
        read_line(root, busid, "current_link_width", width, sizeof width))
        return -1;
    double gt = strtod(speed, NULL); /* "16.0 GT/s PCIe", or "Unknown" */
    int lanes = atoi(width);
    static const struct {
        double gt;
        int gen;
        double efficiency;
    } gens[] = {{2.5, 1, 0.8},          {5.0, 2, 0.8},          {8.0, 3, 128.0 / 130},
                {16.0, 4, 128.0 / 130}, {32.0, 5, 128.0 / 130}, {64.0, 6, 242.0 / 256}};
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++)
        if (gt > gens[i].gt * 0.95 && gt < gens[i].gt * 1.05 && lanes > 0) {
            out->gen = gens[i].gen;
            out->width = lanes;
            out->gt_per_s = gt;
            out->gbps = gt * gens[i].efficiency * lanes / 8;
            return 0;
        }
    return -1;
}

/* NVML's ABI, as far as tutti-bw uses it. */
typedef void *nvml_device_t;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *, nvml_device_t *);
typedef int (*nvml_link_state_fn)(nvml_device_t, unsigned, int *);
typedef int (*nvml_link_version_fn)(nvml_device_t, unsigned, unsigned *);
#define NVML_MAX_LINKS 18

int tt_bw_nvlinks(const char *busid, double *gbps, int *version, char *why, size_t len)
{
    *gbps = 0;
    *version = 0;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, len, "NVML (libnvidia-ml.so.1) is not installed");
        return 0;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_init_fn shutdown = (nvml_init_fn)dlsym(lib, "nvmlShutdown");
    nvml_by_bus_fn by_bus = (nvml_by_bus_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_link_state_fn state = (nvml_link_state_fn)dlsym(lib, "nvmlDeviceGetNvLinkState");
    nvml_link_version_fn ver = (nvml_link_version_fn)dlsym(lib, "nvmlDeviceGetNvLinkVersion");
    nvml_device_t dev;
    int links = 0;
    if (!init || !shutdown || !by_bus || !state || !ver || init() != 0) {
        snprintf(why, len, "NVML did not start");
    } else {
        if (by_bus(busid, &dev) == 0) {
            for (unsigned l = 0; l < NVML_MAX_LINKS; l++) {
                int active = 0;
                unsigned v = 0;
                if (state(dev, l, &active) != 0 || active != 1 || ver(dev, l, &v) != 0)
                    continue;
                links++;
                *version = (int)v;
                *gbps += v >= 5 ? 50 : v >= 2 ? 25 : 20;
            }
            snprintf(why, len, links ? "NVML" : "NVML reports no active NVLink");
        } else {
            snprintf(why, len, "NVML does not know the GPU at %s", busid);
        }
        shutdown();
    }
    dlclose(lib);
    return links;
}
