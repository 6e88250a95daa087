/* SPDX-License-Identifier: MIT */
/*
 * Topology without the hardware: hwloc XML exports of an 8-GPU NVLink
 * server with 4 NICs behind PCIe switches, a 2-socket PCIe server with 4
 * GPUs and a 16-GPU NVSwitch machine (tests/fixtures/), a fake sysfs tree,
 * this machine's own /sys, the grouping of ranks by host, and tutti-topo.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dl.h"
#include "tests/lib/harness.h"
#include "sched/hosts.h"
#include "topo/hwloc_lib.h"
#include "topo/topo.h"

static tt_topo_t *load_fixture(const char *name)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", getenv("TT_SRCDIR") ? getenv("TT_SRCDIR") : ".",
             name);
    tt_topo_t *t = malloc(sizeof *t);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(tt_topo_load_xml(t, path, err, sizeof err) == TUTTI_SUCCESS, "%s", err);
    return t;
}

static int dev_named(const tt_topo_t *t, const char *name)
{
    for (int i = 0; i < t->ndevs; i++)
        if (strcmp(t->devs[i].name, name) == 0)
            return i;
    ck_abort_msg("no %s", name);
    return -1;
}

static void assert_path(const tt_topo_t *t, const char *a, const char *b, const char *want)
{
    char got[16];
    int links;
    tt_path_t p = tt_topo_path(t, dev_named(t, a), dev_named(t, b), &links);
    tt_topo_path_name(p, links, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "%s-%s: %s, expected %s", a, b, got, want);
    p = tt_topo_path(t, dev_named(t, b), dev_named(t, a), &links); /* and it is symmetric */
    tt_topo_path_name(p, links, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "%s-%s: %s, expected %s", b, a, got, want);
}

START_TEST(eight_gpu_nvlink_server_with_four_nics)
{
    tt_topo_t *t = load_fixture("gpu8-nic4-nvlink.xml");
    ck_assert_int_eq(t->ngpus, 8);
    ck_assert_int_eq(t->nnics, 4);
    ck_assert_int_eq(t->npackages, 2);
    ck_assert_int_eq(t->nnuma, 2);
    /* the hybrid cube-mesh: 6 NVLinks per GPU, some pairs doubled */
    assert_path(t, "GPU0", "GPU0", "X");
    assert_path(t, "GPU0", "GPU1", "NV1");
    assert_path(t, "GPU0", "GPU3", "NV2");
    assert_path(t, "GPU0", "GPU4", "NV2");
    assert_path(t, "GPU0", "GPU5", "SYS");
    for (int g = 0; g < 8; g++) {
        int total = 0;
        for (int h = 0; h < t->ndevs; h++)
            total += t->nvlinks[g][h];
        ck_assert_int_eq(total, 6);
    }
    /* NICs share the lowest PCIe switch with two GPUs each */
    assert_path(t, "GPU0", "NIC0", "PIX");
    assert_path(t, "GPU0", "NIC1", "PXB");
    assert_path(t, "GPU0", "NIC2", "SYS");
    assert_path(t, "NIC0", "NIC1", "PXB");
    for (int g = 0; g < 8; g++) {
        char name[8], want[8];
        snprintf(name, sizeof name, "GPU%d", g);
        snprintf(want, sizeof want, "NIC%d", g / 2);
        ck_assert_str_eq(t->devs[tt_topo_nearest_nic(t, dev_named(t, name))].name, want);
        ck_assert_int_eq(t->devs[dev_named(t, name)].numa, g / 4);
    }
    ck_assert_str_eq(t->devs[dev_named(t, "NIC0")].os_name, "mlx5_0");
    free(t);
}
END_TEST

