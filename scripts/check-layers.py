#!/usr/bin/env python3
"""No upward include: every #include in src/ and include/pdq/ must name a header of the file's own
folder or of a folder at the same or a lower layer, as docs/architecture.md's layer table states
(public headers include/pdq/X.h belong to the folder the table names for them). Today's known
violations are listed in scripts/layers-allowed.txt, one include a line with its reason; an
include not listed there fails, and so does a listed one that no longer exists or no longer
points up, so the list only shrinks.
usage: check-layers.py [ROOT]   (ROOT: the repository root, default .)"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
doc = os.path.join(root, "docs/architecture.md")
allowed_path = os.path.join(root, "scripts/layers-allowed.txt")
errors = []

# The layer table: rows "| layer | `folder/` | job | public headers |" between the markers.
rank, owner, may = {}, {}, {}
text = open(doc, encoding="utf-8").read()
m = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
if not m:
    sys.exit(f"{doc}: no <!-- layers:begin --> ... <!-- layers:end --> table")
for row in m.group(1).splitlines():
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) < 4 or not cells[0].isdigit():
        continue
    folder = cells[1].strip("`/")
    rank[folder] = int(cells[0])
    for h in re.findall(r"`([\w]+\.h)`", cells[3]):
        owner[h] = folder
    may[folder] = cells[4] if len(cells) > 4 else ""
if not rank:
    sys.exit(f"{doc}: the layer table has no rows")
# The "may include" column says in words what the layer numbers say.
for f, text in may.items():
    below = [g for g in rank if rank[g] < rank[f]]
    want = "nothing" if not below else "every folder" if len(below) == len(rank) - 1 else ", ".join(below)
    if text != want:
        errors.append(f"{doc}: {f}/ may include '{text}', but its layer says '{want}'")


def folder_of(path):
    """The layer folder a repository path belongs to, or None (outside src/ and include/pdq/)."""
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "pdq"]:
        return owner.get(parts[2], "?" + parts[2])
    return None


def resolve(src, inc):
    """Where the compiler finds inc included from src: beside src, then src/, then include/."""
    for base in (os.path.dirname(src), "src", "include"):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


# Every upward include today, as (file, included text).
upward = {}
for top in ("src", "include/pdq"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            src = os.path.relpath(os.path.join(dirpath, name), root)
            a = folder_of(src)
            if a is None or a.startswith("?") or a not in rank:
                errors.append(f"{src}: its folder is not in the layer table of {doc}")
                continue
            for ln, line in enumerate(open(os.path.join(root, src), encoding="utf-8", errors="replace"), 1):
                mm = re.match(r'\s*#\s*include\s+["<]([^">]+)[">]', line)
                if not mm:
                    continue
                target = resolve(src, mm.group(1))
                b = folder_of(target) if target else None
                if b is None:
                    continue  # a system or third-party header
                if b.startswith("?") or b not in rank:
                    errors.append(f"{src}:{ln}: {mm.group(1)}: its folder is not in the layer table of {doc}")
                elif rank[b] > rank[a]:
                    upward[(src, mm.group(1))] = f"{src}:{ln}: includes {mm.group(1)} ({b}/, layer {rank[b]}) from {a}/ (layer {rank[a]})"

# The allow-list: "FILE: INCLUDE  # reason" lines.
allowed = set()
for ln, line in enumerate(open(allowed_path, encoding="utf-8"), 1):
    body, _, reason = line.partition("#")
    if not body.strip():
        continue
    f, _, inc = body.partition(":")
    key = (f.strip(), inc.strip())
    if not key[1] or not reason.strip():
        errors.append(f"{allowed_path}:{ln}: expected 'FILE: INCLUDE  # reason'")
    elif key not in upward:
        errors.append(f"{allowed_path}:{ln}: {key[0]} no longer includes {key[1]} upward: remove the line")
    allowed.add(key)
for key, msg in sorted(upward.items()):
    if key not in allowed:
        errors.append(f"{msg}: an upward include (docs/architecture.md); include downward instead")

for e in errors:
    print(e)
print(f"check-layers: {len(upward)} upward includes, all {len(allowed)} allow-listed" if not errors else
      f"check-layers: {len(errors)} problem(s)")
sys.exit(1 if errors else 0)
