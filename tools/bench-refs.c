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
            putenv((char *)setting);
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

void bench_choose_kernels(const char *which, bench_kernels *k)
{
    memset(k, 0, sizeof *k);
    const char *var = !strcmp(which, "openblas") ? "OPENBLAS_CORETYPE" : "BLIS_ARCH_TYPE";
    const char *preset = getenv(var);
    if (preset && *preset) {
        snprintf(k->note, sizeof k->note, "%s=%s was set by the caller: left as is", var, preset);
        return;
    }
    if (ask_child(which, NULL, NULL, k->detected, sizeof k->detected) != 0)
        return; /* not installed: blas_open says so */
    int tier = cpu_tier();
    const char *want = !strcmp(which, "openblas") ? wanted_openblas(tier) : wanted_blis(tier);
    if (name_tier(k->detected) >= tier || !*want) {
        snprintf(k->note, sizeof k->note, "%s picked %s, the best kernel set this CPU runs", which, k->detected);
        return;
    }
    /* The variable's value: OpenBLAS takes the name, BLIS 0.9 the arch's number. */
    char value[64];
    if (!strcmp(which, "openblas"))
        snprintf(value, sizeof value, "%s", want);
    else if (ask_child(which, NULL, want, value, sizeof value) != 0) {
        snprintf(k->note, sizeof k->note, "%s picked %s; this CPU runs %s, which this build of %s lacks",
                 which, k->detected, want, which);
        return;
    }
    snprintf(k->variable, sizeof k->variable, "%s=%s", var, value);
    char check[64];
    if (ask_child(which, k->variable, NULL, check, sizeof check) != 0 || name_tier(check) < tier) {
        snprintf(k->note, sizeof k->note, "%s picked %s; this CPU runs %s, which this build of %s lacks (%s fails)",
                 which, k->detected, want, which, k->variable);
        k->variable[0] = '\0';
        return;
    }
    snprintf(k->chosen, sizeof k->chosen, "%s", check);
    setenv(var, value, 1);
    snprintf(k->note, sizeof k->note, "%s picked %s by itself; this CPU runs %s: set %s", which, k->detected,
             check, k->variable);
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