START_TEST(two_socket_pcie_server_with_four_gpus)
{
    tt_topo_t *t = load_fixture("pcie-2socket-4gpu.xml");
    ck_assert_int_eq(t->ngpus, 4); /* three NVIDIA, one AMD; the BMC's VGA chip is not a GPU */
    ck_assert_int_eq(t->nnics, 3);
    ck_assert_int_eq(t->npackages, 2);
    ck_assert_int_eq(t->ncores, 16);
    ck_assert_int_eq(t->npus, 32);
    assert_path(t, "GPU0", "GPU1", "SYS"); /* GPU0 is on the other socket */
    assert_path(t, "GPU1", "GPU2", "PHB"); /* different root ports of one host bridge */
    assert_path(t, "GPU2", "GPU3", "PIX"); /* two functions behind one port */
    assert_path(t, "NIC1", "NIC2", "PIX"); /* the two ports of one ethernet card */
    for (int i = 0; i < t->ndevs; i++)
        for (int j = 0; j < t->ndevs; j++)
            ck_assert_int_eq(t->nvlinks[i][j], 0);
    ck_assert_str_eq(t->devs[dev_named(t, "GPU0")].cpus, "0-7,16-23");
    ck_assert_str_eq(t->devs[tt_topo_nearest_nic(t, dev_named(t, "GPU2"))].os_name, "ib0");
    free(t);
}
END_TEST

START_TEST(sixteen_gpus_on_nvswitches)
{
    tt_topo_t *t = load_fixture("dgx2-nvswitch.xml");
    ck_assert_int_eq(t->ngpus, 16);
    ck_assert_int_eq(t->nnics, 0);
    for (int a = 0; a < 16; a++)
        for (int b = 0; b < 16; b++)
            ck_assert_int_eq(t->nvlinks[a][b], a == b ? 0 : 6);
    ck_assert_int_ne(t->devs[0].numa, t->devs[15].numa);
    ck_assert_str_eq(t->machine, "NVIDIA DGX-2H");
    free(t);
}
END_TEST

START_TEST(bad_xml_is_reported)
{
    tt_topo_t *t = malloc(sizeof *t);
    char err[256];
    ck_assert_int_eq(tt_topo_load_xml(t, "/nonexistent.xml", err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "/nonexistent.xml"), "%s", err);
    ck_assert_int_eq(tt_topo_parse_xml(t, "<topology><object type=\"Machine", err, sizeof err),
                     TUTTI_ERR_CONFIG);
    ck_assert_int_eq(tt_topo_parse_xml(t, "<html></html>", err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "not an hwloc topology"), "%s", err);
    /* Deeper than the reader keeps frames for (found by fuzz-topo-xml): refused, not read past them. */
    char deep[200 * 40] = "<topology>";
    for (int i = 0; i < 200; i++)
        strcat(deep, "<object type=\"Group\">");
    ck_assert_int_eq(tt_topo_parse_xml(t, deep, err, sizeof err), TUTTI_ERR_CONFIG);
    ck_assert_msg(strstr(err, "nested more than 64 deep"), "%s", err);
    free(t);
}
END_TEST

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A PCI function under root/sys/devices/<chain>, listed in /sys/bus/pci/devices. */
static void pci_dev(const char *root, const char *chain, const char *busid, const char *cls,
                    const char *vendor, const char *numa, const char *net)
{
    char rel[512], link[1024], target[1024];
    snprintf(rel, sizeof rel, "sys/devices/%s/%s/class", chain, busid);
    put(root, rel, cls);
    snprintf(rel, sizeof rel, "sys/devices/%s/%s/vendor", chain, busid);
    put(root, rel, vendor);
    snprintf(rel, sizeof rel, "sys/devices/%s/%s/numa_node", chain, busid);
    put(root, rel, numa);
    if (net) {
        snprintf(rel, sizeof rel, "sys/devices/%s/%s/net/%s/x", chain, busid, net);
        put(root, rel, "");
    }
    snprintf(link, sizeof link, "%s/sys/bus/pci/devices/%s", root, busid);
    snprintf(target, sizeof target, "../../../devices/%s/%s", chain, busid);
    put(root, "sys/bus/pci/devices/.keep", "");
    ck_assert_int_eq(symlink(target, link), 0);
}

