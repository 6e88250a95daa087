/* SPDX-License-Identifier: MIT */
/* The GPU suites' probe, run in a child process (see gpu_probe.h). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/memkind.h"
#include "tests/device/gpu_probe.h"

int tt_test_gpu_usable(char *why, size_t len)
{
    int fds[2];
    if (pipe(fds))
        return snprintf(why, len, "pipe failed"), 0;
    pid_t pid = fork();
    if (pid == 0) {
        char msg[200] = "";
        int ok = tt_device_usable(msg, sizeof msg) == TUTTI_SUCCESS;
        if (write(fds[1], &ok, sizeof ok) < 0 || write(fds[1], msg, sizeof msg) < 0)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    int ok = 0;
    char msg[200] = "the CUDA probe died";
    if (read(fds[0], &ok, sizeof ok) != sizeof ok || read(fds[0], msg, sizeof msg) <= 0)
        ok = 0;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    snprintf(why, len, "%s", msg);
    return ok;
}
