"""Checks Gemma's norms after `--transform fold`, re-reading both checkpoints in plain Python: the
pre-norms (input_layernorm, pre_feedforward_layernorm) store w = 0, the factor (1 + w) = 1 of a
folded norm; the post-branch norms, the q/k norms and the tied final norm keep the source's
values; q_proj's columns are the source's times (1 + w) of input_layernorm, rounded to float32.
usage: check_fold_gemma.py TRANSFORMED_DIR SRC_DIR N_LAYERS; exit 1 on a mismatch."""
import glob, os, struct, sys
sys.path.insert(0, os.path.dirname(__file__))
from check_restack import st_read, values, f32

def tensors(d):
    out = {}
    for p in sorted(glob.glob(os.path.join(d, '*.safetensors'))):
        h, data = st_read(p)
        for k in h:
            out[k] = (h, data)
    return out

def get(ts, name):
    h, data = ts[name]
    return values(h, data, name), h[name]['shape']

t, s = tensors(sys.argv[1]), tensors(sys.argv[2])
bad = []
for l in range(int(sys.argv[3])):
    p = 'model.layers.%d.' % l
    for n in ('input_layernorm', 'pre_feedforward_layernorm'):
        w, _ = get(t, p + n + '.weight')
        if any(v != 0.0 for v in w): bad.append(p + n + ' not folded to w = 0')
    for n in ('post_attention_layernorm', 'post_feedforward_layernorm', 'self_attn.q_norm', 'self_attn.k_norm'):
        if get(t, p + n + '.weight')[0] != get(s, p + n + '.weight')[0]: bad.append(p + n + ' changed')
    g = [f32(1.0 + v) for v in get(s, p + 'input_layernorm.weight')[0]]
    w0, (rows, cols) = get(s, p + 'self_attn.q_proj.weight')
    w1, _ = get(t, p + 'self_attn.q_proj.weight')
    if any(w1[r * cols + c] != f32(w0[r * cols + c] * g[c]) for r in range(rows) for c in range(cols)):
        bad.append(p + 'q_proj columns are not the source times (1 + w)')
if get(t, 'model.norm.weight')[0] != get(s, 'model.norm.weight')[0]: bad.append('the tied final norm changed')
print('\n'.join(bad) or 'folded: pre-norms w = 0, q_proj * (1 + w), post/q/k/final norms kept')
sys.exit(1 if bad else 0)
