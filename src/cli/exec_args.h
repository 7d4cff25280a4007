/* --mode float|fake|int of the commands that run static or quantized graphs (pdq/qexec.h). */
#ifndef PDQ_CLI_EXEC_ARGS_H
#define PDQ_CLI_EXEC_ARGS_H

#include "args.h"
#include "pdq/circle_export.h"
#include "pdq/ptq.h"
#include "pdq/lower.h"
#include "pdq/qexec.h"
#include "pdq/runtime.h"

#define EXEC_ARGS_USAGE \
    "  --mode float|fake|int  quantized graphs: float activations, fake-quant (the float oracle) or\n" \
    "                         integer execution (default int; float checkpoints always run float)\n"

typedef struct {
    pdq_exec_mode mode;
    int given;            /* --mode was on the command line */
    pdq_pool *pool;       /* integer kernels' workers */
    pdq_lowering *lw;     /* in-memory integer mode */
} cli_exec;

/* Reads --mode (before args_finish); returns 0, or -1 after printing the error. */
int cli_exec_read(pdq_args *a, cli_exec *ex);
/* Execution options for Circle files (creates the pool: threads <= 0 is all cores). */
int cli_exec_opts(cli_exec *ex, const char *cmd, int threads, pdq_exec_opts *eo);
/* Puts an in-memory runtime from cli_static_runtime in the mode: int lowers every graph (needs
 * ptq.json and the checkpoint's codes in dir), float switches fake-quant off. ptq NULL (a float
 * checkpoint): an explicit fake/int is an error. Returns 0, or 1 after printing the error. */
int cli_exec_rt(cli_exec *ex, const char *cmd, const char *dir, pdq_rt *rt, pdq_ptq *ptq, int threads);
/* After the runtimes that use it. */
void cli_exec_free(cli_exec *ex);

#endif
