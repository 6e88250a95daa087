/* SPDX-License-Identifier: MIT */
/*
 * Parsing of TUTTI_* variables and sizes; empty values; each bad value
 * named once with what it allows; unknown names warned about.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env_config.h"
#include "core/log.h"
#include "tests/lib/harness.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "transports/shm/shm.h"
#include "transports/transport.h"

/* Every variable: the core's, then each built transport's. */
typedef struct {
    const tt_config_table_t *t;
    int id;
} variable_t;

static int every_variable(variable_t *out, int max)
{
    const tt_config_table_t *const *more = tt_transport_configs();
    int n = 0;
    for (int k = -1; k < 0 || more[k]; k++) {
        const tt_config_table_t *t = k < 0 ? &tt_config_core : more[k];
        for (int id = 0; id < t->count && n < max; id++)
            out[n++] = (variable_t){t, id};
    }
    return n;
}

static const tt_config_entry_t *entry(const variable_t *v)
{
    return &v->t->entries[v->id];
}

START_TEST(sizes_accept_suffixes_and_reject_junk)
{
    uint64_t v;
    ck_assert_int_eq(tt_parse_size("0", &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(tt_parse_size("4096", &v), 0);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(tt_parse_size("8K", &v), 0);
    ck_assert_uint_eq(v, 8192);
    ck_assert_int_eq(tt_parse_size("64M", &v), 0);
    ck_assert_uint_eq(v, 64ull << 20);
    ck_assert_int_eq(tt_parse_size("2g", &v), 0);
    ck_assert_uint_eq(v, 2ull << 30);
    ck_assert_int_eq(tt_parse_size("1MB", &v), 0);
    ck_assert_uint_eq(v, 1ull << 20);
    const char *bad[] = {"", "x", "-1", "12Q", "1M5", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(tt_parse_size(bad[i], &v) == -1, "'%s' should be rejected", bad[i]);
}
END_TEST

START_TEST(ints_parse_strictly)
{
    int64_t v;
    ck_assert_int_eq(tt_parse_int("-3", &v), 0);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(tt_parse_int("12", &v), 0);
    ck_assert_int_eq(v, 12);
    ck_assert_int_eq(tt_parse_int("12s", &v), -1);
    ck_assert_int_eq(tt_parse_int("", &v), -1);
}
END_TEST

START_TEST(variables_fall_back_to_defaults_and_checks_name_typos)
{
    char msg[256];
    unsetenv("TUTTI_TIMEOUT");
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 300);
    setenv("TUTTI_TIMEOUT", "42", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 42);
    ck_assert_int_eq(tt_config_check(tt_transport_configs(), msg, sizeof msg), TUTTI_SUCCESS);
    setenv("TUTTI_SLICE_BYTES", "2M", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_SLICE_BYTES), 2 << 20);
    setenv("TUTTI_TIMEOUT", "soon", 1);
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 300); /* malformed: default, logged */
    ck_assert_int_eq(tt_config_check(tt_transport_configs(), msg, sizeof msg), TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(msg, "TUTTI_TIMEOUT=soon"));
    unsetenv("TUTTI_TIMEOUT");
    unsetenv("TUTTI_SLICE_BYTES");
}
END_TEST

/* Runs what the library logs to stderr into a buffer (the logger writes to fd 2). */
static char captured[1 << 15];
static int saved_stderr = -1;
static FILE *capture_file;

static void capture_start(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    ck_assert_ptr_nonnull(capture_file);
    saved_stderr = dup(2);
    ck_assert_int_ge(dup2(fileno(capture_file), 2), 0);
}

static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(capture_file);
    size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
    captured[n] = '\0';
    fclose(capture_file);
    return captured;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void unset_all(void)
{
    variable_t v[128];
    for (int i = 0, n = every_variable(v, 128); i < n; i++)
        unsetenv(entry(&v[i])->name);
}

