/* SPDX-License-Identifier: MIT */
/*
 * The tools as a newcomer meets them: tutti-perf's strict options, its
 * per-collective averages and one-rank runs, every spelling of a
 * collective, tutti-explain's default, and what tutti-info and tutti-bw say
 * about this build and this machine.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/memkind.h"
#include "tests/lib/harness.h"
#include "sched/schedule.h"

static char out[1 << 17];

START_TEST(perf_stops_at_a_bad_value_naming_its_flag)
{
    static const struct {
        const char *args, *said;
    } cases[] = {
        {"-n abc", "-n: 'abc' is not a whole number from 1 to"},
        {"-n 0", "-n: '0' is not a whole number from 1 to"},
        {"--iters 5x", "-n: '5x' is not a whole number from 1 to"},
        {"-w -1", "-w: '-1' is not a whole number from 0 to"},
        {"-c x", "-c: 'x' is not a whole number from 0 to"},
        {"-r first", "-r: 'first' is not a rank or all"},
        {"-f 1", "-f: '1' is not a number from"},
        {"-f two", "-f: 'two' is not a number from"},
        {"-b 1Q", "-b: '1Q' is not a size"},
        {"-i 0", "-i: '0' is not a size of at least 1 bytes"},
        {"-d float16", "-d: 'float16' is not a datatype"},
        {"-o mean", "-o: 'mean' is not an op (sum prod min max avg)"},
        {"--collective allreduc", "--collective: 'allreduc' is not allreduce, reducescatter"},
        {"--memory gpu", "--memory: 'gpu' is not host or device"},
        {"--compress topk:2", "--compress: 'topk:2' is not topk[:D]"},
        {"stray", "unexpected argument 'stray'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = tt_run_tool("tutti-perf", cases[i].args, out, sizeof out);
        ck_assert_msg(st == 2 && strstr(out, cases[i].said) && !strstr(out, "GB/s"),
                      "tutti-perf %s: %d:\n%.3000s", cases[i].args, st, out);
    }
}
END_TEST

START_TEST(every_usual_spelling_of_a_collective_is_taken)
{
    static const struct {
        const char *text;
        tt_coll_t coll;
    } names[] = {{"allreduce", TT_COLL_ALLREDUCE},          {"all_reduce", TT_COLL_ALLREDUCE},
                 {"All-Reduce", TT_COLL_ALLREDUCE},         {"reduce_scatter", TT_COLL_REDUCE_SCATTER},
                 {"reducescatter", TT_COLL_REDUCE_SCATTER}, {"reduce-scatter", TT_COLL_REDUCE_SCATTER},
                 {"all_gather", TT_COLL_ALLGATHER},         {"bcast", TT_COLL_BROADCAST},
                 {"all_to_all", TT_COLL_ALLTOALL},          {"barrier", TT_COLL_BARRIER}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tt_coll_t c;
        ck_assert_msg(tt_coll_parse(names[i].text, &c) == 0 && c == names[i].coll, "%s", names[i].text);
    }
    tt_coll_t c;
    ck_assert_int_eq(tt_coll_parse("reduce_scatterx", &c), -1);
    ck_assert_int_eq(tt_coll_parse("", &c), -1);

    /* The tools take them too, and print the same thing for each. */
    static char first[1 << 16];
    const char *spellings[] = {"reducescatter", "reduce_scatter", "Reduce-Scatter"};
    for (size_t i = 0; i < 3; i++) {
        char args[256];
        snprintf(args, sizeof args, "-C %s -n 4 -s 1M -a ring", spellings[i]);
        ck_assert_int_eq(tt_run_tool("tutti-explain", args, out, sizeof out), 0);
        if (i == 0)
            memcpy(first, out, sizeof first);
        ck_assert_msg(strncmp(out, "reduce_scatter of", 17) == 0 && strcmp(out, first) == 0, "%s:\n%.3000s",
                      spellings[i], out);
        snprintf(args, sizeof args, "--collective %s -b 64 -e 64 -n 1 -w 0", spellings[i]);
        ck_assert_int_eq(tt_run_tool("tutti-perf", args, out, sizeof out), 0);
        ck_assert_msg(strstr(out, "# reducescatter: the algorithm per size") && !strstr(out, "# allreduce:"),
                      "%s:\n%.3000s", spellings[i], out);
    }
    ck_assert_int_eq(tt_run_tool("tutti-perf", "--collective bcast -b 64 -e 64 -n 1 -w 0", out, sizeof out),
                     0);
    ck_assert_msg(strstr(out, "# broadcast: the algorithm per size"), "%.3000s", out);
}
END_TEST

