/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: admission (the bootstrap root's and tcp's) reading the
 * hellos of connections on a real listening socket. The input is split
 * into up to four connections' bytes (a 0xff byte separates them); only
 * a connection with the key may be handed over, and it must be the one
 * that sent it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admit.h"
#include "core/clock.h"
#include "core/log.h"

static const unsigned char key[TT_KEY_BYTES] = "0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int lfd = -1;
    static tt_sockaddr_t addr;
    if (lfd < 0) {
        setenv("TUTTI_LOG", "none", 1);
        if (tt_sock_pick_addr("lo", &addr) || tt_sock_listen(&addr, &lfd))
            return 0;
    }
    int fds[4], n = 0;
    const uint8_t *start = data, *end = data + size;
    while (n < 4 && start <= end) {
        const uint8_t *cut = memchr(start, 0xff, (size_t)(end - start));
        if (!cut)
            cut = end;
        if (tt_sock_connect(&addr, tt_now_ms() + 1000, &fds[n]))
            break;
        if (cut > start && send(fds[n], start, (size_t)(cut - start), MSG_NOSIGNAL) < 0) {
            close(fds[n]);
            break;
        }
        n++;
        start = cut + 1;
    }
    tt_admit_t *a = malloc(sizeof *a);
    tt_admit_init(a, lfd, key, TT_SUB_INIT, "fuzz");
    int fd;
    tt_hello_t h;
    while (tt_admit_next(a, tt_now_ms() + 10, &fd, &h) == TUTTI_SUCCESS) {
        if (!tt_hello_matches(&h, key))
            abort(); /* handed over without the key */
        close(fd);
    }
    tt_admit_close(a);
    free(a);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}
