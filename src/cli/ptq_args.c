/* Parsing of the activation-quantization flags shared by quantize (and later export). */
#include <stdio.h>

#include "args.h"

#include "ptq_args.h"

int ptq_args_read(pdq_args *a, pdq_ptq_run_opts *o, int have_calib) {
    pdq_ptq_run_opts_default(o);
    const char *ab = args_str(a, "--abits"), *obs = args_str(a, "--observer"), *rope = args_str(a, "--rope"),
               *sf = args_str(a, "--scale-fusion"), *lay = args_str(a, "--layout");
    o->max_seq = (int)args_int_range(a, "--max-seq", ARGS_MAX_SEQ_DEFAULT, 2, ARGS_MAX_SEQ_LIMIT);
    o->nsamples = (int)args_int_range(a, "--act-nsamples", 32, 1, 1 << 20);
    o->decode_steps = (int)args_int_range(a, "--decode-calib-steps", 0, 0, ARGS_MAX_SEQ_LIMIT);
    o->verify_steps = (int)args_int_range(a, "--verify-steps", 32, 0, ARGS_MAX_SEQ_LIMIT);
    o->po.ema_momentum = args_real(a, "--ema-momentum", 0.9, 0, 1, ARGS_HI_OPEN);
    o->compare_calib = args_flag(a, "--compare-calib");
    int dt = ab ? pdq_adtype_parse(ab) : (have_calib ? PDQ_ADT_INT16 : PDQ_ADT_FLOAT), bad = 0;
    if (dt < 0 || dt == PDQ_ADT_INT32) {
        args_error(a, "--abits takes 16, 8 or none, got '%s'", ab);
        dt = PDQ_ADT_FLOAT;
        bad = 1;
    }
    o->po.adtype = (pdq_adtype)dt;
    if (dt != PDQ_ADT_FLOAT && !have_calib) {
        args_error(a, "--abits %s needs calibration text (--calib FILE)", ab);
        bad = 1;
    }
    int k = obs ? pdq_obs_parse(obs) : PDQ_OBS_MINMAX;
    if (k < 0) { args_error(a, "--observer takes minmax or ema, got '%s'", obs); bad = 1; k = PDQ_OBS_MINMAX; }
    o->po.observer = (pdq_obs_kind)k;
    int r = rope ? pdq_rope_conv_parse(rope) : 0, s = sf ? pdq_scale_fusion_parse(sf) : 0,
        l = lay ? pdq_attn_layout_parse(lay) : 0;
    if (r < 0) args_error(a, "--rope must be hf or pre_negated_sin, got '%s'", rope);
    if (s < 0) args_error(a, "--scale-fusion must be none or k_proj, got '%s'", sf);
    if (l < 0) args_error(a, "--layout must be batched or unrolled, got '%s'", lay);
    if (r < 0 || s < 0 || l < 0) return -1;
    o->so.rope = (pdq_rope_conv)r;
    o->so.scale = (pdq_scale_fusion)s;
    o->so.layout = (pdq_attn_layout)l;
    if (o->decode_steps > o->max_seq - 2) {
        args_error(a, "--decode-calib-steps %d must be at most max_seq - 2 = %d", o->decode_steps, o->max_seq - 2);
        bad = 1;
    }
    if (obs && dt == PDQ_ADT_FLOAT) { args_error(a, "--observer needs activation quantization (--abits 16|8)"); bad = 1; }
    /* options of the activation step alone would silently do nothing without it */
    const char *act_only[] = {"--act-nsamples", "--decode-calib-steps", "--ema-momentum"};
    for (size_t i = 0; i < sizeof act_only / sizeof act_only[0] && dt == PDQ_ADT_FLOAT; i++)
        if (args_str(a, act_only[i])) { args_error(a, "%s needs activation quantization (--abits 16|8)", act_only[i]); bad = 1; }
    if (o->compare_calib && dt == PDQ_ADT_FLOAT) { args_error(a, "--compare-calib needs activation quantization (--abits 16|8)"); bad = 1; }
    if (args_str(a, "--ema-momentum") && dt != PDQ_ADT_FLOAT && k != PDQ_OBS_EMA) {
        args_error(a, "--ema-momentum needs --observer ema");
        bad = 1;
    }
    return bad || a->bad ? -1 : dt;
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