START_TEST(explain_shows_allreduce_without_c)
{
    static char with_c[1 << 16];
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-C allreduce -n 4 -s 1M", with_c, sizeof with_c), 0);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "-n 4 -s 1M", out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "allreduce of 1 MiB", 18) == 0, "%.3000s", out);
    ck_assert_str_eq(out, with_c);
    ck_assert_int_eq(tt_run_tool("tutti-explain", "", out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "allreduce of", 12) == 0, "%.3000s", out);
}
END_TEST

/* Mean of one column (1-based field) over the rows of the table that
 * follows section, up to the next collective's table or the summary. */
static double section_mean(const char *section, int field, int *rows)
{
    double sum = 0;
    *rows = 0;
    for (const char *line = strchr(section, '\n'); line && *++line; line = strchr(line, '\n')) {
        const char *end = strchr(line, '\n');
        char copy[512];
        snprintf(copy, sizeof copy, "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
        if (strstr(copy, ": the algorithm per size") || strncmp(copy, "# Out of", 8) == 0)
            break;
        char *save = NULL, *tok = strtok_r(copy, " ", &save);
        if (copy[0] != ' ' || !tok || tok[0] < '0' || tok[0] > '9')
            continue; /* a comment, or a rank's message on stderr */
        for (int f = 1; tok && f < field; f++)
            tok = strtok_r(NULL, " ", &save);
        if (tok) {
            sum += atof(tok);
            ++*rows;
        }
    }
    return *rows ? sum / *rows : 0;
}

/* Per collective, the mean out-of-place busbw of every size, on a line
 * naming the collective and what it counts. */
START_TEST(perf_averages_busbw_per_collective)
{
    ck_assert_int_eq(
        tt_run_tool("tutti-run", "-n 2 ./tutti-perf -b 1K -e 64K -f 4 -n 3 -w 1", out, sizeof out), 0);
    static const char *const names[] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                        "reduce",    "alltoall",      "sendrecv"};
    for (int k = 0; k < 7; k++) {
        char head[64], avg[128];
        snprintf(head, sizeof head, "# %s: the algorithm per size", names[k]);
        const char *section = strstr(out, head);
        ck_assert_msg(section, "no %s table:\n%.3000s", names[k], out);
        int rows;
        double want = section_mean(section, 8, &rows);
        ck_assert_int_eq(rows, 4);
        snprintf(avg, sizeof avg, "GB/s (%s, mean of 4 out-of-place sizes)", names[k]);
        const char *line = strstr(out, avg);
        ck_assert_msg(line, "no average for %s:\n%.3000s", names[k], out);
        while (line > out && line[-1] != '\n')
            line--;
        ck_assert_msg(strncmp(line, "# Avg bus bandwidth    : ", 25) == 0, "%.200s", line);
        double got = atof(line + 25);
        /* The table rounds each busbw to 0.01 GB/s. */
        ck_assert_msg(fabs(got - want) <= 0.006 + 0.01 * want, "%s: average %g, rows give %g", names[k], got,
                      want);
    }
}
END_TEST

START_TEST(perf_on_one_rank_skips_sendrecv)
{
    ck_assert_int_eq(tt_run_tool("tutti-perf", "--collective sendrecv -b 64 -e 1K", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "# sendrecv needs 2 or more ranks: skipped"), "%.3000s", out);
    ck_assert_msg(!strstr(out, "GB/s (sendrecv") && !strstr(out, "# sendrecv: the algorithm"), "%.3000s",
                  out);
    /* Under all, the other collectives still run on one rank. */
    ck_assert_int_eq(tt_run_tool("tutti-perf", "-b 64 -e 64 -n 1 -w 0", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "# sendrecv needs 2 or more ranks: skipped") &&
                      strstr(out, "GB/s (alltoall, mean of 1 out-of-place sizes)") &&
                      !strstr(out, "GB/s (sendrecv"),
                  "%.3000s", out);
}
END_TEST

