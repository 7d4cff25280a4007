/* The SVG primitives of the HTML report (see svg.h). */
#include "svg.h"

#include <math.h>

static const char *k_colors[] = {"#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#bab0ac"};

void html_esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static double axis_pos(double v, double lo, double hi, int logscale) {
    if (logscale) {
        if (!(v > 0)) return 0;
        v = log10(v);
    }
    if (!(hi > lo)) return 0;
    double t = (v - lo) / (hi - lo);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

void svg_hbars(FILE *f, const char *cls, const svg_bar_row *rows, int n, int k, const char *const *series,
               int logscale) {
    const int label_w = 300, bar_w = 520, value_w = 90, bar_h = 12, gap = 6;
    const int row_h = k * bar_h + gap, legend_h = 22;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            double v = rows[i].v[j];
            if (logscale == 1) {
                if (!(v > 0)) continue;
                v = log10(v);
            }
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    if (!isfinite(lo)) lo = hi = 0;
    if (logscale == 1) { lo = floor(lo); hi = ceil(hi); if (hi <= lo) hi = lo + 1; }
    else if (logscale == 2 && lo > 0) { double pad = (hi - lo) * 0.25 + hi * 1e-4; lo -= pad; hi += pad * 0.2; if (lo < 0) lo = 0; }
    else { if (lo > 0) lo = 0; if (hi <= lo) hi = lo + 1; }
    int log_axis = logscale == 1;
    int W = label_w + bar_w + value_w, H = legend_h + n * row_h + 18;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart %s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            cls, W, H, W, H);
    for (int j = 0; j < k; j++) {
        fprintf(f, "<rect x=\"%d\" y=\"4\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"14\" font-size=\"12\">",
                label_w + j * 160, k_colors[j], label_w + j * 160 + 16);
        html_esc(f, series[j]);
        fputs("</text>\n", f);
    }
    for (int i = 0; i < n; i++) {
        int y0 = legend_h + i * row_h;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">", label_w - 6, y0 + k * bar_h / 2 + 4);
        html_esc(f, rows[i].label);
        fputs("</text>\n", f);
        for (int j = 0; j < k; j++) {
            double v = rows[i].v[j];
            double w = bar_w * axis_pos(v, lo, hi, log_axis);
            fprintf(f, "<rect class=\"bar s%d\" data-label=\"", j);
            html_esc(f, rows[i].label);
            fprintf(f, "\" data-series=\"%d\" data-value=\"%.9g\" x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>"
                       "<text x=\"%.2f\" y=\"%d\" font-size=\"10\">%.*g</text>\n",
                    j, v, label_w, y0 + j * bar_h, w, bar_h - 1, k_colors[j], label_w + w + 4, y0 + j * bar_h + bar_h - 2, logscale == 2 ? 7 : 4, v);
        }
    }
    /* axis ticks */
    int ya = legend_h + n * row_h + 12;
    int ticks = log_axis ? (int)(hi - lo) : 4; /* one per decade on a log axis */
    if (ticks > 12) ticks = 12;
    for (int t = 0; t <= ticks; t++) {
        double v = lo + (hi - lo) * t / ticks;
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#666\">%.4g</text>\n", label_w + (double)bar_w * t / ticks, ya,
                log_axis ? pow(10, v) : v);
    }
    fputs("</svg>\n", f);
}

void svg_lines(FILE *f, const char *cls, const svg_series *s, int ns, const char *xlabel, const char *ylabel,
               int logy) {
    const int W = 900, H = 320, L = 70, R = 170, T = 14, B = 40;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int a = 0; a < ns; a++)
        for (int i = 0; i < s[a].n; i++) {
            double x = s[a].x[i], y = s[a].y[i];
            if (logy) { if (!(y > 0)) continue; y = log10(y); }
            if (x < xlo) xlo = x;
            if (x > xhi) xhi = x;
            if (y < ylo) ylo = y;
            if (y > yhi) yhi = y;
        }
    if (!isfinite(xlo)) xlo = xhi = ylo = yhi = 0;
    if (xhi <= xlo) { xlo -= 1; xhi += 1; }
    if (logy) { ylo = floor(ylo); yhi = ceil(yhi); }
    else if (ylo > 0) ylo = 0;
    if (yhi <= ylo) yhi = ylo + 1;
    int pw = W - L - R, ph = H - T - B;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart %s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            cls, W, H, W, H);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", L, T, pw, ph);
    for (int t = 0; t <= 4; t++) {
        double yv = ylo + (yhi - ylo) * t / 4.0, yy = T + ph - ph * t / 4.0;
        double xv = xlo + (xhi - xlo) * t / 4.0, xx = L + pw * t / 4.0;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.3g</text>"
                   "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%.3g</text>\n",
                L, L + pw, yy, yy, L - 4, yy + 3, logy ? pow(10, yv) : yv, xx, T + ph + 14, xv);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", L + pw / 2, H - 6);
    html_esc(f, xlabel);
    fprintf(f, "</text><text x=\"12\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">",
            T + ph / 2, T + ph / 2);
    html_esc(f, ylabel);
    fputs("</text>\n", f);
    for (int a = 0; a < ns; a++) {
        const char *c = k_colors[a % 8];
        fprintf(f, "<g class=\"series\" data-series=\"%d\" data-name=\"", a);
        html_esc(f, s[a].name);
        fputs("\">\n<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"", f);
        fputs(c, f);
        fputs("\" points=\"", f);
        for (int i = 0; i < s[a].n; i++) {
            double y = s[a].y[i];
            if (logy && !(y > 0)) continue;
            fprintf(f, "%.2f,%.2f ", L + pw * axis_pos(s[a].x[i], xlo, xhi, 0), T + ph - ph * axis_pos(y, ylo, yhi, logy));
        }
        fputs("\"/>\n", f);
        for (int i = 0; i < s[a].n; i++) {
            double y = s[a].y[i];
            if (logy && !(y > 0)) continue;
            double px = L + pw * axis_pos(s[a].x[i], xlo, xhi, 0), py = T + ph - ph * axis_pos(y, ylo, yhi, logy);
            fprintf(f, "<circle class=\"pt\" data-x=\"%.9g\" data-value=\"%.9g\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
                    s[a].x[i], y, px, py, c);
            if (s[a].bad && s[a].bad[i])
                fprintf(f, "<path class=\"miss\" data-x=\"%.9g\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                        s[a].x[i], px - 4, py - 4);
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">", W - R + 8, T + 12 + 14 * a, c);
        html_esc(f, s[a].name);
        fputs("</text>\n</g>\n", f);
    }
    fputs("</svg>\n", f);
}

void svg_range_cell(FILE *f, double lo, double hi, double amax) {
    const int W = 220, H = 14;
    double a = amax > 0 ? amax : 1;
    double x0 = W / 2.0 + W / 2.0 * (lo / a), x1 = W / 2.0 + W / 2.0 * (hi / a);
    if (x0 < 0) x0 = 0;
    if (x1 > W) x1 = W;
    if (x1 < x0) x1 = x0;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"range\" width=\"%d\" height=\"%d\">"
               "<line x1=\"%d\" x2=\"%d\" y1=\"0\" y2=\"%d\" stroke=\"#bbb\"/>"
               "<rect data-lo=\"%.9g\" data-hi=\"%.9g\" x=\"%.2f\" y=\"3\" width=\"%.2f\" height=\"8\" fill=\"#4c78a8\"/></svg>",
            W, H, W / 2, W / 2, H, lo, hi, x0, x1 - x0);
}
