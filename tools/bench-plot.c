/* SPDX-License-Identifier: MIT */
/* bench-plot.c - rayo-bench --plot FILE.svg|FILE.png: the run's rows drawn by
 * gnuplot (Debian: gnuplot-nox), one panel per op, GFLOP/s for the ops that
 * count flops (matmul, gemv, dot...) and GB/s for the others, against size
 * on a log scale, one line per backend and per reference (OpenBLAS or BLIS,
 * and read, copy and triad in every GB/s panel).  A backend keeps its colour
 * in every panel; references are dashed; every point has a marker, so a
 * series of one point shows.
 *
 * It reads back the CSV the run wrote, so a plot shows exactly the figures
 * of the table.  x is the op's element count, and N for an N x N x N
 * matmul (the cube root of m n k for other shapes).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 4096
#define MAX_SERIES 128
#define MAX_PANELS 64

typedef struct point {
    double x, y;
    int samples;            /* rows averaged into y */
} point;

typedef struct series {
    char op[32], name[80];
    int per_flop;           /* y is GFLOP/s (else GB/s) */
    char key[80];           /* what its colour follows: the backend or reference */
    int reference;          /* a reference (memory or BLAS library): dashed */
    int odd_shape;          /* a matmul shape that is not a cube: a marker of its own */
    int colour;             /* index in palette[], the same for one key everywhere */
    point pts[64];
    size_t count;
} series;

static double size_to_x(const char *text)
{
    double d[3] = { 0, 0, 0 };
    int n = sscanf(text, "%lfx%lfx%lf", &d[0], &d[1], &d[2]);
    return n == 3 ? cbrt(d[0] * d[1] * d[2]) : n == 2 ? d[0] * d[1] : d[0];
}

/* Colours that stay apart on white and for common colour blindness. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                      "#56b4e9", "#000000", "#999999", "#882255", "#44aa99"};
#define PALETTE_SIZE (sizeof palette / sizeof palette[0])

/* The colour of a key: the one it had in an earlier series, else the next. */
static int colour_of(const series *all, size_t count, const char *key)
{
    int used = 0;
    for (size_t i = 0; i < count; i++) {
        if (!strcmp(all[i].key, key))
            return all[i].colour;
        used = all[i].colour + 1 > used ? all[i].colour + 1 : used;
    }
    return used;
}

static series *find_series(series *all, size_t *count, const char *op, const char *name, const char *key,
                           int per_flop)
{
    for (size_t i = 0; i < *count; i++)
        if (!strcmp(all[i].op, op) && !strcmp(all[i].name, name))
            return &all[i];
    if (*count == MAX_SERIES)
        return NULL;
    int colour = colour_of(all, *count, key);
    series *s = &all[(*count)++];
    memset(s, 0, sizeof *s);
    snprintf(s->op, sizeof s->op, "%s", op);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->per_flop = per_flop;
    s->colour = colour;
    return s;
}

/* One CSV row: op,backend,size,ns,gbps,gflops,... (failed cases have
 * empty fields and are left out). */
static void add_row(series *all, size_t *count, char *line)
{
    char *field[6];
    for (int i = 0; i < 6; i++) {
        field[i] = strsep(&line, ",");
        if (!field[i])
            return;
    }
    double gbps = atof(field[4]), gflops = atof(field[5]);
    if (!(gbps > 0) && !(gflops > 0))
        return;
    /* read, copy and triad rows ("(ref hot)", "(ref cold)") are series
     * of their own in every GB/s panel, and so is each matmul shape that is
     * not a cube (drawn at the cube root of m n k: a point of its own, not a
     * step of the line of cubes). */
    int reference_stream = !strncmp(field[1], "(ref", 4);
    int reference_lib = !strncmp(field[1], "openblas", 8) || !strncmp(field[1], "blis", 4);
    double d[3];
    char name[80];
    const char *key = reference_stream ? field[0] : field[1];
    snprintf(name, sizeof name, "%s", key);
    int odd_shape = sscanf(field[2], "%lfx%lfx%lf", &d[0], &d[1], &d[2]) == 3 && (d[0] != d[1] || d[1] != d[2]);
    if (odd_shape)
        snprintf(name, sizeof name, "%s %s", field[1], field[2]);
    series *s = find_series(all, count, reference_stream ? "*" : field[0], name, key, gflops > 0);
    if (!s)
        return;
    s->reference = reference_stream || reference_lib;
    s->odd_shape = odd_shape;
    /* A reference timed beside several backends has a row for each: the
     * mean of them is its point. */
    double x = size_to_x(field[2]), y = gflops > 0 ? gflops : gbps;
    for (size_t i = 0; i < s->count; i++)
        if (s->pts[i].x == x) {
            s->pts[i].y = (s->pts[i].y * s->pts[i].samples + y) / (s->pts[i].samples + 1);
            s->pts[i].samples++;
            return;
        }
    if (s->count < sizeof s->pts / sizeof s->pts[0])
        s->pts[s->count++] = (point){ x, y, 1 };
}

