/* Parsing of the activation-quantization flags shared by quantize (and later export). */
#include <stdio.h>

#include "ptq_args.h"

int ptq_args_read(pdq_args *a, pdq_ptq_run_opts *o, int have_calib) {
    pdq_ptq_run_opts_default(o);
    const char *ab = args_str(a, "--abits"), *obs = args_str(a, "--observer"), *rope = args_str(a, "--rope"),
               *sf = args_str(a, "--scale-fusion"), *lay = args_str(a, "--layout");
    o->max_seq = (int)args_int(a, "--max-seq", 256);
    o->nsamples = (int)args_int(a, "--act-nsamples", 32);
    o->decode_steps = (int)args_int(a, "--decode-calib-steps", 0);
    o->verify_steps = (int)args_int(a, "--verify-steps", 32);
    o->po.ema_momentum = args_double(a, "--ema-momentum", 0.9);
    o->compare_calib = args_flag(a, "--compare-calib");
    int dt = ab ? pdq_adtype_parse(ab) : (have_calib ? PDQ_ADT_INT16 : PDQ_ADT_FLOAT);
    if (dt < 0 || dt == PDQ_ADT_INT32) {
        fprintf(stderr, "pdq quantize: --abits takes 16, 8 or none, got '%s'\n", ab);
        return -1;
    }
    o->po.adtype = (pdq_adtype)dt;
    if (dt != PDQ_ADT_FLOAT && !have_calib) {
        fprintf(stderr, "pdq quantize: --abits %s needs calibration text (--calib FILE)\n", ab);
        return -1;
    }
    int k = obs ? pdq_obs_parse(obs) : PDQ_OBS_MINMAX;
    if (k < 0) { fprintf(stderr, "pdq quantize: --observer takes minmax or ema, got '%s'\n", obs); return -1; }
    o->po.observer = (pdq_obs_kind)k;
    int r = rope ? pdq_rope_conv_parse(rope) : 0, s = sf ? pdq_scale_fusion_parse(sf) : 0,
        l = lay ? pdq_attn_layout_parse(lay) : 0;
    if (r < 0 || s < 0 || l < 0) {
        fprintf(stderr, "pdq quantize: bad --rope/--scale-fusion/--layout value\n");
        return -1;
    }
    o->so.rope = (pdq_rope_conv)r;
    o->so.scale = (pdq_scale_fusion)s;
    o->so.layout = (pdq_attn_layout)l;
    if (o->max_seq < 2 || o->nsamples < 1 || o->decode_steps < 0 || o->decode_steps > o->max_seq - 2 ||
        o->verify_steps < 0 || !(o->po.ema_momentum >= 0 && o->po.ema_momentum < 1)) {
        fprintf(stderr, "pdq quantize: need --max-seq >= 2, --act-nsamples >= 1, 0 <= --decode-calib-steps <= max-seq - 2, "
                        "--verify-steps >= 0, 0 <= --ema-momentum < 1\n");
        return -1;
    }
    return dt;
}

int cli_static_runtime(const char *cmd, const char *dir, pdq_model *m, int B, int max_seq,
                       const pdq_static_opts *so, int so_given, pdq_rt **rt, pdq_ptq **ptq) {
    pdq_status st = {0};
    if (pdq_ptq_open_runtime(m, dir, B, max_seq, so_given ? so : NULL, rt, ptq, &st) != PDQ_OK) {
        fprintf(stderr, "pdq %s: %s\n", cmd, st.msg);
        return 1;
    }
    if (*ptq)
        fprintf(stderr, "pdq %s: fake-quantized %s activations from %s/ptq.json\n", cmd,
                pdq_adtype_name(pdq_ptq_get_opts(*ptq)->adtype), dir);
    return 0;
}
