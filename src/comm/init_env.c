/* SPDX-License-Identifier: MIT */
/*
 * tutti_comm_init_env: joining through the launcher's environment, which
 * says who the launcher is: tutti-run (TUTTI_RANK), torchrun (RANK and
 * WORLD_SIZE), mpirun or srun through PMIx (pmix.c), srun's own variables
 * (slurm.c), or none (a rank on its own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "comm/join.h"
#include "core/env_config.h"
#include "core/log.h"
#include "core/try.h"

/* TUTTI_ROOT_ADDRS: every root's address, into j->roots. */
static tutti_status_t parse_roots(tt_join_t *j, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    int n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    j->roots = calloc((size_t)n, sizeof *j->roots);
    tutti_status_t st = copy && j->roots ? TUTTI_SUCCESS : TUTTI_ERR_NO_MEMORY;
    j->nroots = 0;
    for (char *one = st ? NULL : strtok_r(copy, ",", &save); one; one = strtok_r(NULL, ",", &save))
        if (tt_sock_parse_addr(one, &j->roots[j->nroots++])) { /* it said why */
            st = tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "TUTTI_ROOT_ADDRS: %s cannot be resolved", one);
            break;
        }
    free(copy);
    if (!st && (j->nroots < 1 || j->nroots > j->nranks))
        st = tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                              "TUTTI_ROOT_ADDRS names %d roots for %d ranks: 1 to one a rank", j->nroots,
                              j->nranks);
    if (!st)
        j->root = j->roots[0];
    return st;
}

static tutti_status_t join_tutti_run(tt_join_t *j, int have_key)
{
    const char *list = tt_config_str(TT_CFG_ROOT_ADDRS);
    if (have_key && *list) {
        TT_TRY(parse_roots(j, list));
        int fd = (int)tt_config_int(TT_CFG_ROOT_FD);
        if (fd >= 0) /* this rank serves its block's root */
            tt_bootstrap_keep_listener(j->key, fd);
        return TUTTI_SUCCESS;
    }
    const char *addr = tt_config_str(TT_CFG_ROOT_ADDR);
    if (!have_key || !*addr)
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                "TUTTI_RANK is set but TUTTI_KEY or TUTTI_ROOT_ADDR is not");
    if (tt_sock_parse_addr(addr, &j->root)) /* it said why */
        return tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "TUTTI_ROOT_ADDR=%s cannot be resolved", addr);
    int fd = (int)tt_config_int(TT_CFG_ROOT_FD);
    if (j->rank == 0 && fd >= 0)
        tt_bootstrap_keep_listener(j->key, fd);
    return TUTTI_SUCCESS;
}

/*
 * torchrun's own store holds MASTER_PORT; tutti's root listens beside it,
 * on MASTER_PORT + TUTTI_ROOT_PORT_OFFSET. Rank 0 takes that port here, so
 * a port held by another program is named before anyone waits.
 */
static tutti_status_t join_torchrun(tt_join_t *j, int have_key)
{
    const char *host = getenv("MASTER_ADDR");
    int port, offset = (int)tt_config_int(TT_CFG_ROOT_PORT_OFFSET);
    if (!host || tt_join_env_int("MASTER_PORT", &port))
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                "RANK and WORLD_SIZE are set but MASTER_ADDR/MASTER_PORT are not");
    char text[300], note[240];
    snprintf(text, sizeof text, "%s:%d", host, port + offset);
    snprintf(note, sizeof note,
             "under torchrun tutti's root listens on MASTER_PORT + TUTTI_ROOT_PORT_OFFSET = %d + %d; if "
             "another program holds port %d, set TUTTI_ROOT_PORT_OFFSET, the same on every rank",
             port, offset, port + offset);
    if (tt_sock_parse_addr(text, &j->root)) /* it said why */
        return tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "MASTER_ADDR=%s cannot be resolved", host);
    if (!have_key) {
        const char *run = getenv("TORCHELASTIC_RUN_ID");
        char material[400];
        snprintf(material, sizeof material, "%s|%d|%s", text, j->nranks, run ? run : "");
        tt_join_derive_key(material, j->key);
    }
    return tt_join_serve_root(j, text, note);
}

/* Set by mpirun or srun for a job of several ranks. */
static int other_launcher_ranks(void)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    int n;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (tt_join_env_int(sizes[i], &n) == 0 && n > 1)
            return n;
    return 0;
}