static int by_x(const void *a, const void *b)
{
    double d = ((const point *)a)->x - ((const point *)b)->x;
    return d < 0 ? -1 : d > 0;
}

/* The ops in first-seen order, and whether each counts flops. */
static size_t list_panels(const series *all, size_t count, const char *ops[MAX_PANELS], int per_flop[])
{
    size_t panels = 0;
    for (size_t i = 0; i < count; i++) {
        if (!strcmp(all[i].op, "*"))
            continue;
        size_t p = 0;
        while (p < panels && strcmp(ops[p], all[i].op))
            p++;
        if (p == panels && panels < MAX_PANELS) {
            ops[panels] = all[i].op;
            per_flop[panels++] = all[i].per_flop;
        }
    }
    return panels;
}

static void plot_panel(FILE *g, const series *all, size_t count, const char *op, int per_flop)
{
    fprintf(g, "set title '%s'\nset ylabel '%s'\n", op, per_flop ? "GFLOP/s" : "GB/s");
    fprintf(g, "set xlabel '%s'\n", !strcmp(op, "matmul") ? "N, for m = n = k = N" : "elements");
    const char *sep = "plot ";
    for (size_t i = 0; i < count; i++)
        if (!strcmp(all[i].op, op) || (!per_flop && !strcmp(all[i].op, "*"))) {
            fprintf(g, "%s'-' using 1:2 with linespoints lw 1.5 pt %d ps 0.9 lc rgb '%s' dt %d title '%s'", sep,
                    all[i].odd_shape ? 5 : all[i].reference ? 6 : 7, palette[all[i].colour % PALETTE_SIZE],
                    all[i].reference ? 2 : 1,
                    all[i].name);
            sep = ", ";
        }
    fprintf(g, "\n");
    for (size_t i = 0; i < count; i++)
        if (!strcmp(all[i].op, op) || (!per_flop && !strcmp(all[i].op, "*"))) {
            for (size_t p = 0; p < all[i].count; p++)
                fprintf(g, "%g %g\n", all[i].pts[p].x, all[i].pts[p].y);
            fprintf(g, "e\n");
        }
}

int bench_plot(const char *csv_path, const char *out_path, const char *title)
{
    FILE *f = fopen(csv_path, "r");
    if (!f) {
        fprintf(stderr, "rayo-bench: --plot: cannot read %s\n", csv_path);
        return -1;
    }
    static series all[MAX_SERIES];
    size_t count = 0;
    char line[512];
    if (fgets(line, sizeof line, f)) /* the header */
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            add_row(all, &count, line);
        }
    fclose(f);
    for (size_t i = 0; i < count; i++)
        qsort(all[i].pts, all[i].count, sizeof all[i].pts[0], by_x);
    const char *ops[MAX_PANELS];
    int per_flop[MAX_PANELS];
    size_t panels = list_panels(all, count, ops, per_flop);
    if (!panels) {
        fprintf(stderr, "rayo-bench: --plot: no measured rows to draw\n");
        return -1;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "rayo-bench: --plot: cannot start gnuplot\n");
        return -1;
    }
    size_t len = strlen(out_path);
    int png = len > 4 && !strcmp(out_path + len - 4, ".png"); /* else SVG */
    fprintf(g, "set terminal %s size 900,%zu font 'sans,%d'\nset output '%s'\n",
            png ? "pngcairo" : "svg dynamic", 320 * panels, png ? 9 : 11, out_path);
    char safe_title[512];
    snprintf(safe_title, sizeof safe_title, "%s", title);
    for (char *c = safe_title; *c; c++)
        if (*c == '\'' || *c == '\\')
            *c = ' '; /* inside gnuplot's single quotes */
    fprintf(g, "set multiplot layout %zu,1 title '%s'\n", panels, safe_title);
    fprintf(g, "set logscale x 2\nset format x '%%.0f'\nset key outside right\n"
               /* a solid grid: dashes mean a reference */
               "set grid lt 1 lw 0.5 lc rgb '#dddddd' dt 1\n"
               "set yrange [0:*]\nset pointsize 0.6\n");
    for (size_t p = 0; p < panels; p++)
        plot_panel(g, all, count, ops[p], per_flop[p]);
    fprintf(g, "unset multiplot\n");
    int status = pclose(g);
    if (status != 0) {
        fprintf(stderr, "rayo-bench: --plot: gnuplot failed (status %d); is it installed? "
                        "(Debian: apt-get install gnuplot-nox)\n", status);
        return -1;
    }
    fprintf(stderr, "rayo-bench: plot written to %s\n", out_path);
    return 0;
}
