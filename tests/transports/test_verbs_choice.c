/* SPDX-License-Identifier: MIT */
/*
 * The verbs transport's choices, as pure functions: which devices and ports
 * TUTTI_IB_HCA allows, which NIC a rank takes (nearest its GPU on a
 * GPU/NIC topology, else its NUMA node, ranks spread over equals), which GID
 * on RoCE, in which order two ranks try pairs of their ports, and whether
 * device buffers use GPUDirect RDMA (TUTTI_IB_GDR against what driver, GPU
 * and libibverbs offer). The GPUDirect paths
 * themselves need a GPU and a NIC and do not run here.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/harness.h"
#include "topo/topo.h"
#include "transports/verbs/verbs.h"

START_TEST(hca_lists_select_exclude_and_name_ports)
{
    tt_verbs_hca_t f;
    ck_assert_int_eq(tt_verbs_hca_parse("mlx5_0:1,mlx5_1", &f), 0);
    ck_assert_int_eq(f.n, 2);
    ck_assert(tt_verbs_hca_match(&f, "mlx5_0", 1));
    ck_assert(!tt_verbs_hca_match(&f, "mlx5_0", 2));
    ck_assert(tt_verbs_hca_match(&f, "mlx5_1", 2));
    ck_assert(tt_verbs_hca_match(&f, "mlx5_10", 1)); /* names are prefixes, as in NCCL_IB_HCA */
    ck_assert(!tt_verbs_hca_match(&f, "mlx4_0", 1));
    ck_assert_int_eq(tt_verbs_hca_parse("=mlx5_1", &f), 0);
    ck_assert(tt_verbs_hca_match(&f, "mlx5_1", 1));
    ck_assert(!tt_verbs_hca_match(&f, "mlx5_10", 1));
    ck_assert_int_eq(tt_verbs_hca_parse("^mlx5_2:1", &f), 0);
    ck_assert(!tt_verbs_hca_match(&f, "mlx5_2", 1));
    ck_assert(tt_verbs_hca_match(&f, "mlx5_2", 2));
    ck_assert(tt_verbs_hca_match(&f, "mlx5_0", 1));
    ck_assert_int_eq(tt_verbs_hca_parse("", &f), 0);
    ck_assert(tt_verbs_hca_match(&f, "anything", 3));
    ck_assert_int_eq(tt_verbs_hca_parse("mlx5_0:x", &f), -1);
    ck_assert_int_eq(tt_verbs_hca_parse("mlx5_0:0", &f), -1);
    ck_assert_int_eq(tt_verbs_hca_parse(":1", &f), -1);
}
END_TEST

START_TEST(nearest_nic_to_each_gpu)
{
    tt_topo_t *t = calloc(1, sizeof *t);
    char err[256], path[512];
    const char *src = getenv("TT_SRCDIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/gpu8-nic4-nvlink.xml", src ? src : ".");
    ck_assert_msg(!tt_topo_load_xml(t, path, err, sizeof err), "%s", err);
    /* The ports in another order than the topology's: the choice is by name. */
    const char *names[] = {"mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0"};
    static const char *const want[8] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1",
                                        "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"};
    for (int lrank = 0; lrank < 8; lrank++)
        ck_assert_str_eq(names[tt_verbs_pick_nearest(t, names, 4, 0, lrank)], want[lrank]);
    /* Only the far NICs allowed: GPU 0's ranks spread over the two. */
    const char *far[] = {"mlx5_2", "mlx5_3"};
    ck_assert_int_eq(tt_verbs_pick_nearest(t, far, 2, 0, 0), 0);
    ck_assert_int_eq(tt_verbs_pick_nearest(t, far, 2, 0, 8), 1);
    free(t);
}
END_TEST

