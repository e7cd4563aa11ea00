#!/usr/bin/env python3
"""What one graph pass is worth, per zoo model: the FP16 plan built as the zoo builds it
(A) and again with `--disable-pass NAME` (B, one plan per named pass), timed alternately
in the same call (`kiln run --no-data-transfers`, GPU compute median, rounds of A, B, ...).

Usage (on the device, after a zoo call in the same warm session, which left the exports in
WORK/onnx and the inputs in WORK/inputs):
  pass_ab.py --kiln KILN --work /tmp/kiln-zoo --models bert_base_sdpa,clip_vit_b32_vision \
             --disable merge_parallel_matmuls,patch_conv_as_matmul [--rounds 3] [--out DIR]
Prints one line per model and pass (A ms, B ms, B/A, layers of each) and writes
pass_ab.jsonl to --out.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_kiln  # noqa: E402  (the zoo's timing arguments)
import zoo_models  # noqa: E402  (the entries' inputs and GPU-bound batches)


def kiln(binary, args, timeout):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1][:300])
    return p.stdout


def build(binary, onnx, plan, shapes, opt_level, disabled):
    args = ["build", onnx, "-o", plan, "--backend", "cuda", "--fp16",
            "--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes,
            "--optimization-level", str(opt_level), "--json", "--quiet"]
    for name in disabled:
        args += ["--disable-pass", name]
    summary = json.loads(kiln(binary, args, 300))
    return summary.get("layers")


def gpu_ms(binary, plan, shapes, inputs):
    args = ["run", plan, "--shapes", shapes, "--json", "--no-data-transfers", *zoo_kiln.RUN_TIMING]
    if inputs:
        args += ["--load-inputs", ",".join(f"{n}:{f}" for n, f in inputs.items())]
    out = kiln(binary, args, 120)
    return json.loads(out)["performance_summary"]["GPU Compute Time"][3]  # the median


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--disable", required=True, help="comma-separated pass names, one B each")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--opt-level", type=int, default=2)
    p.add_argument("--out", default=".")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "pass_ab.jsonl"), "a")
    for entry in zoo_models.select(a.models):
        spec = entry.model
        onnx = os.path.join(a.work, "onnx", entry.name + ".onnx")
        if not os.path.exists(onnx):
            print(f"{entry.name}: no export in {a.work}/onnx (run the zoo first)", flush=True)
            continue
        shapes = zoo_models.shapes_arg(spec, spec.batch)
        inputs = {}
        for i in spec.inputs:  # the zoo's saved inputs at the GPU-bound batch, when present
            found = glob.glob(os.path.join(a.work, "inputs", f"{spec.name}_b{spec.batch}_{i.name}.npy"))
            if found:
                inputs[i.name] = found[0]
        plans = {"A": ([], os.path.join(a.work, "ab", entry.name + "_A.kiln"))}
        for name in a.disable.split(","):
            plans[name] = ([name], os.path.join(a.work, "ab", f"{entry.name}_no_{name}.kiln"))
        os.makedirs(os.path.join(a.work, "ab"), exist_ok=True)
        layers, times = {}, {k: [] for k in plans}
        try:
            for key, (disabled, plan) in plans.items():
                layers[key] = build(a.kiln, onnx, plan, shapes, a.opt_level, disabled)
            for _ in range(a.rounds):
                for key, (_, plan) in plans.items():
                    times[key].append(gpu_ms(a.kiln, plan, shapes, inputs))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            print(f"{entry.name}: error: {e}", flush=True)
            continue
        base = statistics.median(times["A"])
        for key in plans:
            if key == "A":
                continue
            ms = statistics.median(times[key])
            row = {"model": entry.name, "batch": spec.batch, "pass": key, "with_ms": base,
                   "without_ms": ms, "with_layers": layers["A"], "without_layers": layers[key],
                   "rounds": a.rounds, "with_runs": times["A"], "without_runs": times[key]}
            log.write(json.dumps(row) + "\n")
            print(f"{entry.name:28s} b{spec.batch:<4d} {key:26s} with {base:.3f} ms "
                  f"({layers['A']} layers)  without {ms:.3f} ms ({layers[key]} layers)  "
                  f"pass saves {ms - base:+.3f} ms ({(ms / base - 1) * 100:+.1f}%)", flush=True)


if __name__ == "__main__":
    main()
