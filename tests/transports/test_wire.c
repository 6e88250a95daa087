/* SPDX-License-Identifier: MIT */
/*
 * What arrives from outside, found by the fuzz targets (tests/fuzz): sizes
 * in a peer's shm slot are not trusted beyond the slot, and a unique id
 * with a broken address is refused at once.
 */
#include <check.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "tests/lib/harness.h"
#include "transports/local.h"
#include "transports/shm/shm.h"

#define SLOT_BYTES 64
#define NSLOTS 2

/* A slot ring that ends where an inaccessible page begins: a read past its
 * last slot faults instead of passing unseen. */
static char *guarded_ring(size_t ring, void **map, size_t *map_len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (ring + page - 1) / page + 1;
    *map_len = pages * page;
    char *m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mprotect(m + (pages - 1) * page, page, PROT_NONE), 0);
    *map = m;
    return m + (pages - 1) * page - ring;
}

START_TEST(a_shm_slot_claiming_more_than_it_holds_is_a_mismatch)
{
    size_t stride = sizeof(tt_local_slot_t) + SLOT_BYTES, ring = sizeof(tt_local_queue_t) + NSLOTS * stride;
    void *map;
    size_t map_len;
    char *mem = guarded_ring(ring, &map, &map_len);
    memset(mem, 0, ring);
    size_t len = 150;
    char dst[150];
    tt_shm_conn_t c = {.peer = 1, .nchannels = 1, .pidfd = -1};
    c.in[0] = (tt_shm_side_t){.q = (tt_local_queue_t *)mem,
                              .slots = mem + sizeof(tt_local_queue_t),
                              .slot_bytes = SLOT_BYTES,
                              .nslots = NSLOTS};
    tt_req_t req = {.hdr = {.magic = TT_MSG_MAGIC, .seq = 7, .count = len, .bytes = len},
                    .buf = dst,
                    .len = len,
                    .unit = 1};
    ck_assert_int_eq(tt_shm_irecv(&c, 0, &req), TUTTI_SUCCESS);
    /* The peer fills slot 0 with nothing, then claims the whole message in
     * slot 1, the last of the ring: 150 bytes where a slot holds 64. */
    tt_local_slot_t *s0 = (tt_local_slot_t *)c.in[0].slots, *s1 = (tt_local_slot_t *)(c.in[0].slots + stride);
    s0->hdr = req.hdr;
    s0->nbytes = 0;
    atomic_store(&s0->seq, 1);
    s1->hdr = req.hdr;
    s1->nbytes = len;
    atomic_store(&s1->seq, 2);
    int progressed = 0;
    ck_assert_int_eq(tt_shm_progress(&c, &progressed), TUTTI_ERR_MISMATCH);
    ck_assert_int_eq(req.state, TT_REQ_FAILED);
    munmap(map, map_len);
}
END_TEST

START_TEST(a_unique_id_with_a_broken_address_is_refused)
{
    tutti_unique_id_t uid;
    ck_assert_int_eq(tutti_get_unique_id(&uid), TUTTI_SUCCESS);
    tt_id_t id;
    ck_assert_int_eq(tt_id_decode(uid.internal, &id), 0);
    struct {
        size_t at;
        unsigned char byte;
    } breaks[] = {{offsetof(tt_id_t, root) + offsetof(tt_sockaddr_t, len), 0xff},
                  {offsetof(tt_id_t, root) + offsetof(tt_sockaddr_t, u), 0x01}};
    for (size_t i = 0; i < sizeof breaks / sizeof *breaks; i++) {
        tutti_unique_id_t bad = uid;
        bad.internal[breaks[i].at] = breaks[i].byte;
        tutti_comm_t comm;
        ck_assert_int_eq(tt_id_decode(bad.internal, &id), -1);
        ck_assert_int_eq(tutti_comm_init(&comm, 2, 1, &bad, NULL), TUTTI_ERR_INVALID_ARG);
        ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "not made by tutti_get_unique_id"));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("wire");
    tcase_add_test(tc, a_shm_slot_claiming_more_than_it_holds_is_a_mismatch);
    tcase_add_test(tc, a_unique_id_with_a_broken_address_is_refused);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
