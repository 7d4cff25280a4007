"""Checks a pdq quantized checkpoint's hf/ copy against its codes, re-reading both files in plain
Python (an implementation independent of pdq's C): every hf/ tensor equals the checkpoint's
dequantized codes, scale * (code - zero) rounded to float32, or its float tensor; a tensor the
source checkpoint stacks (Phi-3's qkv_proj, gate_up_proj) holds its linears' rows in the order the
source lists them (q, k, v / gate, up), with the source's name and shape.
usage: check_restack.py QDIR SRC_DIR; prints one line per stacked tensor, exit 1 on a mismatch."""
import glob, json, struct, sys

def st_read(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop('__metadata__', None)
    return h, b[8 + n:]

DT = {'F32': ('f', 4), 'F16': ('e', 2), 'U8': ('B', 1), 'I32': ('i', 4), 'BF16': (None, 2)}

def values(h, data, name):
    t = h[name]
    a, b = t['data_offsets']
    fmt, size = DT[t['dtype']]
    raw = data[a:b]
    if t['dtype'] == 'BF16':
        return [struct.unpack('<f', struct.pack('<I', v << 16))[0] for v in struct.unpack('<%dH' % (len(raw) // 2), raw)]
    return list(struct.unpack('<%d%s' % (len(raw) // size, fmt), raw))

def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]

def dequant(qh, qd, e, name):
    rows, cols = e['shape']
    bits, group = e['bits'], e['group']
    ng = (cols + group - 1) // group if group else 1
    q = values(qh, qd, name + '.qweight')
    qc = (cols + 1) // 2 if bits <= 4 else cols
    sc = values(qh, qd, name + '.scales')
    zs = values(qh, qd, name + '.zeros') if name + '.zeros' in qh else [2 ** (bits - 1)] * (rows * ng)
    gi = values(qh, qd, name + '.g_idx') if name + '.g_idx' in qh else [c // group if group else 0 for c in range(cols)]
    out = []
    for r in range(rows):
        for c in range(cols):
            code = q[r * qc + c // 2] >> (4 * (c % 2)) & 15 if bits <= 4 else q[r * qc + c]
            g = r * ng + gi[c]
            out.append(f32(sc[g] * (code - zs[g])))
    return out

def main():
    qdir, src = sys.argv[1], sys.argv[2]
    qh, qd = st_read(qdir + '/model.q.safetensors')
    hh, hd = st_read(qdir + '/hf/model.safetensors')
    sh = {}  # the source's tensors, from one file or every shard
    for f in sorted(glob.glob(src + '/*.safetensors')):
        sh.update(st_read(f)[0])
    tens = json.load(open(qdir + '/pdq_quant.json'))['tensors']
    bad = 0
    if sorted(sh) != sorted(hh):
        print('hf/ names differ from the source: %s' % sorted(set(sh) ^ set(hh)))
        bad = 1
    # pdq's modules cut from a stacked tensor: "<stacked>.q", ... (pdq_linear_module)
    STACKS = {'qkv_proj': ['q', 'k', 'v'], 'gate_up_proj': ['gate', 'up']}
    for name in sorted(hh):
        if hh[name]['shape'] != sh.get(name, {}).get('shape'):
            print('%s: shape %s, the source has %s' % (name, hh[name]['shape'], sh.get(name, {}).get('shape')))
            bad = 1
            continue
        mod, leaf = name.rsplit('.', 1)
        last = mod.rpartition('.')[2]
        parts = [mod + '.' + p for p in STACKS[last]] if last in STACKS else [mod]
        want = []
        for p in parts:
            if leaf == 'weight' and p in tens:
                want += dequant(qh, qd, tens[p], p)
            else:
                want += values(qh, qd, p + '.' + leaf)
        got = values(hh, hd, name)
        if got != want:
            i = next(k for k in range(min(len(got), len(want))) if got[k] != want[k]) if len(got) == len(want) else -1
            print('%s: differs from the checkpoint (first at %d)' % (name, i))
            bad = 1
        elif len(parts) > 1:
            print('%s = %s, %d values equal' % (name, ' | '.join(p.rsplit('.', 1)[1] for p in parts), len(got)))
    sys.exit(bad)

if __name__ == '__main__':
    main()
