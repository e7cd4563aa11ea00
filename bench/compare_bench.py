#!/usr/bin/env python3
"""FP16 against FP32 on the device: `kiln compare` of ResNet-50 and BERT-base on the
CUDA runtime (fp16, and fp32 with TF32) against the FP32 CPU reference, per output;
then `kiln debug precision` (CPU backend, fp16 rounding per layer) on the overflow
test model and on ResNet-50 at a tolerance fp16 misses, counting builds against
2*log2(layers)+2. Writes compare-results.md and the JSON reports to OUT_DIR.

Usage: compare_bench.py KILN MODEL_DIR OUT_DIR   (MODEL_DIR from bench/export_models.py)
"""
import datetime
import json
import math
import os
import subprocess
import sys

MODELS = {  # name: (shapes, profile args for kiln debug)
    "resnet50": ("input:1x3x224x224",
                 ["--min-shapes", "input:1x3x224x224", "--opt-shapes", "input:1x3x224x224",
                  "--max-shapes", "input:1x3x224x224"]),
    "bert_base": ("input_ids:1x128,attention_mask:1x128", []),
}


def kiln(binary, *args, timeout=1200):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0, 3):
        print(f"kiln {' '.join(args[:3])}: exit {p.returncode}: {p.stderr.strip()[-400:]}", flush=True)
        return None
    return json.loads(p.stdout)


def output_rows(model, side, report):
    rows = []
    for o in report["outputs"]:
        top = o.get("top_k", {})
        rows.append(f"| {model} | {side} | {o['name']} | {o['max_abs']:.3g} | {o['mean_abs']:.3g} | "
                    f"{o['abs_quantiles'].get('p99', 0):.3g} | {o['max_rel']:.3g} | {o['cosine']:.6f} | "
                    f"{o['nan']['actual']}/{o['inf']['actual']} | "
                    f"{top.get('top1_agreement', float('nan')) * 100:.1f}% | {'pass' if o['pass'] else 'FAIL'} |")
    return rows


def main():
    binary, model_dir, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    try:
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        device = ""
    device = device or "no GPU (CUDA rows fail)"
    lines = [f"# FP16 against FP32: kiln compare on {device}, {datetime.date.today()}", "",
             "CUDA runtime against the FP32 CPU reference, 3 random input sets (seeds 1..3), "
             "tolerance atol 1e-2 rtol 1e-2.", "",
             "| model | side A | output | max abs | mean abs | p99 abs | max rel | cosine | NaN/Inf | top-1 | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, (shapes, _) in MODELS.items():
        onnx = os.path.join(model_dir, name + ".onnx")
        for precision in ("fp16", "fp32"):
            report = kiln(binary, "compare", onnx, onnx, "--backend-a", "cuda", "--precision-a", precision,
                          "--shapes", shapes, "--runs", "3", "--atol", "1e-2", "--rtol", "1e-2", "--json")
            if report is None:
                continue
            json.dump(report, open(os.path.join(out_dir, f"compare-{name}-{precision}.json"), "w"), indent=1)
            lines += output_rows(name, f"cuda {precision}" + (" (TF32)" if precision == "fp32" else ""), report)
            print(f"{name} {precision}: {'pass' if report['pass'] else 'FAIL'}", flush=True)

    lines += ["", "## Precision bisection (kiln debug precision, CPU backend)", "",
              "| model | tolerance | candidate layers | builds | bound 2·log2(n)+2 | keep in FP32 (ONNX nodes) |",
              "|---|---|---|---|---|---|"]
    here = os.path.dirname(os.path.abspath(__file__))
    runs = [("fp16_overflow", os.path.join(here, "..", "tests", "data", "compare", "fp16_overflow.onnx"),
             ["--atol", "1e-2", "--rtol", "1e-2"]),
            ("resnet50", os.path.join(model_dir, "resnet50.onnx"),
             ["--atol", "1e-4", "--rtol", "1e-3", "--optimization-level", "1"] + MODELS["resnet50"][1])]
    for name, onnx, extra in runs:
        result = kiln(binary, "debug", "precision", onnx, "--fp16", *extra, "--json", timeout=3000)
        if result is None:
            continue
        json.dump(result, open(os.path.join(out_dir, f"debug-precision-{name}.json"), "w"), indent=1)
        n = len(result["candidates"])
        bound = 2 * math.log2(max(n, 2)) + 2
        nodes = ", ".join(result["onnx_nodes"]) or "none"
        lines.append(f"| {name} | {' '.join(extra[:4])} | {n} | {result['builds']} | {bound:.1f} | {nodes[:300]} |")
        print(f"debug precision {name}: {result['builds']} builds over {n} layers, keep {nodes[:200]}", flush=True)
    with open(os.path.join(out_dir, "compare-results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