/* The line of -l that says whether transport name is offered here. */
static const char *offered_line(const char *text, const char *name)
{
    char head[32];
    snprintf(head, sizeof head, "\n  %-8s ", name);
    const char *line = strstr(text, head);
    return line && (line = strchr(line + 1, '\n')) ? line + 1 : NULL;
}

/* tutti-info -v says what was built, never a plan, and agrees with -l on
 * what this machine offers; tutti-bw, without a GPU, says which of driver
 * and GPU is missing. */
START_TEST(info_and_bw_say_what_is_built_and_missing)
{
    ck_assert_int_eq(tt_run_tool("tutti-info", "-v -l", out, sizeof out), 0);
    ck_assert_msg(!strstr(out, "no device path yet") && !strstr(out, "not complete") &&
                      !strstr(out, "refused and") && !strstr(out, "no transport yet"),
                  "%.3000s", out);
    char why[160] = "";
    const char *ipc = offered_line(out, "cuda_ipc");
    ck_assert_msg(ipc, "-l lists no cuda_ipc:\n%.3000s", out);
#ifdef TT_HAVE_CUDA
    int gpu = tt_device_usable(why, sizeof why) == TUTTI_SUCCESS;
    char said[256];
    snprintf(said, sizeof said, "cuda: built (device buffers, GPU kernels, the cuda_ipc transport); %s\n",
             gpu ? "a GPU is usable here" : why);
    ck_assert_msg(strstr(out, said), "want '%s':\n%.3000s", said, out);
    if (!gpu) {
        snprintf(said, sizeof said, "not offered here: %s\n", why);
        ck_assert_msg(strncmp(ipc + 11, said, strlen(said)) == 0 && !strstr(why, "insufficient"), "%.3000s",
                      out);
    }
#else
    ck_assert_msg(strstr(out, "cuda: not built") &&
                      strncmp(ipc + 11, "not offered here: this tutti was built without CUDA", 51) == 0,
                  "%.3000s", out);
#endif
#ifdef TT_HAVE_VERBS
    const char *verbs = offered_line(out, "verbs");
    ck_assert_msg(verbs, "-l lists no verbs:\n%.3000s", out);
    const char *v =
        strstr(out, "verbs: built (the verbs transport; libibverbs.so.1 is opened at run time); ");
    ck_assert_msg(v, "%.3000s", out);
    v = strchr(v, ';');
    v = strchr(v + 1, ';') + 2;
    ck_assert_msg(strncmp(v, verbs + 11, (size_t)(strchr(v, '\n') - v)) == 0, "-v and -l disagree:\n%.3000s",
                  out);
#else
    ck_assert_msg(strstr(out, "verbs: not built") && !offered_line(out, "verbs"), "%.3000s", out);
#endif
#ifdef TT_HAVE_NCCL_ABI
    ck_assert_msg(strstr(out, "nccl: libnccl.so.2 built"), "%.3000s", out);
#else
    ck_assert_msg(strstr(out, "nccl: libnccl.so.2 not built"), "%.3000s", out);
#endif

    ck_assert_int_eq(tt_run_tool("tutti-bw", "-t gpu -s 1M", out, sizeof out), 0);
#ifdef TT_HAVE_CUDA
    if (!gpu) {
        snprintf(said, sizeof said, "gpu: %s: host<->device", why);
        ck_assert_msg(strstr(out, said) && !strstr(out, "insufficient"), "%.3000s", out);
    } else {
        ck_assert_msg(!strstr(out, "not measured"), "%.3000s", out);
    }
#else
    ck_assert_msg(strstr(out, "gpu: this tutti was built without CUDA"), "%.3000s", out);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tools");
    TCase *tc = tcase_create("tools");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, perf_stops_at_a_bad_value_naming_its_flag);
    tcase_add_test(tc, every_usual_spelling_of_a_collective_is_taken);
    tcase_add_test(tc, explain_shows_allreduce_without_c);
    tcase_add_test(tc, perf_averages_busbw_per_collective);
    tcase_add_test(tc, perf_on_one_rank_skips_sendrecv);
    tcase_add_test(tc, info_and_bw_say_what_is_built_and_missing);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
