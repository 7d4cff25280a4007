#!/usr/bin/env bash
# pdq quantize --eval-task on the bundled model, RTN w4 with uint8 activations (the setting where
# integer and fake-quant differ most): report.json's "tasks" equal what pdq eval gives on each path
# (FP32, packed weights, static fake-quant, static integer; to cJSON's 15 digits); its integer-vs-fake-quant counts equal
# the ones recomputed here from both modes' --samples with the rule of docs/eval.md; every
# continuation's log-likelihood moves by at most the documented bound (0.1 nats per token) between
# fake-quant and integer, so the two accuracies differ by at most the items whose fake-quant margin
# lies inside the bound; report.html carries each value. Needs ../shared/data/tasks (skips without).
set -u
PDQ=${1:?usage: eval_quantize.sh PDQ_BINARY}
M=models/web-bible-llama-19m
D=../shared/data/tasks
if [ ! -f $D/README.md ]; then echo "SKIP: $D absent (task data stays outside the repository)"; exit 77; fi
. "$(dirname "$0")/lib/checks.sh"

Q="--model $M --calib data/web-bible/train.txt --method rtn --wbits 4 --quiet --threads 2 --act-nsamples 2 --verify-steps 2"
err no-data "'$PDQ' quantize $Q --abits 8 --eval-task piqa --out '$tmp/x'" "--eval-task needs --task-data"
err limit-alone "'$PDQ' quantize $Q --abits 8 --task-limit 3 --out '$tmp/x'" "go with --eval-task"
err bad-task "'$PDQ' quantize $Q --abits 8 --eval-task piqa,arc_medium --task-data $D --out '$tmp/x'" "unknown task 'arc_medium'"
check bad-task-early "[ ! -e '$tmp/x/model.q.safetensors' ]"

q=$tmp/q
T="arc_easy,piqa,winogrande"
N=8
[ "${PDQ_ASAN:-0}" = 1 ] && N=4 # sanitized fake-quant graphs are slow
if "$PDQ" quantize $Q --abits 8 --max-seq 96 --eval-task $T --task-data $D --task-limit $N --out "$q" >"$tmp/qlog" 2>&1; then
    ok quantize
else
    bad quantize; cat "$tmp/qlog"; exit 1
fi
check summary "grep -q '^task         piqa acc_norm: FP32 ' '$tmp/qlog' && grep -q 'items changed answer integer vs fake-quant' '$tmp/qlog'"
E="--task $T --data $D --limit $N --json"
"$PDQ" eval --model $M $E >"$tmp/fp32.json" 2>/dev/null
"$PDQ" eval --model "$q" $E >"$tmp/weights.json" 2>/dev/null
"$PDQ" eval --model "$q" --static --mode fake $E --samples "$tmp/fake.jsonl" >"$tmp/static-fake.json" 2>/dev/null
"$PDQ" eval --model "$q" --static --mode int $E --samples "$tmp/int.jsonl" >"$tmp/static-int.json" 2>/dev/null
python3 - "$q/report.json" "$tmp" <<'PY' && ok "report.json tasks == pdq eval per path" || bad "report.json tasks == pdq eval per path"
import json, sys
rep = json.load(open(sys.argv[1]))['tasks']
got = {(r['task'], r['path']): r for r in rep['results']}
assert len(got) == 12, got.keys()
for path in ('fp32', 'weights', 'static-fake', 'static-int'):
    for r in json.load(open(f"{sys.argv[2]}/{path}.json"))['results']:
        g = got[(r['task'], path)]
        for k, v in r.items():
            if k in ('task', 'shots'): continue
            # cJSON prints 15 significant digits when they read back within an ulp
            same = g[k] == v or (isinstance(v, float) and abs(g[k] - v) <= 1e-14 * abs(v))
            assert same, (path, r['task'], k, g[k], v)
PY
python3 - "$q/report.json" "$tmp/fake.jsonl" "$tmp/int.jsonl" $N <<'PY' && ok "int vs fake: counts, bound, accuracy difference" || bad "int vs fake: counts, bound, accuracy difference"
import json, sys
B = 0.1  # nats per continuation token (docs/eval.md)
rep = {r['task']: r for r in json.load(open(sys.argv[1]))['tasks']['int_vs_fake']}
fake = [json.loads(l) for l in open(sys.argv[2])]
inte = [json.loads(l) for l in open(sys.argv[3])]
assert set(rep) == {'arc_easy', 'piqa', 'winogrande'} and len(fake) == len(inte) == 3 * int(sys.argv[4])
for task, r in rep.items():
    items = inside = changed = outside = over = 0
    worst = 0.0
    acc_f = acc_i = 0
    for f, i in zip(fake, inte):
        if f['task'] != task or f['refused'] or i['refused']: continue
        items += 1
        ll = [q['ll'] for q in f['requests']]
        n = [len(q['continuation_ids']) for q in f['requests']]
        a = max(range(len(ll)), key=lambda j: (ll[j], -j))
        assert a == f['pred']
        ins = any(ll[a] - ll[b] <= B * (n[a] + n[b]) for b in range(len(ll)) if b != a)
        ch = f['pred'] != i['pred']
        inside += ins; changed += ch; outside += ch and not ins
        for p, q, k in zip(f['requests'], i['requests'], n):
            d = abs(p['ll'] - q['ll']) / k
            worst = max(worst, d); over += d > B
        acc_f += f['acc']; acc_i += i['acc']
    want = dict(items=items, inside_bound=inside, changed=changed, changed_outside_bound=outside, requests_over_bound=over)
    assert all(r[k] == v for k, v in want.items()), (task, r, want)
    assert abs(r['max_dll_per_token'] - worst) < 1e-12 and r['bound_per_token'] == B
    # the claim: the bound holds, so the accuracies differ by at most the items inside it
    assert over == 0 and outside == 0, (task, r)
    assert abs(acc_f - acc_i) <= inside, (task, acc_f, acc_i, inside)
    print(f"  {task}: {items} items, {changed} changed, {inside} inside the bound, max |dll| {worst:.4f}/token")
PY
python3 - "$q/report.json" "$q/report.html" <<'PY' && ok "report.html task table" || bad "report.html task table"
import json, re, sys
rep = json.load(open(sys.argv[1]))['tasks']
html = open(sys.argv[2]).read()
assert 'Task accuracy per path' in html and 'changed outside the bound' in html
vals = [float(v) for v in re.findall(r'<td data-value="([^"]+)">', html[html.index('Task accuracy per path'):])]
want = [r[m] for r in rep['results'] for m in ('acc', 'acc_norm') if m in r]
assert sorted(vals) == sorted(want), (vals, want)
PY
# pdq report on hostile "tasks" entries: wrong types, missing fields, more paths than a row shows
mkdir -p "$tmp/h"
python3 - "$tmp/h/report.json" <<'PY'
import json, sys
res = [1, "x", {"task": 3}, {"path": "fp32"}, {"task": "t", "path": "fp32", "acc": "high", "acc_stderr": None}]
res += [{"task": "t%d" % (i % 70), "path": "p%d" % i, "acc": i / 100, "refused": "many"} for i in range(100)]
json.dump({"tasks": {"results": res, "int_vs_fake": [{"task": 5}, 7, {"changed": "a"}], "limit": "all"}}, open(sys.argv[1], "w"))
PY
check report-hostile "'$PDQ' report '$tmp/h' >/dev/null 2>&1 && grep -q 'Task accuracy per path' '$tmp/h/report.html'"
exit $fail
