/* SPDX-License-Identifier: MIT */
#include "bw.h"
tutti_status_t tt_bw_fit(tt_bw_job_t *job)
{
    (void)job;
    return TUTTI_ERR_UNSUPPORTED;
}
