#!/usr/bin/env python3
"""Prints the markdown table of docs/benchmarks.md from one or more bench.json files
written by run_bench.py. Usage: report_table.py bench.json [more.json ...]"""
import json
import sys

print("| model | batch | precision | PyTorch eager ms | Kiln ms | Kiln/PyTorch speed | Kiln + CUDA graph ms | PyTorch img/s | Kiln img/s | Kiln MFU | activations MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    data = json.load(open(path))
    for r in data["rows"]:
        k, g = r["kiln"], r.get("kiln_graph") or {}
        if "median_ms" not in k:
            print(f"| {r['model']} | {r['batch']} | {r['mode']} | {r['torch_ms']:.3f} | error: {k.get('error', '')[:60]} | | | | | | |")
            continue
        graph = f"{g['median_ms']:.3f}" if "median_ms" in g else ""
        mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") else "n/a"
        print(f"| {r['model']} | {r['batch']} | {r['mode']} | {r['torch_ms']:.3f} | {k['median_ms']:.3f} | "
              f"{r['ratio']:.2f}x | {graph} | {r['batch'] * 1000 / r['torch_ms']:.0f} | {r['kiln_qps']:.0f} | "
              f"{mfu} | {k['activation_mb']:.0f} |")
