/* SPDX-License-Identifier: MIT */
/* TT_TRY: pass a failed status up to the caller, the library's one early-return idiom. */
#ifndef TT_TRY_H
#define TT_TRY_H

#include "tutti.h"

/* Returns from the calling function when a status-returning call fails. */
#define TT_TRY(call)                                                                                         \
    do {                                                                                                     \
        tutti_status_t tt_try_ = (call);                                                                     \
        if (tt_try_ != TUTTI_SUCCESS)                                                                        \
            return tt_try_;                                                                                  \
    } while (0)

#endif
