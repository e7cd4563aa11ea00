#!/usr/bin/env python3
"""Compares `kiln conformance --json` of the CPU and CUDA backends on one suite:
every test that passes on the CPU must pass on CUDA. Prints one summary line and
the regressions (first 40), with their messages.
Usage: compare_conformance.py CPU.json CUDA.json LABEL"""
import json
import sys


def load(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except Exception as error:  # a crash leaves no JSON
        return {"tests": [], "error": str(error)}


cpu, cuda, label = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
status = lambda d: {t["test"]: t for t in d.get("tests", [])}
c, g = status(cpu), status(cuda)
cpu_pass = {n for n, t in c.items() if t.get("result") == "PASS"}
gpu_pass = {n for n, t in g.items() if t.get("result") == "PASS"}
regressions = sorted(cpu_pass - gpu_pass)
print(f"{label}: cpu {len(cpu_pass)} pass, cuda {len(gpu_pass)} pass, "
      f"{len(regressions)} pass on cpu but not cuda; placements {cuda.get('cuda_layer_placements')}"
      + (f" [cuda error: {cuda['error']}]" if "error" in cuda else ""))
for name in regressions[:40]:
    t = g.get(name, {})
    print(f"  {name}: {t.get('result', 'MISSING')} {str(t.get('detail', ''))[:200]}")
