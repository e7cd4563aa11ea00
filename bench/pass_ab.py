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
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_kiln  # noqa: E402  (the zoo's kiln build and run, as the zoo calls them)
import zoo_models  # noqa: E402  (the entries' inputs and GPU-bound batches)


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
    for entry, onnx, shapes, inputs in zoo_models.exported_entries(a.work, a.models):
        spec = entry.model
        plans = {"A": ([], os.path.join(a.work, "ab", entry.name + "_A.kiln"))}
        for name in a.disable.split(","):
            plans[name] = ([name], os.path.join(a.work, "ab", f"{entry.name}_no_{name}.kiln"))
        os.makedirs(os.path.join(a.work, "ab"), exist_ok=True)
        kiln = zoo_kiln.Kiln(a.kiln, opt_level=a.opt_level, build_timeout=300, run_timeout=120)
        layers, times, error = {}, {k: [] for k in plans}, None
        for key, (disabled, plan) in plans.items():
            built = kiln.build(onnx, plan, shapes, disabled_passes=disabled)
            error = error or built.get("error")
            layers[key] = built.get("layers")
        for _ in range(a.rounds if not error else 0):
            for key, (_, plan) in plans.items():
                ran = kiln.run(plan, shapes, inputs)
                error = error or ran.get("error")
                times[key].append(ran.get("median_ms"))
        if error:
            print(f"{entry.name}: error: {error}", flush=True)
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