/* No launcher at all: one rank on its own, as an MPI singleton. */
static tutti_status_t join_alone(tt_join_t *j)
{
    int n = other_launcher_ranks();
    if (n)
        return tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                "started by mpirun or srun as one of %d ranks, but %s: use Open MPI's mpirun "
                                "(4 or later) or srun --mpi=pmix, or set TUTTI_RANK, TUTTI_NRANKS, "
                                "TUTTI_ROOT_ADDR and TUTTI_KEY by hand (tutti(7))",
                                n,
#ifdef TT_HAVE_PMIX
                                "the launcher gave no PMIx server"
#else
                                "this tutti was built without PMIx (install libpmix-dev and rebuild)"
#endif
        );
    j->rank = 0;
    j->nranks = 1;
    j->root.len = sizeof j->root.u.in4;
    j->root.u.in4.sin_family = AF_INET;
    TT_INFO(TT_SUB_INIT,
            "no launcher variables (TUTTI_RANK, RANK/WORLD_SIZE, PMIx, srun's): running as a single rank");
    return tt_random_key(j->key);
}

TUTTI_API tutti_status_t tutti_comm_init_env(tutti_comm_t *comm, const tutti_comm_params_t *params)
{
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL output pointer");
    *comm = NULL;
    char msg[512];
    /* Messages carry the rank from here on, when the launcher says it:
     * tutti-run's, torchrun's, or srun's in a step. */
    int64_t r;
    const char *said = getenv("RANK");
    if (!said && tt_slurm_step_tasks() > 1)
        said = getenv("SLURM_PROCID");
    if ((tt_parse_int(tt_config_str(TT_CFG_RANK), &r) == 0 && r >= 0) ||
        (said && tt_parse_int(said, &r) == 0 && r >= 0))
        tt_log_set_rank((int)r);
    if (tt_config_check(tt_transport_configs(), msg, sizeof msg)) /* each bad variable is logged there */
        return tt_comm_error_logged(NULL, TUTTI_ERR_CONFIG, "%s", msg);
    tt_join_t j = {.rank = (int)tt_config_int(TT_CFG_RANK), .nranks = (int)tt_config_int(TT_CFG_NRANKS)};
    const char *keyhex = tt_config_str(TT_CFG_KEY);
    int have_key = *keyhex && tt_join_parse_key(keyhex, j.key) == 0, have_rank = getenv("RANK") != NULL,
        have_size = getenv("WORLD_SIZE") != NULL;
    tutti_status_t st;
    if (j.rank >= 0 || j.nranks >= 0) { /* tutti-run */
        st = j.rank >= 0 && j.nranks > 0
                 ? join_tutti_run(&j, have_key)
                 : tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "TUTTI_RANK=%s and TUTTI_NRANKS=%s: set both, or neither",
                                    tt_config_str(TT_CFG_RANK), tt_config_str(TT_CFG_NRANKS));
    } else if (have_rank || have_size) { /* torchrun */
        st = tt_join_env_int("RANK", &j.rank) == 0 && tt_join_env_int("WORLD_SIZE", &j.nranks) == 0
                 ? join_torchrun(&j, have_key)
                 : tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG,
                                    "RANK=%s and WORLD_SIZE=%s: both must be set, to integers >= 0",
                                    have_rank ? getenv("RANK") : "(unset)",
                                    have_size ? getenv("WORLD_SIZE") : "(unset)");
    } else {
#ifdef TT_HAVE_PMIX
        if (getenv("PMIX_RANK") || getenv("PMIX_NAMESPACE"))
            return tt_comm_init_pmix(comm, params);
#endif
        st = tt_slurm_step_tasks() > 1 ? tt_slurm_join(&j, have_key) : join_alone(&j);
    }
    if (!st && (j.nranks < 1 || j.rank >= j.nranks))
        st = tt_comm_error_in(NULL, TT_SUB_CONFIG, TUTTI_ERR_CONFIG, "the launcher says rank %d of %d",
                              j.rank, j.nranks);
    int nids = j.nroots > 0 ? j.nroots : 1;
    tt_id_t *ids = st ? NULL : calloc((size_t)nids, sizeof *ids);
    if (!st && !ids)
        st = tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for %d roots", nids);
    for (int i = 0; !st && i < nids; i++) { /* one key: a root's listener is kept under the job's */
        ids[i].root = j.roots ? j.roots[i] : j.root;
        memcpy(ids[i].key, j.key, sizeof ids[i].key);
    }
    if (!st)
        st = tt_comm_create(comm, j.nranks, j.rank, ids, nids, params, NULL);
    free(ids);
    free(j.roots);
    if (st && j.rank == 0)
        tt_bootstrap_drop_listener(j.key); /* a later attempt may bind the port again */
    return st;
}
