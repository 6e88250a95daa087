/* SPDX-License-Identifier: MIT */
/* Making job keys and their public tags. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "core/hash.h"
#include "core/key.h"
#include "core/log.h"

uint64_t tt_key_tag(const unsigned char *key)
{
    return tt_hash(key, TT_KEY_BYTES, TT_HASH_SEED);
}

tutti_status_t tt_random_key(unsigned char key[TT_KEY_BYTES])
{
    size_t got = 0;
    while (got < TT_KEY_BYTES) {
        ssize_t n = getrandom(key + got, TT_KEY_BYTES - got, 0);
        if (n < 0 && errno != EINTR) {
            TT_ERROR(TT_SUB_INIT, "getrandom failed: %s", strerror(errno));
            return TUTTI_ERR_SYSTEM;
        }
        if (n > 0)
            got += (size_t)n;
    }
    return TUTTI_SUCCESS;
}