START_TEST(sysfs_trees_are_read_without_hwloc)
{
    char root[] = "/tmp/tutti-sysfs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    for (int c = 0; c < 4; c++) {
        char rel[128], v[8];
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        snprintf(v, sizeof v, "%d\n", c / 2);
        put(root, rel, v);
        snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", c);
        put(root, rel, "0\n");
    }
    put(root, "sys/devices/system/node/node0/x", "");
    put(root, "sys/devices/system/node/node1/x", "");
    pci_dev(root, "pci0000:00/0000:00:01.0/0000:01:00.0", "0000:02:00.0", "0x030200\n", "0x10de\n", "0\n",
            NULL);
    pci_dev(root, "pci0000:00/0000:00:01.0/0000:01:00.0", "0000:02:00.1", "0x020700\n", "0x15b3\n", "0\n",
            "ib0");
    pci_dev(root, "pci0000:00/0000:00:02.0", "0000:03:00.0", "0x030200\n", "0x10de\n", "0\n", NULL);
    pci_dev(root, "pci0000:80/0000:80:01.0", "0000:81:00.0", "0x030200\n", "0x10de\n", "1\n", NULL);
    pci_dev(root, "pci0000:00/0000:00:03.0", "0000:04:00.0", "0x010802\n", "0x144d\n", "0\n",
            NULL); /* NVMe */
    tt_topo_t *t = malloc(sizeof *t);
    char err[256];
    ck_assert_msg(tt_topo_load_sysfs(t, root, err, sizeof err) == TUTTI_SUCCESS, "%s", err);
    ck_assert_int_eq(t->npus, 4);
    ck_assert_int_eq(t->npackages, 2);
    ck_assert_int_eq(t->ncores, 2);
    ck_assert_int_eq(t->nnuma, 2);
    ck_assert_int_eq(t->ngpus, 3);
    ck_assert_int_eq(t->nnics, 1);
    assert_path(t, "GPU0", "NIC0", "PIX");
    assert_path(t, "GPU0", "GPU1", "PHB");
    assert_path(t, "GPU0", "GPU2", "SYS");
    ck_assert_str_eq(t->devs[dev_named(t, "NIC0")].os_name, "ib0");
    free(t);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(this_machine_is_read)
{
    tt_topo_t *t = malloc(sizeof *t);
    char err[256];
    ck_assert_msg(tt_topo_load_local(t, err, sizeof err) == TUTTI_SUCCESS, "%s", err);
    ck_assert_int_ge(t->npus, 1);
    ck_assert_int_ge(t->nnuma, 1);
    ck_assert_int_eq(t->npus, (int)sysconf(_SC_NPROCESSORS_CONF));
#ifdef TT_HAVE_HWLOC
    /* built with hwloc's headers: the source says whether its library opened */
    char why[160];
    if (tt_hwloc(why, sizeof why))
        ck_assert_msg(strncmp(t->source, "hwloc API 2.", 12) == 0, "%s", t->source);
    else
        ck_assert_msg(strncmp(t->source, "hwloc", 5) != 0, "%s though: %s", t->source, why);
#endif
    free(t);
}
END_TEST

/* hwloc and PMIx are opened at run time: a library that is not there, or
 * that lacks what tutti needs, is named with what to install. */
START_TEST(libraries_opened_at_run_time_say_what_is_missing)
{
    char why[256];
    void *slot;
    tt_dl_sym_t sym = {&slot, "hwloc_topology_init", 0};
    ck_assert_ptr_null(
        tt_dl_open("libtutti-no-such-library.so.9", RTLD_NOW, &sym, 1, "libnothing1", why, sizeof why));
    ck_assert_msg(strstr(why, "cannot open libtutti-no-such-library.so.9 (install libnothing1)"), "%s", why);
    ck_assert_ptr_null(tt_dl_open("libc.so.6", RTLD_NOW, &sym, 1, "libc6", why, sizeof why));
    ck_assert_msg(strstr(why, "libc.so.6 lacks hwloc_topology_init"), "%s", why);
    sym.optional = 1;
    void *h = tt_dl_open("libc.so.6", RTLD_NOW, &sym, 1, "libc6", why, sizeof why);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_null(slot);
    dlclose(h);
}
END_TEST

START_TEST(ranks_are_grouped_by_host_in_rank_order)
{
    uint64_t ids[6] = {7, 3, 7, 3, 9, 9}; /* hosts by first rank: 7 -> 0, 3 -> 1, 9 -> 2 */
    tt_hosts_t h;
    ck_assert_int_eq(tt_hosts_init(&h, 6, ids, NULL), TUTTI_SUCCESS);
    ck_assert_int_eq(h.nhosts, 3);
    ck_assert_int_eq(h.per_host, 2);
    int host[6] = {0, 1, 0, 1, 2, 2}, local[6] = {0, 0, 1, 1, 0, 1};
    for (int r = 0; r < 6; r++) {
        ck_assert_int_eq(h.host_of[r], host[r]);
        ck_assert_int_eq(h.local_of[r], local[r]);
        ck_assert_int_eq(h.rank_at[host[r] * 2 + local[r]], r);
    }
    tt_hosts_free(&h);
}
END_TEST

