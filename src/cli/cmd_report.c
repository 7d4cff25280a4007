/* pdq report OUTDIR: the HTML page of a quantize run (logic in src/report). */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "pdq/report.h"

static const char *k_usage =
    "usage: pdq report OUTDIR [--out FILE.html]\n"
    "  one self-contained HTML file (inline SVG, no scripts) from OUTDIR/report.json and ptq.json:\n"
    "  summary, per-module GPTQ vs RTN loss, activation ranges and clipping per edge (worst first),\n"
    "  |dlogit| and top-1 per decode step, perplexity per configuration (and vs bits for a sweep).\n"
    "  default FILE: OUTDIR/report.html\n";

int cmd_report(int argc, char **argv) {
    pdq_args a;
    args_init(&a, "report", argc, argv);
    if (args_flag(&a, "--help")) { fputs(k_usage, stdout); return 0; }
    const char *out = args_str(&a, "--out");
    const char *dir = args_pos(&a, 0);
    if (!dir || args_pos(&a, 1) || args_finish(&a)) { fputs(k_usage, stderr); return 2; }
    pdq_status st = {0};
    if (pdq_report_html(dir, out, &st) != PDQ_OK) {
        fprintf(stderr, "pdq report: %s\n", st.msg);
        return 1;
    }
    printf("wrote %s%s\n", out ? out : dir, out ? "" : "/report.html");
    return 0;
}
