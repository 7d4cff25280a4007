#include "quant_args.h"

void quant_args_read(pdq_args *a, pdq_gptq_opts *o) {
    pdq_gptq_opts_default(o, (int)args_int(a, "--wbits", 4));
    pdq_qscheme *s = &o->scheme;
    s->group = (int)args_int(a, "--group", 0);
    s->partial_groups = args_flag(a, "--partial-groups");
    s->per_tensor = args_flag(a, "--per-tensor");
    s->sym = args_flag(a, "--sym");
    s->mse = args_flag(a, "--mse");
    s->grid = (int)args_int(a, "--mse-grid", s->grid);
    s->maxshrink = (float)args_double(a, "--mse-maxshrink", s->maxshrink);
    s->norm = (float)args_double(a, "--mse-norm", s->norm);
    o->actorder = !args_flag(a, "--no-actorder");
    o->static_groups = args_flag(a, "--static-groups");
    o->percdamp = (float)args_double(a, "--percdamp", o->percdamp);
    o->blocksize = (int)args_int(a, "--blocksize", o->blocksize);
    o->ref_groups = args_flag(a, "--gptq-ref-groups");
    o->mse_gptq = args_flag(a, "--mse-gptq");
    o->mse_gptq_steps = (int)args_int(a, "--mse-gptq-steps", o->mse_gptq_steps);
    o->mse_gptq_range = (float)args_double(a, "--mse-gptq-range", o->mse_gptq_range);
}
