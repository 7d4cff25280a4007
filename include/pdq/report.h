/* The human-readable report of a `pdq quantize` output directory: one self-contained HTML file
 * (inline CSS and SVG, no scripts, nothing fetched) built from OUTDIR/report.json and, when
 * present, OUTDIR/ptq.json. */
#ifndef PDQ_REPORT_H
#define PDQ_REPORT_H

#include "pdq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes html_path (NULL: OUTDIR/report.html, atomically) with: a summary (method, bits, sizes,
 * perplexities and top-1), per-module GPTQ vs RTN loss bars, per-edge activation ranges and
 * clipped fraction sorted worst first, |dlogit| and top-1 per decode step, perplexity per
 * configuration and, when report.json holds a "sweep" array ({method, wbits|bits, ppl} rows),
 * perplexity against bits. A missing or malformed report.json is an error naming the file. */
pdq_code pdq_report_html(const char *outdir, const char *html_path, pdq_status *st);

#ifdef __cplusplus
}
#endif
#endif
