"""Checks a pdq report.html against the report.json / ptq.json it was made from.

usage: check_report.py REPORT.html REPORT.json [PTQ.json]
Parses the page with html.parser (tags balanced, nothing loaded from elsewhere, no scripts),
every inline <svg> with xml.etree, and compares what is drawn with the JSON numbers: one GPTQ and
one RTN bar per module with both losses (bar lengths ordered as the losses), one table row per
activation group in non-increasing clipped fraction, one point per verify step and series and a
cross per top-1 disagreement, a bar per perplexity, the sweep's points. Prints 'ok NAME' or
'FAIL NAME ...' lines; exit status 1 on any failure."""
import json
import math
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "hr", "input", "link", "col", "wbr", "source", "area", "base", "param", "track", "embed"}
SVG_NS = "{http://www.w3.org/2000/svg}"
failed = False


def check(name, cond, detail=""):
    global failed
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else " " + str(detail)))
    failed |= not cond


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.external, self.scripts, self.rows = [], [], [], 0, []
        self.svg_depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href", "xlink:href"):
            if k in a:
                self.external.append((tag, a[k]))
        if tag == "tr" and a.get("class") == "edge":
            self.rows.append(a)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href", "xlink:href"):
            if k in a:
                self.external.append((tag, a[k]))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def main():
    html_path, report_path = sys.argv[1], sys.argv[2]
    ptq_path = sys.argv[3] if len(sys.argv) > 3 else None
    text = open(html_path, encoding="utf-8").read()
    report = json.load(open(report_path))
    ptq = json.load(open(ptq_path)) if ptq_path else None

    p = Page()
    p.feed(text)
    p.close()
    check("html-balanced", not p.errors and p.stack == [], (p.errors[:3], p.stack[:5]))
    check("doctype", text.startswith("<!DOCTYPE html>"))
    check("no-scripts", p.scripts == 0)
    check("self-contained", not p.external and "url(" not in text and "@import" not in text, p.external[:3])

    svgs, n_svg = {}, 0
    for m in re.finditer(r"<svg\b.*?</svg>", text, re.S):
        n_svg += 1
        root = ET.fromstring(m.group(0))  # raises on malformed SVG
        cls = root.get("class", "").split()
        svgs.setdefault(cls[1] if len(cls) > 1 else cls[0], []).append(root)
    check("svg-parse", n_svg == text.count("<svg"), (n_svg, text.count("<svg")))

    # per-module GPTQ vs RTN losses
    mods = [m for m in report.get("modules", []) if "gptq_loss" in m and "rtn_loss" in m]
    if mods:
        chart = svgs.get("losses", [None])[0]
        check("loss-chart", chart is not None)
        if chart is not None:
            bars = [r for r in chart.iter(SVG_NS + "rect") if "bar" in r.get("class", "").split()]
            g = [b for b in bars if b.get("data-series") == "0"]
            r = [b for b in bars if b.get("data-series") == "1"]
            check("loss-bars-count", len(g) == len(mods) and len(r) == len(mods), (len(g), len(r), len(mods)))
            ok = all(b.get("data-label") == m["name"] and close(float(b.get("data-value")), m["gptq_loss"]) for b, m in zip(g, mods))
            ok &= all(close(float(b.get("data-value")), m["rtn_loss"]) for b, m in zip(r, mods))
            check("loss-bars-values", ok)
            pairs = sorted((float(b.get("data-value")), float(b.get("width"))) for b in g + r)
            check("loss-bars-ordered", all(pairs[i][1] <= pairs[i + 1][1] + 1e-9 for i in range(len(pairs) - 1)))
            check("gptq-below-rtn-drawn", all(float(a.get("width")) <= float(b.get("width")) for a, b in zip(g, r)
                                              if float(a.get("data-value")) <= float(b.get("data-value"))))

    # activation edges, worst first
    if ptq is not None:
        groups = ptq["groups"]
        check("edge-rows", len(p.rows) == len(groups), (len(p.rows), len(groups)))
        clips = [float(r["data-clipped"]) for r in p.rows]
        check("edge-sorted", all(clips[i] >= clips[i + 1] for i in range(len(clips) - 1)))
        want = sorted(g["clipped"] / g["counted"] if g.get("counted") else 0 for g in groups)
        check("edge-clipped-values", all(close(a, b) for a, b in zip(sorted(clips), want)))
        ranges = [r for s in svgs.get("range", []) for r in s.iter(SVG_NS + "rect")]
        got = sorted((float(r.get("data-lo")), float(r.get("data-hi"))) for r in ranges)
        exp = sorted((g["min"], g["max"]) for g in groups)
        check("edge-ranges", len(got) == len(exp) and all(close(a[0], b[0]) and close(a[1], b[1]) for a, b in zip(got, exp)))

    # |dlogit| per step
    steps = report.get("activations", {}).get("verify", {}).get("steps", [])
    if steps:
        chart = svgs.get("steps", [None])[0]
        check("step-chart", chart is not None)
        if chart is not None:
            pts = [c for c in chart.iter(SVG_NS + "circle")]
            check("step-points", len(pts) == 2 * len(steps), (len(pts), len(steps)))
            maxes = sorted(s["max_abs_diff"] for s in steps if s["max_abs_diff"] > 0)
            drawn = sorted(float(c.get("data-value")) for c in pts)
            check("step-max-values", all(any(close(m, d) for d in drawn) for m in maxes))
            misses = len(list(chart.iter(SVG_NS + "path")))
            check("step-top1-misses", misses == sum(1 for s in steps if not s["top1_agree"]), misses)

    # perplexities
    want = []
    ev = report.get("eval")
    if ev:
        want += [ev[k] for k in ("fp32_ppl", "quant_ppl") if k in ev]
    pp = report.get("activations", {}).get("ppl_static")
    if pp:
        want += [pp[k] for k in ("fp32", "weight_only", "full") if k in pp]
    if want:
        chart = svgs.get("ppl", [None])[0]
        vals = [float(r.get("data-value")) for r in chart.iter(SVG_NS + "rect") if "bar" in r.get("class", "")] if chart is not None else []
        check("ppl-bars", all(any(close(w, v) for v in vals) for w in want), (want, vals))
        bars = sorted((float(r.get("data-value")), float(r.get("width"))) for r in chart.iter(SVG_NS + "rect")
                      if "bar" in r.get("class", "")) if chart is not None else []
        # lengths follow the values, and differing values are told apart (the axis is zoomed)
        check("ppl-bars-ordered", all(bars[i][1] <= bars[i + 1][1] + 1e-9 for i in range(len(bars) - 1)) and
              (len({v for v, _ in bars}) < 2 or bars[0][1] < bars[-1][1]), bars)

    sweep = report.get("sweep")
    if sweep:
        chart = svgs.get("sweep", [None])[0]
        check("sweep-chart", chart is not None)
        if chart is not None:
            pts = sorted((float(c.get("data-x")), float(c.get("data-value"))) for c in chart.iter(SVG_NS + "circle"))
            exp = sorted((float(s.get("wbits", s.get("bits"))), float(s.get("ppl", s.get("quant_ppl")))) for s in sweep)
            check("sweep-points", len(pts) == len(exp) and all(close(a[0], b[0]) and close(a[1], b[1]) for a, b in zip(pts, exp)))
            methods = {s.get("method", "run") for s in sweep}
            check("sweep-lines", len(list(chart.iter(SVG_NS + "polyline"))) == len(methods))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
