/* SPDX-License-Identifier: MIT */
/* tutti-bw's GPU rows in a build without CUDA: one line saying so. */
#include "bw.h"

void tt_bw_gpu(tt_bw_job_t *job)
{
    if (job->rank != 0)
        return;
    const char *why = "this tutti was built without CUDA";
    if (job->text || job->o->csv)
        printf("%sgpu: %s: host<->device, device<->device and cuda_ipc peer rows not measured\n",
               job->o->csv ? "# " : "", why);
    if (job->o->json) {
        tt_json_obj(&job->json, "gpu");
        tt_json_str(&job->json, "status", "skipped");
        tt_json_str(&job->json, "why", why);
        tt_json_end(&job->json);
    }
}