START_TEST(nearest_nic_to_the_numa_node_without_gpus)
{
    tt_topo_t *t = calloc(1, sizeof *t);
    t->ndevs = t->nnics = 3;
    const char *os[] = {"mlx5_0", "mlx5_1", "mlx5_2"};
    int numa[] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        t->devs[i].kind = TT_DEV_NIC;
        snprintf(t->devs[i].os_name, sizeof t->devs[i].os_name, "%s", os[i]);
        t->devs[i].numa = numa[i];
    }
    ck_assert_int_eq(tt_verbs_pick_nearest(t, os, 3, 0, 0), 0);
    ck_assert_int_eq(tt_verbs_pick_nearest(t, os, 3, 0, 1), 0);
    ck_assert_int_eq(tt_verbs_pick_nearest(t, os, 3, 1, 0), 1); /* two on node 1: ranks take turns */
    ck_assert_int_eq(tt_verbs_pick_nearest(t, os, 3, 1, 1), 2);
    /* Not in the topology (the stand-in's devices): all equal, spread. */
    const char *unknown[] = {"fakeib0", "fakeib1"};
    ck_assert_int_eq(tt_verbs_pick_nearest(t, unknown, 2, 0, 0), 0);
    ck_assert_int_eq(tt_verbs_pick_nearest(t, unknown, 2, 0, 3), 1);
    ck_assert_int_eq(tt_verbs_pick_nearest(NULL, unknown, 2, -1, 2), 0);
    free(t);
}
END_TEST

static tt_verbs_gid_t gid(const char *hex, int type)
{
    tt_verbs_gid_t g = {.type = type};
    for (int i = 0; i < 16; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        g.gid.raw[i] = (unsigned char)b;
    }
    return g;
}

START_TEST(roce_gid_is_v2_ipv4_first)
{
    const char *ll = "fe800000000000000002c9fffe000001", *v4 = "00000000000000000000ffff0a000001";
    const char *v6 = "20010db8000000000000000000000001", *zero = "00000000000000000000000000000000";
    tt_verbs_gid_t mlx5[4] = {gid(ll, IBV_GID_TYPE_ROCE_V1), gid(ll, IBV_GID_TYPE_ROCE_V2),
                              gid(v4, IBV_GID_TYPE_ROCE_V1), gid(v4, IBV_GID_TYPE_ROCE_V2)};
    ck_assert_int_eq(tt_verbs_pick_gid(mlx5, 4), 3);
    tt_verbs_gid_t mixed[4] = {gid(zero, IBV_GID_TYPE_ROCE_V2), gid(v6, IBV_GID_TYPE_ROCE_V2),
                               gid(v4, IBV_GID_TYPE_ROCE_V2), gid(ll, IBV_GID_TYPE_ROCE_V2)};
    ck_assert_int_eq(tt_verbs_pick_gid(mixed, 4), 2); /* IPv4 over a global IPv6 */
    ck_assert_int_eq(tt_verbs_pick_gid(mixed, 2), 1); /* then a global v2 one */
    tt_verbs_gid_t untyped[3] = {gid(ll, -1), gid(v4, -1), gid(v4, -1)};
    ck_assert_int_eq(tt_verbs_pick_gid(untyped, 3), 1);
    tt_verbs_gid_t v1_only[2] = {gid(ll, IBV_GID_TYPE_ROCE_V1), gid(ll, IBV_GID_TYPE_ROCE_V1)};
    ck_assert_int_eq(tt_verbs_pick_gid(v1_only, 2), 0);
    ck_assert_int_eq(tt_verbs_pick_gid(mixed, 1), 0); /* nothing usable: index 0 */
}
END_TEST

static tt_verbs_port_info_t port(int roce, uint32_t subnet, int bits)
{
    return (tt_verbs_port_info_t){.roce = (uint8_t)roce, .subnet = subnet, .subnet_bits = (uint8_t)bits};
}

/* Both ranks derive the same order: one link layer only, one subnet first,
 * unknown next, different last; then by the places in the two offers. */
