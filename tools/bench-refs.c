/* SPDX-License-Identifier: MIT */
/* bench-refs.c - the BLAS references at their best.
 *
 * A reference that runs generic kernels makes rayo look fast for nothing:
 * Debian's OpenBLAS (DYNAMIC_ARCH) took a virtual Xeon with AVX-512 for a
 * "Prescott" and ran SSE3 kernels at a quarter of its speed; Debian's BLIS
 * takes an AMD Zen 4 for a Zen 3 (AVX2 kernels).  Both libraries read their
 * choice from the environment once, when they initialise: OPENBLAS_CORETYPE
 * (a core name) and BLIS_ARCH_TYPE (the number of an arch_t in 0.9).  So
 * rayo-bench asks the library what it picks in a child process (a library
 * loaded here could not be re-initialised), compares that with the best set
 * this CPU and OS run (cpuid + XGETBV via gcc's __builtin_cpu_supports), and
 * sets the variable in its own environment before it loads the library.
 * A BLIS built without the wanted configuration aborts on an unknown
 * BLIS_ARCH_TYPE, so that choice is tried in a child first too.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- what the CPU runs ------------------------------------------------------ */

/* Kernel-set tiers, so that names of different libraries compare. */
enum { TIER_OTHER = 1, TIER_AVX2 = 2, TIER_AVX512 = 3 };

static int cpu_tier(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return TIER_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return TIER_AVX2;
#endif
    return TIER_OTHER;
}

/* The tier of a kernel set by its name in either library. */
static int name_tier(const char *name)
{
    static const char *const avx512[] = { "skylakex", "cooperlake", "sapphirerapids", "skx", "knl" };
    static const char *const avx2[] = { "haswell", "zen", "zen2", "zen3", "excavator" };
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (!strcasecmp(name, avx512[i]))
            return TIER_AVX512;
    for (size_t i = 0; i < sizeof avx2 / sizeof avx2[0]; i++)
        if (!strcasecmp(name, avx2[i]))
            return TIER_AVX2;
    return TIER_OTHER;
}

/* The kernel set rayo-bench asks for in each tier ("" where it asks none). */
static const char *wanted_openblas(int tier)
{
#if defined(__x86_64__)
    if (tier == TIER_AVX512)
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (tier == TIER_AVX2)
        return "Haswell";
#endif
    (void)tier;
    return "";
}

static const char *wanted_blis(int tier)
{
    return tier == TIER_AVX512 ? "skx" : tier == TIER_AVX2 ? "haswell" : "";
}

void bench_apply_setting(const char *setting)
{
    const char *eq = strchr(setting, '=');
    if (eq && eq[1] == '\0') { /* "NAME=": the variable unset */
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - setting), setting);
        unsetenv(name);
    } else {
        putenv((char *)setting);
    }
}

/* ---- asking the library, in a child -------------------------------------------- */

static const char *library_file(const char *which)
{
    return !strcmp(which, "openblas") ? "libopenblas.so.0" : "libblis.so.4";
}

/* The kernel set the loaded library runs; for BLIS with want_name, the
 * number of the arch of that name instead ("" if none). */
static void query_loaded(const char *which, void *handle, const char *want_name, char *out, size_t size)
{
    out[0] = '\0';
    if (!strcmp(which, "openblas")) {
        char *(*corename)(void) = (char *(*)(void))dlsym(handle, "openblas_get_corename");
        if (corename)
            snprintf(out, size, "%s", corename());
        return;
    }
    int (*query)(void) = (int (*)(void))dlsym(handle, "bli_arch_query_id");
    const char *(*arch_string)(int) = (const char *(*)(int))dlsym(handle, "bli_arch_string");
    if (!query || !arch_string)
        return;
    if (!want_name) {
        snprintf(out, size, "%s", arch_string(query()));
        return;
    }
    for (int id = 0; id < 64; id++) { /* arch_t is a small enum; names end before 64 */
        const char *name = arch_string(id);
        if (name && !strcmp(name, want_name)) {
            snprintf(out, size, "%d", id);
            return;
        }
    }
}

/* Runs query_loaded in a child with `setting` (NAME=VALUE, or NULL) in its
 * environment; 0 and the answer in out when the child loaded the library
 * and answered, -1 when it failed (not installed, aborted). */
