/* --mode of the static / quantized commands: integer execution by default. */
#include <stdio.h>
#include <string.h>

#include "exec_args.h"

int cli_exec_read(pdq_args *a, cli_exec *ex) {
    memset(ex, 0, sizeof *ex);
    ex->mode = PDQ_EXEC_INT;
    const char *s = args_str(a, "--mode");
    if (!s) return 0;
    int m = pdq_exec_mode_parse(s);
    if (m < 0) {
        fprintf(stderr, "pdq %s: --mode takes float, fake or int, got '%s'\n", a->cmd, s);
        return -1;
    }
    ex->mode = (pdq_exec_mode)m;
    ex->given = 1;
    return 0;
}

int cli_exec_opts(cli_exec *ex, const char *cmd, int threads, pdq_exec_opts *eo) {
    pdq_exec_opts_default(eo);
    eo->mode = ex->mode;
    if (ex->mode == PDQ_EXEC_INT && !ex->pool) {
        pdq_status st = {0};
        if (!(ex->pool = pdq_pool_create(threads, &st))) {
            fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
            return 1;
        }
    }
    eo->pool = ex->pool;
    return 0;
}

int cli_exec_rt(cli_exec *ex, const char *cmd, const char *dir, pdq_rt *rt, pdq_ptq *ptq, int threads) {
    if (!ptq) {
        if (ex->given && ex->mode != PDQ_EXEC_FLOAT) {
            fprintf(stderr, "pdq %s: --mode %s needs a quantized checkpoint with ptq.json (%s has none)\n", cmd,
                    pdq_exec_mode_name(ex->mode), dir);
            return 1;
        }
        return 0;
    }
    if (ex->mode == PDQ_EXEC_FLOAT) pdq_ptq_set_mode(ptq, PDQ_PTQ_OFF);
    if (ex->mode != PDQ_EXEC_INT) return 0;
    pdq_exec_opts eo;
    if (cli_exec_opts(ex, cmd, threads, &eo)) return 1;
    pdq_status st = {0};
    if (pdq_lowering_open(dir, ptq, &ex->lw, &st) != PDQ_OK ||
        pdq_rt_set_lowering(rt, pdq_lowering_lower, ex->lw, &eo, &st) != PDQ_OK) {
        if (!ex->given && st.code == PDQ_ERR_UNSUPPORTED) {
            /* the default on a checkpoint integer mode cannot run (group-wise weights): the oracle */
            fprintf(stderr, "pdq %s: integer mode unsupported here (%s); running fake-quant\n", cmd, st.msg);
            pdq_status st2 = {0};
            ex->mode = PDQ_EXEC_FAKE;
            if (pdq_rt_set_lowering(rt, NULL, NULL, NULL, &st2) == PDQ_OK) {
                pdq_ptq_attach(ptq, rt); /* rebuilt graphs: the hook's graph map starts afresh (mode kept) */
                return 0;
            }
            fprintf(stderr, "pdq %s: %s\n", cmd, st2.msg);
            return 1;
        }
        fprintf(stderr, "pdq %s: integer mode: %s (--mode fake runs the float oracle)\n", cmd, st.msg);
        return 1;
    }
    fprintf(stderr, "pdq %s: integer execution of those grids (--mode fake: the float fake-quant oracle)\n", cmd);
    return 0;
}

void cli_exec_free(cli_exec *ex) {
    pdq_lowering_free(ex->lw);
    pdq_pool_free(ex->pool);
    memset(ex, 0, sizeof *ex);
}
