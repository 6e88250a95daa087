/* SPDX-License-Identifier: MIT */
/*
 * Joining through a launcher's variables (tutti_comm_init_env): where and
 * as whom each rank joins. init_env.c reads tutti-run's and torchrun's
 * variables and picks the launcher; slurm.c reads srun's; join.c holds
 * what they share.
 */
#ifndef TT_JOIN_H
#define TT_JOIN_H

#include <stddef.h>

#include "core/key.h"
#include "core/sock.h"
#include "tutti.h"

typedef struct {
    int rank, nranks;
    unsigned char key[TT_KEY_BYTES];
    tt_sockaddr_t root;
    int nroots;           /* several roots (TUTTI_ROOT_ADDRS): how many ... */
    tt_sockaddr_t *roots; /* ... and their addresses, root first (malloc'd); 0 and NULL: root alone */
} tt_join_t;

/* TUTTI_KEY's hex into key: 0, or -1 when it is not 2 * TT_KEY_BYTES hex
 * digits. */
int tt_join_parse_key(const char *hex, unsigned char key[TT_KEY_BYTES]);
/* Variable name as an integer from 0 to INT32_MAX into *out: 0, or -1 when
 * it is unset or not such a number. */
int tt_join_env_int(const char *name, int *out);
/* A key from what every rank of one job, and no other job, sees alike: it
 * keeps jobs apart but is no secret (tutti(7), SECURITY). */
void tt_join_derive_key(const char *material, unsigned char key[TT_KEY_BYTES]);
/*
 * Notes how j->root was chosen (note: said in every message about reaching
 * it) and, on rank 0 of a job of several, binds j->root now, so that a
 * port another program holds is named before any rank waits. where: the
 * root as the user wrote or knows it ("host:port").
 */
tutti_status_t tt_join_serve_root(tt_join_t *j, const char *where, const char *note);

#ifdef TT_HAVE_PMIX
/* Joins under a PMIx launcher (mpirun, srun --mpi=pmix), in pmix.c. */
tutti_status_t tt_comm_init_pmix(tutti_comm_t *comm, const tutti_comm_params_t *params);
/* Whether libpmix.so.2 opens here: 1, or 0; why says which, either way. */
int tt_comm_pmix_usable(char *why, size_t len);
#endif

/*
 * srun's step (slurm.c). The step's task count when this process is one
 * of a step's tasks and no other launcher inside the step started it
 * (mpirun's own size variable disagrees), else 0.
 */
int tt_slurm_step_tasks(void);
/* Rank, size, root and key from srun's variables: the root on the step's
 * first node at tt_slurm_root_port; TUTTI_KEY when have_key, else derived. */
tutti_status_t tt_slurm_join(tt_join_t *j, int have_key);
/*
 * Slurm's compressed host lists ("node[01-04,07],gpu[1-2]-ib,login"): the
 * number of hosts, or -1 when list is malformed; and host n (from 0) into
 * out: 0, or -1 when the list is malformed, has no host n, or the name does
 * not fit in len bytes.
 */
long tt_slurm_hostlist_count(const char *list);
int tt_slurm_hostlist_nth(const char *list, long n, char *out, size_t len);
/* The root's port for a step: the first of the ports Slurm reserved for it
 * (resv: SLURM_STEP_RESV_PORTS, "12000-12003", or NULL), else one derived
 * from the job and step ids, below Linux's ephemeral ports. */
int tt_slurm_root_port(unsigned long job, unsigned long step, const char *resv);

#endif
