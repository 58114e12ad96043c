/* SPDX-License-Identifier: MIT */
/* open-close.c - what rayo_open + rayo_close cost an application: with every
 * plugin found (GPU plugins included) against the CPU plugins only
 * ([plugins] deny = vulkan, cuda), best and median of N runs each, the
 * two interleaved so that both see the same load.
 *
 *   bench/open-close [N]        (default 20)
 *
 * Not a test: speed is reported, never asserted. */
#define _POSIX_C_SOURCE 200809L
#include "rayo.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double open_close_ms(const char *settings)
{
    rayo_options o = {.struct_size = sizeof o, .settings = settings, .no_config_files = 1};
    rayo_context *ctx = NULL;
    double t0 = now_ms();
    rayo_status st = rayo_open(&ctx, &o);
    rayo_close(ctx);
    double t = now_ms() - t0;
    if (st != RAYO_OK) {
        fprintf(stderr, "open-close: rayo_open: %s\n", rayo_last_error());
        exit(1);
    }
    return t;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The loaded backends' names, into buf. */
static const char *loaded_names(const char *settings, char *buf, size_t size)
{
    rayo_options o = {.struct_size = sizeof o, .settings = settings, .no_config_files = 1};
    rayo_context *ctx = NULL;
    size_t used = 0;
    buf[0] = '\0';
    if (rayo_open(&ctx, &o) != RAYO_OK)
        return buf;
    for (size_t i = 0; i < rayo_backend_count(ctx) && used < size; i++) {
        rayo_backend_info b = {.struct_size = sizeof b};
        if (rayo_backend_get(ctx, i, &b) == RAYO_OK && b.status == RAYO_BACKEND_LOADED)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "", b.name);
    }
    rayo_close(ctx);
    return buf;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    if (n < 1 || n > 10000) {
        fprintf(stderr, "usage: open-close [RUNS]\n");
        return 2;
    }
    static const char *const settings[2] = {NULL, "[plugins]\ndeny = vulkan, cuda\n"};
    static const char *const labels[2] = {"every plugin", "CPU plugins only"};
    double *t[2] = {malloc((size_t)n * sizeof(double)), malloc((size_t)n * sizeof(double))};
    if (!t[0] || !t[1])
        return 1;
    open_close_ms(settings[0]); /* warm: files in the page cache, caches of the drivers */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            t[k][i] = open_close_ms(settings[k]);
    char load[64] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fgets(load, sizeof load, f))
        load[strcspn(load, "\n")] = '\0';
    if (f)
        fclose(f);
    printf("rayo_open + rayo_close, %d runs each (load average %s)\n", n, load);
    for (int k = 0; k < 2; k++) {
        char names[256];
        qsort(t[k], (size_t)n, sizeof(double), compare);
        printf("  %-17s best %8.3f ms  median %8.3f ms  (loaded at open: %s)\n", labels[k], t[k][0],
               t[k][n / 2], loaded_names(settings[k], names, sizeof names));
    }
    free(t[0]);
    free(t[1]);
    return 0;
}
