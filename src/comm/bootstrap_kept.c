/* SPDX-License-Identifier: MIT */
/*
 * What a process holds for a job before its communicator is made, by the
 * job's key: rank 0's listening socket (tutti_get_unique_id's, or one a
 * launcher handed down) and how the root's address was chosen, which every
 * message about reaching the root repeats (bootstrap.c, bootstrap_join.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"

/* What this process holds for a job, by key: a listening socket made
 * before the communicator (tutti_get_unique_id, a launcher's), and how the
 * root's address was chosen, for the messages about it. */
typedef struct kept {
    struct kept *next;
    unsigned char key[TT_KEY_BYTES];
    int fd;
    char note[240];
} kept_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_t *kept;

/* The entry for key, added if missing (NULL without memory); under kept_lock. */
static kept_t *kept_find(const unsigned char *key, int add)
{
    for (kept_t *k = kept; k; k = k->next)
        if (memcmp(k->key, key, TT_KEY_BYTES) == 0)
            return k;
    kept_t *k = add ? calloc(1, sizeof *k) : NULL;
    if (k) {
        memcpy(k->key, key, TT_KEY_BYTES);
        k->fd = -1;
        k->next = kept;
        kept = k;
    }
    return k;
}

/* Frees the entry for key once it holds nothing; under kept_lock. */
static void kept_prune(const unsigned char *key)
{
    for (kept_t **p = &kept; *p; p = &(*p)->next)
        if (memcmp((*p)->key, key, TT_KEY_BYTES) == 0) {
            kept_t *k = *p;
            if (k->fd < 0 && !k->note[0]) {
                *p = k->next;
                free(k);
            }
            return;
        }
}

void tt_bootstrap_keep_listener(const unsigned char *key, int fd)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 1);
    if (k && k->fd >= 0)
        close(k->fd);
    if (k)
        k->fd = fd;
    else
        close(fd);
    pthread_mutex_unlock(&kept_lock);
}

void tt_bootstrap_drop_listener(const unsigned char *key)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k && k->fd >= 0) {
        close(k->fd);
        k->fd = -1;
    }
    kept_prune(key);
    pthread_mutex_unlock(&kept_lock);
}

void tt_bootstrap_note_root(const unsigned char *key, const char *note)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 1);
    if (k)
        snprintf(k->note, sizeof k->note, "%s", note);
    pthread_mutex_unlock(&kept_lock);
}

int tt_bootstrap_take_listener(const unsigned char *key)
{
    int fd = -1;
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k) {
        fd = k->fd;
        k->fd = -1;
        kept_prune(key);
    }
    pthread_mutex_unlock(&kept_lock);
    return fd;
}

void tt_bootstrap_root_note(const unsigned char *key, char *out, size_t outlen)
{
    out[0] = '\0';
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_find(key, 0);
    if (k && k->note[0])
        snprintf(out, outlen, " (%s)", k->note);
    pthread_mutex_unlock(&kept_lock);
}
