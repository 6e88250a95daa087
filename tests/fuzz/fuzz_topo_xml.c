/* SPDX-License-Identifier: MIT */
/* Fuzz target: the hwloc XML reader (TUTTI_TOPO_FILE, lstopo exports). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xml = malloc(size + 1);
    if (!xml)
        return 0;
    memcpy(xml, data, size);
    xml[size] = '\0';
    tt_topo_t *t = calloc(1, sizeof *t);
    char err[256];
    if (t)
        tt_topo_parse_xml(t, xml, err, sizeof err);
    free(t);
    free(xml);
    return 0;
}
