#!/usr/bin/env python3
"""The builder on the device (docs/benchmarks.md, "Builder"): for each model and
mode, `kiln build --backend cuda` cold and with a warm timing cache, the engine
inspector's tactic candidates, `kiln run PLAN` against PyTorch eager in the same
run (run_bench.py's fair set-up: channels-last, cudnn.benchmark, .half()).

Usage: build_bench.py KILN MODEL_DIR OUT_DIR [--only=MODEL[,MODEL]] [--cases=MODEL:BATCH:MODE,...]
(build_bench.json is rewritten after each row, so a run cut short keeps what it measured)
"""
import json
import os
import subprocess
import sys
import time

sys.argv += ["--quick"]
import run_bench  # noqa: E402  (shares the PyTorch baseline and the shapes)

KILN, MODEL_DIR, OUT_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
CASES = [("resnet50", 256, "fp16"), ("resnet50", 256, "tf32"), ("bert_base", 128, "fp32"),
         ("bert_base", 128, "fp16"), ("resnet50", 1, "fp16"), ("bert_base", 1, "fp16")]


def kiln(*args, timeout=240):
    started = time.time()
    try:
        p = subprocess.run([KILN, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        p = subprocess.CompletedProcess(args, 124, "", f"timed out after {timeout} s")
    return p, time.time() - started


def build(name, batch, mode, plan, cache):
    shapes = run_bench.shapes_for(name, batch)
    flags = {"fp16": ["--fp16"], "tf32": [], "fp32": ["--no-tf32"]}[mode]
    p, wall = kiln("build", os.path.join(MODEL_DIR, name + ".onnx"), "-o", plan, "--backend", "cuda",
                   "--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes,
                   "--optimization-level", "2", "--timing-cache", cache, "--json", *flags)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip()[-400:], "wall_s": wall}
    summary = json.loads(p.stdout)
    summary["wall_s"] = wall
    return summary


def inspect(plan, out):
    p, _ = kiln("inspect", plan, "--json")
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-300:]}
    with open(out, "w") as f:
        f.write(p.stdout)
    doc = json.loads(p.stdout)
    timed = sum(1 for layer in doc["Layers"] for c in layer["Candidates"] if "TimeMs" in c)
    precisions = {}
    for layer in doc["Layers"]:
        precisions[layer["Precision"]] = precisions.get(layer["Precision"], 0) + 1
    return {"layers": len(doc["Layers"]), "timed_candidates": timed, "precisions": precisions}


def run_plan(name, batch, plan):
    # Batch 1 is latency-bound: replayed as one CUDA graph, as the targets say.
    graph = ["--cuda-graph"] if batch == 1 else []
    p, _ = kiln("run", plan, "--shapes", run_bench.shapes_for(name, batch), "--no-data-transfers",
                "--json", "--warmup", "200", "--iterations", "10", "--duration", "1", *graph)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip()[-400:]}
    gpu = json.loads(p.stdout)["performance_summary"]["GPU Compute Time"]
    return {"median_ms": gpu[3]}


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")]
    cases = [a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--cases=")]
    rows = []
    for name, batch, mode in CASES:
        if only and name not in only[0]:
            continue
        if cases and f"{name}:{batch}:{mode}" not in cases[0]:
            continue
        plan = os.path.join(OUT_DIR, f"{name}_b{batch}_{mode}.kiln")
        cache = os.path.join(OUT_DIR, f"{name}_b{batch}_{mode}.cache.json")
        if os.path.exists(cache):
            os.remove(cache)
        row = {"model": name, "batch": batch, "mode": mode}
        row["cold"] = build(name, batch, mode, plan, cache)
        row["warm"] = build(name, batch, mode, plan, cache)
        row["inspect"] = inspect(plan, plan + ".inspect.json")
        row["kiln"] = run_plan(name, batch, plan)
        torch_mode = next(m for m in run_bench.MODES if m[0] == mode)
        row["torch_ms"] = run_bench.time_torch(name, batch, torch_mode)
        if "median_ms" in row["kiln"]:
            row["speed_ratio"] = row["torch_ms"] / row["kiln"]["median_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(OUT_DIR, "build_bench.json"), "w") as f:
            json.dump({"device": run_bench.torch.cuda.get_device_name(),
                       "date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