START_TEST(an_empty_value_means_the_default)
{
    char msg[512];
    unset_all();
    variable_t v[128];
    for (int i = 0, n = every_variable(v, 128); i < n; i++)
        setenv(entry(&v[i])->name, "", 1);
    ck_assert_int_eq(tt_config_check(tt_transport_configs(), msg, sizeof msg), TUTTI_SUCCESS);
    ck_assert_str_eq(tt_config_str(TT_CFG_TRANSPORTS), ""); /* every transport built */
    ck_assert_int_eq(tt_config_is_set(TT_CFG_TRANSPORTS), 0);
    ck_assert_str_eq(tt_config_str(TT_CFG_LOG), "warn");
    ck_assert_int_eq(tt_config_int(TT_CFG_TIMEOUT), 300);
    ck_assert_int_eq(tt_config_table_int(&tt_shm_config, TT_CFG_SHM_SLOT_BYTES), 256 << 10);
    ck_assert_int_eq(tt_config_int(TT_CFG_RANK), -1);
    unset_all();
}
END_TEST

START_TEST(every_default_obeys_its_rule)
{
    variable_t v[128];
    for (int i = 0, n = every_variable(v, 128); i < n; i++) {
        const tt_config_entry_t *e = entry(&v[i]);
        ck_assert_msg(tt_config_table_valid(v[i].t, v[i].id, e->def) == 0 || e->def[0] == '\0',
                      "%s's default '%s' breaks its own rule", e->name, e->def);
    }
}
END_TEST