START_TEST(local_ranks_follow_the_hardware)
{
    /* Four ranks of one host placed round-robin over two sockets by their
     * launcher: the local order keeps each socket's ranks together. */
    uint64_t ids[4] = {5, 5, 5, 5};
    uint64_t place[4] = {(1ull << 32) | 0, (0ull << 32) | 0, (1ull << 32) | 1, (0ull << 32) | 1};
    tt_hosts_t h;
    ck_assert_int_eq(tt_hosts_init(&h, 4, ids, place), TUTTI_SUCCESS);
    int want[4] = {1, 3, 0, 2}; /* rank_at[local] */
    for (int l = 0; l < 4; l++)
        ck_assert_int_eq(h.rank_at[l], want[l]);
    tt_hosts_free(&h);
}
END_TEST

START_TEST(tutti_topo_prints_the_matrix_tree_and_json)
{
    static char out[1 << 16];
    char args[512];
    const char *src = getenv("TT_SRCDIR") ? getenv("TT_SRCDIR") : ".";
    snprintf(args, sizeof args, "-i %s/tests/fixtures/gpu8-nic4-nvlink.xml", src);
    ck_assert_int_eq(tt_run_tool("tutti-topo", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "GPU0    X      NV1    NV1    NV2    NV2    SYS"), "%s", out);
    ck_assert_msg(strstr(out, "GPU7 -> NIC3 (PIX)"), "%s", out);
    snprintf(args, sizeof args, "--json -i %s/tests/fixtures/gpu8-nic4-nvlink.xml", src);
    ck_assert_int_eq(tt_run_tool("tutti-topo", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "\"GPU0\": {\"GPU0\": \"X\", \"GPU1\": \"NV1\""), "%s", out);
    ck_assert_msg(strstr(out, "\"nearest_nic\": \"NIC0\""), "%s", out);
    snprintf(args, sizeof args, "--tree -i %s/tests/fixtures/pcie-2socket-4gpu.xml", src);
    ck_assert_int_eq(tt_run_tool("tutti-topo", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "conan (X9DRG-HF): 2 packages, 2 NUMA nodes, 16 cores, 32 PUs"), "%s", out);
    /* lstopo on a virtual machine: no product name, only the host's. */
    snprintf(args, sizeof args, "--tree -i %s/tests/fixtures/vm-lstopo.xml", src);
    ck_assert_int_eq(tt_run_tool("tutti-topo", args, out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "node17: 1 package, 1 NUMA node, 2 cores, 2 PUs", 46) == 0, "%s", out);
    snprintf(args, sizeof args, "--json -i %s/tests/fixtures/vm-lstopo.xml", src);
    ck_assert_int_eq(tt_run_tool("tutti-topo", args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "\"machine\": \"\", \"host\": \"node17\""), "%s", out);
    ck_assert_int_eq(tt_run_tool("tutti-topo", "", out, sizeof out), 0); /* this machine */
    ck_assert_int_eq(tt_run_tool("tutti-topo", "-i /nonexistent.xml", out, sizeof out), 1);
    ck_assert_int_eq(tt_run_tool("tutti-topo", "--bogus", out, sizeof out), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("topo");
    tcase_add_test(tc, eight_gpu_nvlink_server_with_four_nics);
    tcase_add_test(tc, two_socket_pcie_server_with_four_gpus);
    tcase_add_test(tc, sixteen_gpus_on_nvswitches);
    tcase_add_test(tc, bad_xml_is_reported);
    tcase_add_test(tc, sysfs_trees_are_read_without_hwloc);
    tcase_add_test(tc, this_machine_is_read);
    tcase_add_test(tc, libraries_opened_at_run_time_say_what_is_missing);
    tcase_add_test(tc, ranks_are_grouped_by_host_in_rank_order);
    tcase_add_test(tc, local_ranks_follow_the_hardware);
    tcase_add_test(tc, tutti_topo_prints_the_matrix_tree_and_json);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
