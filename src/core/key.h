/* SPDX-License-Identifier: MIT */
/*
 * The job key: 16 random bytes every rank of a communicator shares. Every
 * connection presents it (bootstrap, tcp, shared segments), so one
 * constant sizes it everywhere.
 */
#ifndef TT_KEY_H
#define TT_KEY_H

#include <stdint.h>

#include "tutti.h"

#define TT_KEY_BYTES 16

/* Fills a fresh key from the kernel's random source. */
tutti_status_t tt_random_key(unsigned char key[TT_KEY_BYTES]);
/* Short public tag of a key (names of shared segments); not secret-revealing
 * in any useful way, but not the key itself either. */
uint64_t tt_key_tag(const unsigned char *key);

#endif