static int ask_child(const char *which, const char *setting, const char *want_name, char *out, size_t size)
{
    int fds[2];
    out[0] = '\0';
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        if (setting)
            bench_apply_setting(setting);
        /* The library's complaints about a bad setting stay out of the report. */
        if (!freopen("/dev/null", "w", stderr))
            _exit(1);
        void *handle = dlopen(library_file(which), RTLD_NOW | RTLD_LOCAL);
        char answer[64] = "";
        if (handle)
            query_loaded(which, handle, want_name, answer, sizeof answer);
        ssize_t len = (ssize_t)strlen(answer);
        _exit(handle && len > 0 && write(fds[1], answer, (size_t)len) == len ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, size - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    out[got > 0 ? got : 0] = '\0';
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got > 0 ? 0 : -1;
}

/* ---- the choice ---------------------------------------------------------------- */

/* The setting under which the library runs the best kernel set this CPU has,
 * given what it picks by itself (detected): "VAR=" (left unset: it picks
 * that set itself) or "VAR=VALUE", and that set's name in best.  -1 and a
 * reason in why when this build of the library lacks it. */
static int find_best(const char *which, const char *var, const char *detected, bench_kernels *k, char *why,
                     size_t why_size)
{
    int tier = cpu_tier();
    const char *want = !strcmp(which, "openblas") ? wanted_openblas(tier) : wanted_blis(tier);
    if (name_tier(detected) >= tier || !*want) {
        snprintf(k->best_setting, sizeof k->best_setting, "%s=", var);
        snprintf(k->best, sizeof k->best, "%s", detected);
        return 0;
    }
    /* The variable's value: OpenBLAS takes the name, BLIS 0.9 the arch's number. */
    char value[64];
    if (!strcmp(which, "openblas"))
        snprintf(value, sizeof value, "%s", want);
    else if (ask_child(which, "BLIS_ARCH_TYPE=", want, value, sizeof value) != 0) {
        snprintf(why, why_size, "this CPU runs %s, which this build of %s lacks", want, which);
        return -1;
    }
    snprintf(k->best_setting, sizeof k->best_setting, "%s=%s", var, value);
    if (ask_child(which, k->best_setting, NULL, k->best, sizeof k->best) != 0 || name_tier(k->best) < tier) {
        snprintf(why, why_size, "this CPU runs %s, which this build of %s lacks (%s fails)", want, which,
                 k->best_setting);
        k->best_setting[0] = k->best[0] = '\0';
        return -1;
    }
    return 0;
}

/* The caller pinned a kernel set: it stays for the reference measured in
 * this process; where the library runs a better one, best_setting says how
 * to get it (in a child process, measured there). */
static void check_pinned(const char *which, const char *var, const char *preset, bench_kernels *k)
{
    char unset[100], why[256];
    snprintf(unset, sizeof unset, "%s=", var);
    ask_child(which, NULL, NULL, k->pinned, sizeof k->pinned);
    if (ask_child(which, unset, NULL, k->detected, sizeof k->detected) != 0 ||
        find_best(which, var, k->detected, k, why, sizeof why) != 0) {
        snprintf(k->note, sizeof k->note, "%s=%s was set by the caller: left as is", var, preset);
        return;
    }
    if (name_tier(k->best) <= name_tier(k->pinned)) {
        k->best_setting[0] = '\0';
        snprintf(k->note, sizeof k->note, "%s=%s was set by the caller: %s, the best set this CPU runs", var,
                 preset, k->pinned);
        return;
    }
    snprintf(k->note, sizeof k->note, "%s=%s was set by the caller: %s runs %s pinned, %s at its best (%s%s, "
             "measured in a child process)", var, preset, which, k->pinned, k->best, k->best_setting,
             k->best_setting[strlen(var) + 1] ? "" : ": unset");
}

void bench_choose_kernels(const char *which, bench_kernels *k)
{
    memset(k, 0, sizeof *k);
    const char *var = !strcmp(which, "openblas") ? "OPENBLAS_CORETYPE" : "BLIS_ARCH_TYPE";
    const char *preset = getenv(var);
    if (preset && *preset) {
        check_pinned(which, var, preset, k);
        return;
    }
    if (ask_child(which, NULL, NULL, k->detected, sizeof k->detected) != 0)
        return; /* not installed: blas_open says so */
    char why[256];
    if (find_best(which, var, k->detected, k, why, sizeof why) != 0) {
        snprintf(k->note, sizeof k->note, "%s picked %s; %s", which, k->detected, why);
        return;
    }
    const char *eq = strchr(k->best_setting, '=');
    if (!eq[1]) { /* the library picks its best by itself */
        k->best_setting[0] = '\0';
        snprintf(k->note, sizeof k->note, "%s picked %s, the best kernel set this CPU runs", which, k->detected);
        return;
    }
    snprintf(k->variable, sizeof k->variable, "%s", k->best_setting);
    snprintf(k->chosen, sizeof k->chosen, "%s", k->best);
    k->best_setting[0] = '\0'; /* set here, in this process: nothing to measure elsewhere */
    setenv(var, eq + 1, 1);
    snprintf(k->note, sizeof k->note, "%s picked %s by itself; this CPU runs %s: set %s", which, k->detected,
             k->chosen, k->variable);
}

void bench_kernels_in_use(const char *which, void *handle, char *out, size_t size)
{
    query_loaded(which, handle, NULL, out, size);
    if (!strcmp(which, "openblas")) {
        char *(*config)(void) = (char *(*)(void))dlsym(handle, "openblas_get_config");
        if (config && *out)
            snprintf(out + strlen(out), size - strlen(out), " (%s)", config());
    }
}
