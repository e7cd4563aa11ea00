#!/usr/bin/env python3
"""Two Kiln binaries on the same models in one device call: each builds its own plan of a
zoo export (the same flags, cold: no timing cache), then the plans are timed alternately
(`kiln run --no-data-transfers`, GPU compute median; rounds of OLD, NEW, OLD, NEW, ...), so
a refactoring's before/after (issue 23's acceptance) or a change's effect is one table.

Usage (on the device, after `bench/zoo_device.sh MODELS --skip-kiln` in the same warm
session, which left the exports in WORK/onnx and the inputs in WORK/inputs):
  binary_ab.py --old KILN_BEFORE --new KILN_AFTER --work /tmp/kiln-zoo \
               --cases resnet50:fp16,bert_base_sdpa:fp16,resnet50:int8@64 [--rounds 3] [--out DIR]
               [--backend cpu]  (float32 CPU plans at batch 1: the tool checked off the GPU)
A case is MODEL:MODE[@BATCH]: fp16 builds with --fp16, int8 with --int8 --fp16 and a
calibration cache that the NEW binary makes once (`kiln calibrate --backend cuda`, 32
random N(0, 1) samples; both builds read the same cache). BATCH defaults to the zoo's
GPU-bound batch. Prints one line per case (each binary's median and runs, NEW/OLD) and
appends binary_ab.jsonl to --out. Where the zoo run kept PyTorch's FP32 output of the same
input (WORK/references, zoo_bench.py saves it for the GPU-bound batch), each binary's plan
output is compared with it too (cosine, max abs / rel, as the zoo reports them).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_kiln  # noqa: E402  (the zoo's kiln build and run, as the zoo calls them)
import zoo_models  # noqa: E402  (the entries' inputs and GPU-bound batches)


def calibration_cache(kiln, onnx, work, name):
    """A calibration cache of 32 random samples made by `kiln` (CNN inputs only)."""
    data = os.path.join(work, "ab", f"calib_{name}")
    cache = os.path.join(work, "ab", f"{name}.cache")
    if os.path.exists(cache):
        return cache
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "samples.npy"),
            np.random.default_rng(7).standard_normal((32, 3, 224, 224), dtype=np.float32))
    p = subprocess.run([kiln, "calibrate", onnx, "--data", data, "-o", cache, "--backend", "cuda",
                        "--quiet"], capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        raise RuntimeError(f"calibration failed: {p.stderr.strip()[-300:]}")
    return cache


def build(binary, onnx, plan, shapes, mode, cache, timeout, backend="cuda"):
    """A cold build of `mode` by `binary`: (build seconds, layers) or raises. The CPU
    backend builds float32 (its only precision)."""
    if os.path.exists(plan):
        os.remove(plan)
    fixed = ["--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes]
    precision = ["--fp16"] if backend == "cuda" else []
    args = [binary, "build", onnx, "-o", plan, "--backend", backend, *precision, *fixed,
            "--optimization-level", "2", "--json", "--quiet"]
    if mode == "int8":
        args += ["--int8", "--calib-cache", cache]
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{os.path.basename(binary)} build failed: "
                           f"{(p.stderr or p.stdout).strip()[-300:]}")
    summary = json.loads(p.stdout)
    return summary.get("build_seconds"), summary.get("layers")


def cosines(row):
    """'  cosine old X new Y' against PyTorch FP32, or '' without a reference."""
    text = ""
    for key in ("old", "new"):
        acc = row.get(f"{key}_accuracy")
        if acc is not None:
            text += f" {key} {acc['cosine']:.6f}" if "cosine" in acc else f" {key} ({acc.get('error')})"
    return f"  cosine{text}" if text else ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build-timeout", type=int, default=240)
    p.add_argument("--out", default=".")
    p.add_argument("--backend", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: float32 plans on the CPU backend (checks the tool off the GPU)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(os.path.join(a.work, "ab"), exist_ok=True)
    log = open(os.path.join(a.out, "binary_ab.jsonl"), "a")
    binaries = {"old": a.old, "new": a.new}
    for case in a.cases.split(","):
        name, _, rest = case.partition(":")
        mode, _, batch = rest.partition("@")
        entries = zoo_models.select(name)
        if not entries or mode not in ("fp16", "int8"):
            print(f"{case}: unknown model or mode (fp16, int8)", flush=True)
            continue
        spec = entries[0].model
        batch = int(batch) if batch else (spec.batch if a.backend == "cuda" else 1)
        onnx = os.path.join(a.work, "onnx", entries[0].name + ".onnx")
        inputs = {i.name: os.path.join(a.work, "inputs", f"{spec.name}_b{batch}_{i.name}.npy")
                  for i in spec.inputs}
        missing = [f for f in [onnx, *inputs.values()] if not os.path.exists(f)]
        if missing and mode == "int8" and os.path.exists(onnx):  # inputs at another batch
            inputs = {}
            for i in spec.inputs:
                inputs[i.name] = os.path.join(a.work, "ab", f"{spec.name}_b{batch}_{i.name}.npy")
                np.save(inputs[i.name], np.random.default_rng(8).standard_normal(
                    (batch,) + tuple(i.shape), dtype=np.float32))
            missing = []
        if missing:
            print(f"{case}: missing {missing[0]} (run the zoo with --skip-kiln first)", flush=True)
            continue
        shapes = zoo_models.shapes_arg(spec, batch)
        row = {"case": case, "model": entries[0].name, "mode": mode, "batch": batch}
        try:
            cache = calibration_cache(a.new, onnx, a.work, entries[0].name) if mode == "int8" else ""
            plans = {}
            for key, binary in binaries.items():
                plans[key] = os.path.join(a.work, "ab", f"{entries[0].name}_{mode}_b{batch}_{key}.kiln")
                seconds, layers = build(binary, onnx, plans[key], shapes, mode, cache,
                                        a.build_timeout, a.backend)
                row[f"{key}_build_s"], row[f"{key}_layers"] = seconds, layers
            runs = {key: [] for key in binaries}
            for _ in range(a.rounds):
                for key, binary in binaries.items():
                    ran = zoo_kiln.Kiln(binary, a.backend, run_timeout=120).run(
                        plans[key], shapes, inputs)
                    if ran.get("error"):
                        raise RuntimeError(f"{key} run failed: {ran['error']}")
                    runs[key].append(ran["median_ms"])
                    row[f"{key}_fallbacks"] = ran.get("fallbacks")
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["error"] = str(e)
            print(f"{case}: {e}", flush=True)
            log.write(json.dumps(row) + "\n")
            continue
        reference = zoo_kiln.reference_path(a.work, f"{spec.name}_b{batch}")
        if mode == "fp16" and os.path.exists(reference):
            expected = np.load(reference)
            for key, binary in binaries.items():
                out_file = os.path.join(a.work, "ab", f"{entries[0].name}_{key}_output.json")
                ran = zoo_kiln.Kiln(binary, a.backend, run_timeout=120).run(
                    plans[key], shapes, inputs, out_file)
                if ran.get("error"):
                    row[f"{key}_accuracy"] = {"error": ran["error"]}
                    continue
                got = zoo_kiln.read_output(out_file, spec.outputs[0])
                row[f"{key}_accuracy"] = zoo_kiln.accuracy(got, expected)
                os.remove(out_file)
        for key in binaries:
            row[f"{key}_runs"] = runs[key]
            row[f"{key}_ms"] = statistics.median(runs[key])
        row["new_over_old"] = row["new_ms"] / row["old_ms"]
        log.write(json.dumps(row) + "\n")
        log.flush()
        print(f"{case:28s} old {row['old_ms']:.3f} ms {runs['old']} ({row['old_layers']} layers, "
              f"build {row['old_build_s']} s)  new {row['new_ms']:.3f} ms {runs['new']} "
              f"({row['new_layers']} layers, build {row['new_build_s']} s)  "
              f"new/old {row['new_over_old']:.3f}{cosines(row)}", flush=True)


if __name__ == "__main__":
    main()
