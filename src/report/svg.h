/* Inline SVG charts for the HTML report: no scripts, no external resources. Every drawn value
 * carries its number in a data-value attribute, so a test can check the picture against the
 * JSON it came from. */
#ifndef PDQ_REPORT_SVG_H
#define PDQ_REPORT_SVG_H

#include <stdio.h>

/* Writes s with &, <, >, " escaped. */
void html_esc(FILE *f, const char *s);

/* Horizontal bars, k (1..4) per row, one colour per series. axis 0: linear from 0; 1: log10
 * (values <= 0 are drawn as empty bars); 2: linear around the values' span (small differences
 * between similar values stay visible). The value is printed after each bar. */
typedef struct {
    const char *label;
    double v[4];
} svg_bar_row;
void svg_hbars(FILE *f, const char *cls, const svg_bar_row *rows, int n, int k, const char *const *series,
               int logscale);

/* Line chart of ns series over a shared x axis; bad[i] != 0 marks point i with a red cross
 * (e.g. a top-1 disagreement). logy: log10 y axis (values <= 0 skipped). */
typedef struct {
    const char *name;
    const double *x, *y;
    const int *bad; /* may be NULL */
    int n;
} svg_series;
void svg_lines(FILE *f, const char *cls, const svg_series *s, int ns, const char *xlabel, const char *ylabel,
               int logy);

/* A small range bar for a table cell: [lo, hi] on a symmetric axis of half-width amax. */
void svg_range_cell(FILE *f, double lo, double hi, double amax);

#endif
