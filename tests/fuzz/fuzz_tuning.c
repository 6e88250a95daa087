/* SPDX-License-Identifier: MIT */
/* Fuzz target: the tuning file (TUTTI_TUNING_FILE), read from a memory file. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tune/cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("tuning", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64], err[512];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        tt_cost_model_t m;
        tt_cost_defaults(&m);
        tt_cost_load(&m, path, err, sizeof err);
    }
    close(fd);
    return 0;
}
