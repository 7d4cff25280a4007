#include "quant_args.h"

#include <math.h>
#include <string.h>

void quant_args_read(pdq_args *a, pdq_gptq_opts *o, pdq_qscale_type group_scale) {
    pdq_gptq_opts_default(o, (int)args_int_range(a, "--wbits", 4, 2, 8));
    pdq_qscheme *s = &o->scheme;
    s->group = (int)args_int_range(a, "--group", 0, 0, QUANT_ARGS_GROUP_LIMIT);
    s->partial_groups = args_flag(a, "--partial-groups");
    s->per_tensor = args_flag(a, "--per-tensor");
    s->sym = args_flag(a, "--sym");
    const char *gsc = args_str(a, "--group-scale");
    s->group_scale = group_scale;
    if (!gsc) {
    } else if (!strcmp(gsc, "f16")) s->group_scale = PDQ_QSCALE_F16;
    else if (!strcmp(gsc, "bf16")) s->group_scale = PDQ_QSCALE_BF16;
    else if (!strcmp(gsc, "f32")) s->group_scale = PDQ_QSCALE_F32;
    else args_error(a, "--group-scale %s: expected f16, bf16 or f32", gsc);
    s->mse = args_flag(a, "--mse");
    s->grid = (int)args_int_range(a, "--mse-grid", s->grid, 1, 100000);
    s->maxshrink = (float)args_real(a, "--mse-maxshrink", s->maxshrink, 0, 1, ARGS_LO_OPEN);
    s->norm = (float)args_real(a, "--mse-norm", s->norm, 0, 100, ARGS_LO_OPEN);
    o->actorder = !args_flag(a, "--no-actorder");
    o->static_groups = args_flag(a, "--static-groups");
    o->percdamp = (float)args_real(a, "--percdamp", o->percdamp, 0, 1, ARGS_CLOSED);
    o->blocksize = (int)args_int_range(a, "--blocksize", o->blocksize, 1, 65536);
    if (s->group > 0 && s->per_tensor) args_error(a, "--per-tensor and --group %d exclude each other", s->group);
    o->ref_groups = args_flag(a, "--gptq-ref-groups");
    o->mse_gptq = args_flag(a, "--mse-gptq");
    o->mse_gptq_steps = (int)args_int_range(a, "--mse-gptq-steps", o->mse_gptq_steps, 1, 1000);
    o->mse_gptq_range = (float)args_real(a, "--mse-gptq-range", o->mse_gptq_range, 0, 1, ARGS_LO_OPEN | ARGS_HI_OPEN);
}
