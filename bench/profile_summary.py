#!/usr/bin/env python3
"""Summarizes `kiln run --profile --json` output: time per op type, the slowest
layers, and layers not on the GPU. Usage: kiln run ... --profile --json | profile_summary.py"""
import collections
import json
import sys

text = sys.stdin.read()
data = json.loads(text[text.index("{"):])
ops = {l["name"]: l for l in data["layers"]}
by_type = collections.Counter()
rows = []
for entry in data["profile"][1:]:
    layer = ops.get(entry["name"], {})
    by_type[layer.get("op_type", "?")] += entry["averageMs"]
    rows.append((entry["averageMs"], entry["name"], layer.get("op_type", "?"), layer.get("implementation", "")))
total = sum(by_type.values())
print(f"total {total:.3f} ms per inference (sum of layers)")
for op, ms in by_type.most_common(12):
    print(f"  {op:24s} {ms:8.3f} ms {100 * ms / total:5.1f}%")
for ms, name, op, impl in sorted(rows, reverse=True)[:8]:
    print(f"  {ms:8.3f} ms {op:12s} {name[:50]} {impl[:60]}")
for l in data["layers"]:
    if l["placement"] not in ("gpu", "alias", "folded") or l["note"]:
        print(f"  [{l['placement']}] {l['name']} ({l['op_type']}): {l['note'][:120]}")