START_TEST(rules_accept_and_reject)
{
    struct {
        const tt_config_table_t *t;
        int id;
        const char *text;
        int ok;
    } cases[] = {
        {&tt_config_core, TT_CFG_TIMEOUT, "1", 1},
        {&tt_config_core, TT_CFG_TIMEOUT, "0", 0},
        {&tt_config_core, TT_CFG_TIMEOUT, "-1", 0},
        {&tt_config_core, TT_CFG_PIPELINE, "16", 1},
        {&tt_config_core, TT_CFG_PIPELINE, "17", 0},
        {&tt_config_core, TT_CFG_PIPELINE, "99", 0},
        {&tt_config_core, TT_CFG_SLICE_BYTES, "0", 1},
        {&tt_config_core, TT_CFG_SLICE_BYTES, "32", 0},
        {&tt_config_core, TT_CFG_SLICE_BYTES, "64", 1},
        {&tt_shm_config, TT_CFG_SHM_SLOT_BYTES, "100", 0},
        {&tt_shm_config, TT_CFG_SHM_SLOT_BYTES, "128", 1},
        {&tt_shm_config, TT_CFG_SHM_SLOT_BYTES, "4K", 1},
        {&tt_cuda_ipc_config, TT_CFG_IPC_WINDOW_BYTES, "1000", 0},
        {&tt_cuda_ipc_config, TT_CFG_IPC_WINDOW_BYTES, "64K", 1},
        {&tt_cuda_ipc_config, TT_CFG_IPC_WINDOW_BYTES, "65600", 0},
        {&tt_config_core, TT_CFG_DEVICE_STAGING_BYTES, "4K", 0},
        {&tt_config_core, TT_CFG_DEVICE_STAGING_BYTES, "1M", 1},
        {&tt_config_core, TT_CFG_DETERMINISTIC, "2", 0},
        {&tt_config_core, TT_CFG_DETERMINISTIC, "1", 1},
        {&tt_cuda_ipc_config, TT_CFG_CUDA_IPC, "yes", 0},
        {&tt_config_core, TT_CFG_LOG, "verbose", 0},
        {&tt_config_core, TT_CFG_LOG, "debug", 1},
        {&tt_config_core, TT_CFG_LOG_SUBSYS, "init,net", 1},
        {&tt_config_core, TT_CFG_LOG_SUBSYS, "init,,net", 0},
        {&tt_config_core, TT_CFG_LOG_SUBSYS, "init,disk", 0},
        {&tt_config_core, TT_CFG_REDUCE_ISA, "avx2", 1},
        {&tt_config_core, TT_CFG_REDUCE_ISA, "sse", 0},
        {&tt_config_core, TT_CFG_KEY, "00112233445566778899aabbccddeeff", 1},
        {&tt_config_core, TT_CFG_KEY, "0011", 0},
        {&tt_config_core, TT_CFG_KEY, "00112233445566778899aabbccddeefg", 0},
        {&tt_config_core, TT_CFG_ROOT_ADDR, "node1:4000", 1},
        {&tt_config_core, TT_CFG_ROOT_ADDR, "node1", 0},
        {&tt_config_core, TT_CFG_ROOT_ADDR, "node1:70000", 0},
        {&tt_config_core, TT_CFG_ROOT_PORT_OFFSET, "0", 0},
        {&tt_config_core, TT_CFG_TRANSPORTS, "anything", 1},
        {&tt_config_core, TT_CFG_RANK, "-2", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg((tt_config_table_valid(cases[i].t, cases[i].id, cases[i].text) == 0) == cases[i].ok,
                      "%s=%s should be %s", cases[i].t->entries[cases[i].id].name, cases[i].text,
                      cases[i].ok ? "valid" : "invalid");
    char allowed[200];
    tt_config_allowed(TT_CFG_PIPELINE, allowed, sizeof allowed);
    ck_assert_str_eq(allowed, "an integer from 1 to 16");
    tt_config_allowed(TT_CFG_DETERMINISTIC, allowed, sizeof allowed);
    ck_assert_str_eq(allowed, "0 or 1");
    tt_config_table_allowed(&tt_shm_config, TT_CFG_SHM_SLOT_BYTES, allowed, sizeof allowed);
    ck_assert_str_eq(allowed,
                     "a size in bytes from 64 to 1G, a multiple of 64 (K, M, G suffixes: powers of 1024)");
    tt_config_allowed(TT_CFG_LOG, allowed, sizeof allowed);
    ck_assert_str_eq(allowed, "one of none,error,warn,info,debug,trace");
}
END_TEST

/* One message per bad variable, each naming it, its value and what it
 * takes, under config; none repeated however often the values are read. */
START_TEST(each_bad_value_is_named_once_under_config)
{
    char msg[512];
    unset_all();
    setenv("TUTTI_TIMEOUT", "-1", 1);
    setenv("TUTTI_PIPELINE", "99", 1);
    setenv("TUTTI_SHM_SLOT_BYTES", "100", 1);
    setenv("TUTTI_DETERMINISTIC", "2", 1);
    setenv("TUTTI_LOG", "verbose", 1);
    capture_start();
    tutti_status_t st = tt_config_check(tt_transport_configs(), msg, sizeof msg);
    tutti_status_t again = tt_config_check(tt_transport_configs(), msg, sizeof msg);
    int64_t pipeline = tt_config_int(TT_CFG_PIPELINE);
    const char *log = capture_end();
    ck_assert_int_eq(st, TUTTI_ERR_CONFIG);
    ck_assert_int_eq(again, TUTTI_ERR_CONFIG);
    ck_assert_int_eq(pipeline, 4); /* reading a bad value gives the default */
    const char *want[] = {
        "error config: TUTTI_TIMEOUT=-1 is not allowed: it takes an integer from 1 to 100000000",
        "error config: TUTTI_PIPELINE=99 is not allowed: it takes an integer from 1 to 16",
        "error config: TUTTI_SHM_SLOT_BYTES=100 is not allowed: it takes a size in bytes from 64 to 1G, a "
        "multiple of 64",
        "error config: TUTTI_DETERMINISTIC=2 is not allowed: it takes 0 or 1",
        "error config: TUTTI_LOG=verbose is not allowed: it takes one of none,error,warn,info,debug,trace"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(count(log, want[i]) == 1, "'%s' logged %d times in:\n%s", want[i], count(log, want[i]),
                      log);
    ck_assert_msg(count(log, "\n") == 5, "expected exactly 5 lines:\n%s", log);
    ck_assert_msg(!strstr(log, " coll:"), "configuration logged under coll:\n%s", log);
    ck_assert_ptr_nonnull(strstr(msg, "TUTTI_LOG=verbose is not allowed")); /* the first, in table order */
    ck_assert_ptr_nonnull(strstr(msg, "and 4 more invalid TUTTI_* variables"));
    unset_all();
}
END_TEST

START_TEST(unknown_names_are_warned_about_once)
{
    char msg[512];
    unset_all();
    setenv("TUTTI_ALGOO", "ring", 1);
    setenv("TUTTI_FROBNICATE", "1", 1);
    setenv("TUTTI_SHM_SLOTZ", "2", 1); /* the transports' names count too */
    capture_start();
    tutti_status_t st = tt_config_check(tt_transport_configs(), msg, sizeof msg);
    tt_config_check(tt_transport_configs(), msg, sizeof msg);
    const char *log = capture_end();
    ck_assert_int_eq(st, TUTTI_SUCCESS); /* a warning, not an error */
    ck_assert_int_eq(
        count(log,
              "warn config: TUTTI_ALGOO is not a tutti variable and is ignored; did you mean TUTTI_ALGO?"),
        1);
    ck_assert_int_eq(count(log, "warn config: TUTTI_FROBNICATE is not a tutti variable and is ignored"), 1);
    ck_assert_int_eq(count(log, "TUTTI_SHM_SLOTZ is not a tutti variable and is ignored; did you mean "
                                "TUTTI_SHM_SLOTS?"),
                     1);
    ck_assert_msg(count(log, "\n") == 3, "%s", log);
    unsetenv("TUTTI_ALGOO");
    unsetenv("TUTTI_FROBNICATE");
    unsetenv("TUTTI_SHM_SLOTZ");
}
END_TEST

/* TUTTI_LOG_PREFIX puts the time, host and pid before each line; a front
 * end's fallback applies only where the variable is unset. */
START_TEST(log_lines_carry_the_prefix_asked_for)
{
    char host[64], want[256];
    ck_assert_int_eq(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = '\0';
    unset_all();
    setenv("TUTTI_LOG_PREFIX", "time,host,pid", 1);
    tt_log_set_fallback(NULL, NULL, "tid"); /* re-reads the variables */
    capture_start();
    tt_log_write(TT_LOG_WARN, TT_SUB_CONFIG, "hello");
    const char *log = capture_end();
    int y, mo, d, h, mi, sec, usec, used = 0;
    ck_assert_msg(sscanf(log, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ %n", &y, &mo, &d, &h, &mi, &sec, &usec, &used) ==
                          7 &&
                      used == 28,
                  "no time first: %s", log);
    snprintf(want, sizeof want, "%s:%ld tutti warn config: hello\n", host, (long)getpid());
    ck_assert_str_eq(log + used, want);

    unsetenv("TUTTI_LOG_PREFIX");
    tt_log_set_fallback(NULL, NULL, "pid");
    capture_start();
    tt_log_write(TT_LOG_WARN, TT_SUB_CONFIG, "hello");
    log = capture_end();
    snprintf(want, sizeof want, "%ld tutti warn config: hello\n", (long)getpid());
    ck_assert_str_eq(log, want);

    tt_log_set_fallback(NULL, NULL, NULL);
    capture_start();
    tt_log_write(TT_LOG_WARN, TT_SUB_CONFIG, "hello");
    ck_assert_str_eq(capture_end(), "tutti warn config: hello\n");
}
END_TEST

START_TEST(table_is_complete)
{
    variable_t v[128];
    int n = every_variable(v, 128);
    ck_assert_int_lt(n, 128);
    for (int i = 0; i < n; i++) {
        const tt_config_entry_t *e = entry(&v[i]);
        ck_assert_ptr_nonnull(e->name);
        ck_assert_int_eq(strncmp(e->name, "TUTTI_", 6), 0);
        ck_assert_ptr_nonnull(e->def);
        ck_assert_uint_gt(strlen(e->help), 10);
        int same = 0; /* one source for each variable: a name in one table only */
        for (int j = 0; j < n; j++)
            same += strcmp(entry(&v[j])->name, e->name) == 0;
        ck_assert_msg(same == 1, "%s is declared %d times", e->name, same);
    }
}
END_TEST

START_TEST(every_variable_is_documented_in_tutti_7)
{
    const char *srcdir = getenv("TT_SRCDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/man/tutti.7.md", srcdir ? srcdir : ".");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    variable_t v[128];
    for (int i = 0, n = every_variable(v, 128); i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, "**%s**", entry(&v[i])->name);
        ck_assert_msg(strstr(text, want), "%s (%s) is missing from man/tutti.7.md", entry(&v[i])->name,
                      v[i].t->owner);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, sizes_accept_suffixes_and_reject_junk);
    tcase_add_test(tc, ints_parse_strictly);
    tcase_add_test(tc, variables_fall_back_to_defaults_and_checks_name_typos);
    tcase_add_test(tc, an_empty_value_means_the_default);
    tcase_add_test(tc, every_default_obeys_its_rule);
    tcase_add_test(tc, rules_accept_and_reject);
    tcase_add_test(tc, each_bad_value_is_named_once_under_config);
    tcase_add_test(tc, unknown_names_are_warned_about_once);
    tcase_add_test(tc, log_lines_carry_the_prefix_asked_for);
    tcase_add_test(tc, table_is_complete);
    tcase_add_test(tc, every_variable_is_documented_in_tutti_7);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
