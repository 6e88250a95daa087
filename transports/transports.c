/* SPDX-License-Identifier: MIT */
/* The transports built into this library, in default priority order
 * (TUTTI_TRANSPORTS picks and orders them). */
#include <stddef.h>

#include "transports/transport.h"

const tt_transport_ops_t *const tt_transports[] = {&tt_cuda_ipc_ops, &tt_shm_ops,
#ifdef TT_HAVE_VERBS
                                                    &tt_verbs_ops,
#endif
                                                    &tt_tcp_ops, NULL};
