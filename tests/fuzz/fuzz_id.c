/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a unique id from the outside (MPI_Bcast, a file, a store):
 * decoded, and when it passes, its root address printed as every message
 * about it does.
 */
#include <stdint.h>
#include <string.h>

#include "comm/bootstrap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char bytes[TUTTI_UNIQUE_ID_BYTES] = {0};
    memcpy(bytes, data, size < sizeof bytes ? size : sizeof bytes);
    tt_id_t id;
    if (tt_id_decode(bytes, &id) == 0) {
        char where[80];
        tt_sock_addr_str(&id.root, where, sizeof where);
    }
    return 0;
}
