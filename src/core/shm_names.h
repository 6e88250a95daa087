/* SPDX-License-Identifier: MIT */
/*
 * The names a job's per-host objects take, from its key's tag (tt_key_tag)
 * and the host's first rank: the transports make them, and tutti-run
 * sweeps them for every rank once a job ends, whatever killed it.
 */
#ifndef TT_SHM_NAMES_H
#define TT_SHM_NAMES_H

/* The shm transport's segment (shm_open's name). */
#define TT_SHM_NAME_FORMAT "/tutti-%016llx-%d"
/* The doorbell its same-host peers ring when it sleeps (an abstract socket: no file). */
#define TT_SHM_BELL_FORMAT "/dev/shm/tutti-%016llx-%d-bell"
/* The cuda_ipc transport's segment. */
#define TT_IPC_NAME_FORMAT "/tutti-%016llx-%d-ipc"

#endif
