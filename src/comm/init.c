/* SPDX-License-Identifier: MIT */
/*
 * Ways to join a communicator: an explicit unique id, or the launcher's
 * environment (tutti-run, torchrun, mpirun/srun through PMIx).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "core/key.h"
#include "core/env_config.h"
#include "core/hash.h"
#include "core/log.h"

#define TT_ID_MAGIC 0x74746964u /* "ttid" */

_Static_assert(sizeof(tt_id_t) <= TUTTI_UNIQUE_ID_BYTES, "unique id layout too large");

TUTTI_API tutti_status_t tutti_get_unique_id(tutti_unique_id_t *id)
{
    if (!id)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "id: NULL output pointer");
    tt_id_t tid = {.magic = TT_ID_MAGIC, .version = 1};
    tutti_status_t st = tt_random_key(tid.key);
    if (!st)
        st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &tid.root);
    int fd = -1;
    if (!st)
        st = tt_sock_listen(&tid.root, &fd);
    if (st)
        return tt_comm_error(NULL, st, "tutti_get_unique_id: could not open the bootstrap listener");
    tt_bootstrap_keep_listener(tid.key, fd);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &tid, sizeof tid);
    return TUTTI_SUCCESS;
}

TUTTI_API tutti_status_t tutti_comm_init(tutti_comm_t *comm, int nranks, int rank,
                                         const tutti_unique_id_t *id, const tutti_comm_params_t *params)
{
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL output pointer");
    *comm = NULL;
    if (!id)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "id: NULL unique id");
    if (nranks < 1)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "nranks: %d is not >= 1", nranks);
    if (rank < 0 || rank >= nranks)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "rank: %d is outside 0..%d", rank, nranks - 1);
    tt_id_t tid;
    memcpy(&tid, id->internal, sizeof tid);
    if (tid.magic != TT_ID_MAGIC || tid.version != 1)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "id: not made by tutti_get_unique_id");
    return tt_comm_create(comm, nranks, rank, tid.key, &tid.root, params);
}

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

static int parse_key(const char *hex, unsigned char *key)
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

/*
 * Without TUTTI_KEY, torchrun jobs derive the key from what all their ranks
 * share. It keeps stray jobs apart but is no secret: set TUTTI_KEY (the same
 * on every rank) where the network is not trusted.
 */
static void derive_key(const char *material, unsigned char *key)
{
    uint64_t h1 = tt_hash(material, strlen(material), TT_HASH_SEED);
    uint64_t h2 = tt_hash(material, strlen(material), h1);
    memcpy(key, &h1, 8);
    memcpy(key + 8, &h2, 8);
}

static int env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    int64_t x;
    if (!v || tt_parse_int(v, &x) || x < 0 || x > INT32_MAX)
        return -1;
    *out = (int)x;
    return 0;
}

#ifdef TT_HAVE_PMIX
tutti_status_t tt_comm_init_pmix(tutti_comm_t *comm, const tutti_comm_params_t *params);
#endif

TUTTI_API tutti_status_t tutti_comm_init_env(tutti_comm_t *comm, const tutti_comm_params_t *params)
{
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL output pointer");
    *comm = NULL;
    unsigned char key[TT_KEY_BYTES];
    tt_sockaddr_t root;
    int rank = (int)tt_config_int(TT_CFG_RANK), nranks = (int)tt_config_int(TT_CFG_NRANKS);
    const char *keyhex = tt_config_str(TT_CFG_KEY);
    if (*keyhex && parse_key(keyhex, key))
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "TUTTI_KEY must be %d hex digits", 2 * TT_KEY_BYTES);

    if (rank >= 0 && nranks > 0) { /* tutti-run */
        const char *addr = tt_config_str(TT_CFG_ROOT_ADDR);
        if (!*keyhex || !*addr)
            return tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                                 "TUTTI_RANK is set but TUTTI_KEY or TUTTI_ROOT_ADDR is not");
        if (tt_sock_parse_addr(addr, &root))
            return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "TUTTI_ROOT_ADDR=%s is not host:port", addr);
        int fd = (int)tt_config_int(TT_CFG_ROOT_FD);
        if (rank == 0 && fd >= 0)
            tt_bootstrap_keep_listener(key, fd);
    } else if (env_int("RANK", &rank) == 0 && env_int("WORLD_SIZE", &nranks) == 0) { /* torchrun */
        const char *host = getenv("MASTER_ADDR");
        int port;
        if (!host || env_int("MASTER_PORT", &port))
            return tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                                 "RANK and WORLD_SIZE are set but MASTER_ADDR/MASTER_PORT are not");
        char text[300];
        /* torchrun's own store holds MASTER_PORT; tutti's root sits beside it. */
        snprintf(text, sizeof text, "%s:%d", host, port + (int)tt_config_int(TT_CFG_ROOT_PORT_OFFSET));
        if (tt_sock_parse_addr(text, &root))
            return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "cannot resolve MASTER_ADDR %s", host);
        if (!*keyhex) {
            const char *run = getenv("TORCHELASTIC_RUN_ID");
            char material[400];
            snprintf(material, sizeof material, "%s|%d|%s", text, nranks, run ? run : "");
            derive_key(material, key);
        }
    } else {
#ifdef TT_HAVE_PMIX
        if (getenv("PMIX_RANK") || getenv("PMIX_NAMESPACE"))
            return tt_comm_init_pmix(comm, params);
#endif
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG,
                             "no launcher found: set TUTTI_RANK/TUTTI_NRANKS (tutti-run), RANK/WORLD_SIZE/"
                             "MASTER_ADDR/MASTER_PORT (torchrun)%s",
#ifdef TT_HAVE_PMIX
                             ", or run under mpirun/srun with PMIx"
#else
                             "; this build has no PMIx, so mpirun/srun need TUTTI_* set by hand"
#endif
        );
    }
    if (nranks < 1 || rank >= nranks)
        return tt_comm_error(NULL, TUTTI_ERR_CONFIG, "launcher says rank %d of %d", rank, nranks);
    return tt_comm_create(comm, nranks, rank, key, &root, params);
}