START_TEST(port_pairs_are_tried_in_one_order)
{
    tt_verbs_offer_t lo = {.nports = 3}, hi = {.nports = 2};
    tt_verbs_pair_t p[16];
    lo.port[0] = port(1, 0x0a150000, 24); /* a veth's network */
    lo.port[1] = port(1, 0x0a0b0000, 24); /* the shared one */
    lo.port[2] = port(0, 0, 0);           /* InfiniBand: never with RoCE */
    hi.port[0] = port(1, 0x0a160000, 24);
    hi.port[1] = port(1, 0x0a0b0000, 24);
    int n = tt_verbs_pair_order(&lo, &hi, p, 16);
    ck_assert_int_eq(n, 4);
    ck_assert(p[0].lo == 1 && p[0].hi == 1); /* the one subnet they share */
    ck_assert(p[1].lo == 0 && p[1].hi == 0); /* then differing ones, by place */
    ck_assert(p[2].lo == 0 && p[2].hi == 1);
    ck_assert(p[3].lo == 1 && p[3].hi == 0);
    /* Subnets unknown (InfiniBand, IPv6 GIDs): by the sum of places, then
     * the lower rank's place; max bounds the list. */
    tt_verbs_offer_t a = {.nports = 2}, b = {.nports = 2};
    n = tt_verbs_pair_order(&a, &b, p, 3);
    ck_assert_int_eq(n, 3);
    ck_assert(p[0].lo == 0 && p[0].hi == 0);
    ck_assert(p[1].lo == 0 && p[1].hi == 1);
    ck_assert(p[2].lo == 1 && p[2].hi == 0);
    /* A known subnet against an unknown one is not known to differ. */
    a.port[0] = port(1, 0x0a0b0000, 24);
    b.port[0] = port(1, 0x0a0c0000, 24);
    b.port[1] = port(1, 0, 0);
    a.port[1] = port(1, 0, 0);
    n = tt_verbs_pair_order(&a, &b, p, 16);
    ck_assert_int_eq(n, 4);
    ck_assert(p[0].lo == 0 && p[0].hi == 1);
    ck_assert(p[3].lo == 0 && p[3].hi == 0);
}
END_TEST

START_TEST(gpudirect_choice_follows_setting_and_machine)
{
    tt_gdr_path_t path;
    char why[256];
    tt_gdr_caps_t none = {0}, dmabuf = {.cuda = 1, .dmabuf_attr = 1, .gdr_attr = 1, .reg_dmabuf = 1},
                  peermem = {.cuda = 1, .gdr_attr = 1, .peermem = 1}, old_ibv = {.cuda = 1, .dmabuf_attr = 1};
    ck_assert_int_eq(tt_verbs_gdr_decide("auto", &dmabuf, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_DMABUF);
    ck_assert_int_eq(tt_verbs_gdr_decide("auto", &peermem, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_PEERMEM);
    ck_assert_int_eq(tt_verbs_gdr_decide("auto", &none, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_NONE); /* staged through pinned host memory */
    ck_assert_ptr_nonnull(strstr(why, "no CUDA"));
    ck_assert_int_eq(tt_verbs_gdr_decide("auto", &old_ibv, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_NONE);
    ck_assert_ptr_nonnull(strstr(why, "ibv_reg_dmabuf_mr"));
    ck_assert_int_eq(tt_verbs_gdr_decide("0", &dmabuf, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_NONE);
    ck_assert_int_eq(tt_verbs_gdr_decide("1", &dmabuf, &path, why, sizeof why), TUTTI_SUCCESS);
    ck_assert_int_eq(path, TT_GDR_DMABUF);
    ck_assert_int_eq(tt_verbs_gdr_decide("1", &none, &path, why, sizeof why), TUTTI_ERR_CONFIG);
    ck_assert_int_eq(tt_verbs_gdr_decide("yes", &dmabuf, &path, why, sizeof why), TUTTI_ERR_CONFIG);
    /* This machine has no GPU: what the probe finds, and that 1 is refused. */
    tt_gdr_caps_t here;
    tt_verbs_gdr_probe(NULL, &here);
    ck_assert_int_eq(here.reg_dmabuf, 0);
    if (!here.cuda)
        ck_assert_int_eq(tt_verbs_gdr_decide("1", &here, &path, why, sizeof why), TUTTI_ERR_CONFIG);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verbs-choice");
    TCase *tc = tcase_create("verbs-choice");
    tcase_add_test(tc, hca_lists_select_exclude_and_name_ports);
    tcase_add_test(tc, nearest_nic_to_each_gpu);
    tcase_add_test(tc, nearest_nic_to_the_numa_node_without_gpus);
    tcase_add_test(tc, roce_gid_is_v2_ipv4_first);
    tcase_add_test(tc, port_pairs_are_tried_in_one_order);
    tcase_add_test(tc, gpudirect_choice_follows_setting_and_machine);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
