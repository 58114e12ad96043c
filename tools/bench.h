/* bench.h - rayo-bench's parts outside its main file (not installed).
 *   bench-refs.c  the BLAS references at their best: which kernel set
 *                 OpenBLAS and BLIS pick, and the better one the CPU runs
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
    char note[512];      /* one line for the header */
} bench_kernels;

/* Before the library is loaded (and before any thread exists: it forks to
 * ask the library in a child): finds the kernel set `which` ("openblas" or
 * "blis") picks on this CPU, and when the CPU runs a better one, sets the
 * library's variable (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE) in this process's
 * environment so that the library, once loaded, uses it.  A variable the
 * caller set already is left alone and reported. */
void bench_choose_kernels(const char *which, bench_kernels *k);

/* After the library is loaded (handle from dlopen): the kernel set it runs
 * now and its build, for the header ("" where it cannot say). */
void bench_kernels_in_use(const char *which, void *handle, char *out, size_t size);

/* Draws the CSV rayo-bench wrote (csv_path) into svg_path with gnuplot:
 * GFLOP/s (matrix ops) or GB/s (vector ops) against size, one panel per
 * op, one line per backend and reference.  0 on success; otherwise a
 * message on stderr and -1. */
int bench_plot(const char *csv_path, const char *svg_path, const char *title);

#endif
