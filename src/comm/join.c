/* SPDX-License-Identifier: MIT */
/*
 * What every launcher's way in shares (init_env.c's tutti-run and torchrun,
 * slurm.c's srun): the key read from TUTTI_KEY or derived, integer
 * variables, and the root bound on rank 0 before anyone waits on it.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/join.h"
#include "core/env_config.h"
#include "core/hash.h"
#include "core/log.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int tt_join_parse_key(const char *hex, unsigned char key[TT_KEY_BYTES])
{
    if (strlen(hex) != 2 * TT_KEY_BYTES)
        return -1;
    for (int i = 0; i < TT_KEY_BYTES; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        key[i] = (unsigned char)(hi * 16 + lo);
    }
    return 0;
}

/* Without TUTTI_KEY, torchrun and srun jobs derive the key: set TUTTI_KEY
 * (the same on every rank) where the network is not trusted. */
void tt_join_derive_key(const char *material, unsigned char key[TT_KEY_BYTES])
{
    uint64_t h1 = tt_hash(material, strlen(material), TT_HASH_SEED);
    uint64_t h2 = tt_hash(material, strlen(material), h1);
    memcpy(key, &h1, 8);
    memcpy(key + 8, &h2, 8);
}

int tt_join_env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v || tt_parse_int(v, &x) || x < 0 || x > INT32_MAX)
        return -1;
    *out = (int)x;
    return 0;
}

tutti_status_t tt_join_serve_root(tt_join_t *j, const char *where, const char *note)
{
    tt_bootstrap_note_root(j->key, note);
    if (j->rank != 0 || j->nranks < 2)
        return TUTTI_SUCCESS;
    tt_sockaddr_t bind_addr = j->root;
    int fd, err;
    if (tt_sock_listen_quiet(&bind_addr, &fd, &err))
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                "rank 0 cannot listen on %s for tutti's bootstrap: %s (%s)", where,
                                strerror(err), note);
    tt_bootstrap_keep_listener(j->key, fd);
    return TUTTI_SUCCESS;
}
