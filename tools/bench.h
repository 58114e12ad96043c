/* SPDX-License-Identifier: MIT */
/* bench.h - rayo-bench's parts outside its main file (not installed).
 *   bench-refs.c  the BLAS references at their best: which kernel set
 *                 OpenBLAS and BLIS pick, and the better one the CPU runs
 *   bench-stream.c  the memory references: read, copy and triad at the
 *                 machine's best
 *   bench-plot.c  --plot: the run's CSV drawn by gnuplot as an SVG
 */
#ifndef RAYO_BENCH_H
#define RAYO_BENCH_H

#include <stddef.h>

/* What rayo-bench knows of a reference library's kernel set. */
typedef struct bench_kernels {
    char detected[64];   /* what the library picks by itself ("" if unknown) */
    char chosen[64];     /* what this run set instead ("" if nothing was set) */
    char variable[96];   /* the environment setting that chose it, or "" */
    char pinned[64];     /* the set the caller's variable pins ("" if none) */
    char best[64];       /* the best set this CPU runs in this library */
    char best_setting[96]; /* when pinned to a worse set: the setting ("VAR=VALUE",
                            * or "VAR=" for unset) that gives best, for a child */
    char note[512];      /* one line for the header */
} bench_kernels;

/* Before the library is loaded (and before any thread exists: it forks to
 * ask the library in a child): finds the kernel set `which` ("openblas" or
 * "blis") picks on this CPU, and when the CPU runs a better one, sets the
 * library's variable (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE) in this process's
 * environment so that the library, once loaded, uses it.  A variable the
 * caller set already is left alone (the reference in this process runs as
 * pinned) and, when the library runs a better set, best_setting says how to
 * get it. */
void bench_choose_kernels(const char *which, bench_kernels *k);

/* Puts setting ("VAR=VALUE", or "VAR=": unset) in this process's environment
 * (setting must live as long as the process). */
void bench_apply_setting(const char *setting);

/* After the library is loaded (handle from dlopen): the kernel set it runs
 * now and its build, for the header ("" where it cannot say). */
void bench_kernels_in_use(const char *which, void *handle, char *out, size_t size);

/* ---- memory references (bench-stream.c) ---- */
typedef enum bench_stream_kind {
    BENCH_STREAM_READ,  /* sum of b: bytes read */
    BENCH_STREAM_COPY,  /* a = b (memcpy): bytes read + written */
    BENCH_STREAM_TRIAD, /* a = b + 3 c: bytes read + written */
    BENCH_STREAM_KINDS
} bench_stream_kind;

extern const char *const bench_stream_names[BENCH_STREAM_KINDS];

/* One call of a reference: kind over n floats of a, b, c, split over threads. */
typedef struct bench_stream {
    float *a, *b, *c;
    size_t n;
    unsigned threads;
    bench_stream_kind kind;
} bench_stream;

/* Runs one call (a function for the timing loop: arg is a bench_stream);
 * 0, or -1 when a thread could not start. */
int bench_stream_run(void *arg);
/* Bytes a call of kind over n floats moves. */
size_t bench_stream_bytes(bench_stream_kind kind, size_t n);
/* 1 when that many bytes stay in the last-level cache between calls (hot),
 * 0 when they come from memory (cold). */
int bench_stream_in_cache(size_t bytes);
/* The code the references run on this CPU ("AVX2", "plain loops"). */
const char *bench_stream_code(void);

/* Draws the CSV rayo-bench wrote (csv_path) into out_path with gnuplot (a
 * PNG when its name ends in .png, else an SVG):
 * GFLOP/s (matrix ops) or GB/s (vector ops) against size, one panel per
 * op, one line per backend and reference.  0 on success; otherwise a
 * message on stderr and -1. */
int bench_plot(const char *csv_path, const char *out_path, const char *title);

#endif
