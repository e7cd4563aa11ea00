#!/usr/bin/env python3
"""One plan, several settings of an environment variable that a kernel reads at run time
(a temporary probe while a kernel path is chosen): each zoo model's FP16 plan is built once
as the zoo builds it, then timed with the variable at each value in turn, rounds of all
values alternating, in the same call (`kiln run --no-data-transfers`, GPU compute median).

Usage (on the device, after a zoo call in the same warm session, which left the exports in
WORK/onnx and the inputs in WORK/inputs):
  env_ab.py --kiln KILN --work /tmp/kiln-zoo --models volo_d1_224@dynamo,swin_t \
            --variable KILN_PROBE_X --values ",0,late" [--rounds 3] [--out DIR]
An empty value leaves the variable unset. Prints one line per model (each value's median
ms and its ratio to the first value's) and appends the rows to DIR/env_ab.jsonl.
--at-build: the variable is read while the plan is built (a pass's probe): one plan per
value, each built with the variable at that value, then timed alternately as above.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_kiln  # noqa: E402  (the zoo's kiln build and run, as the zoo calls them)
import zoo_models  # noqa: E402  (the entries' inputs and GPU-bound batches)


def set_variable(name, value):
    """Sets `name` to `value` in this process's environment (the kiln runs inherit it);
    an empty value unsets it."""
    if value:
        os.environ[name] = value
    else:
        os.environ.pop(name, None)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--variable", required=True)
    p.add_argument("--values", required=True, help="comma-separated; empty: unset")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--opt-level", type=int, default=2)
    p.add_argument("--out", default=".")
    p.add_argument("--at-build", action="store_true",
                   help="one plan per value, built with the variable set (a pass's probe)")
    a = p.parse_args()
    values = a.values.split(",")
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(os.path.join(a.work, "ab"), exist_ok=True)
    log = open(os.path.join(a.out, "env_ab.jsonl"), "a")
    kiln = zoo_kiln.Kiln(a.kiln, opt_level=a.opt_level, build_timeout=300, run_timeout=120)
    for entry, onnx, shapes, inputs in zoo_models.exported_entries(a.work, a.models):
        spec = entry.model
        stem = os.path.join(a.work, "ab", entry.name.replace("@", "-") + "_env")
        plans = {v: stem + (f"_{i}" if a.at_build else "") + ".kiln" for i, v in enumerate(values)}
        error, layers = None, {}
        for v in values if a.at_build else values[:1]:
            set_variable(a.variable, v if a.at_build else "")
            built = kiln.build(onnx, plans[v], shapes)
            error = error or built.get("error")
            layers[v] = built.get("layers")
        times = {v: [] for v in values}
        for _ in range(a.rounds if not error else 0):
            for v in values:
                set_variable(a.variable, v)
                ran = kiln.run(plans[v], shapes, inputs)
                error = error or ran.get("error")
                times[v].append(ran.get("median_ms"))
        os.environ.pop(a.variable, None)
        if error:
            print(f"{entry.name}: error: {error}", flush=True)
            continue
        medians = {v: statistics.median(times[v]) for v in values}
        first = medians[values[0]]
        log.write(json.dumps({"model": entry.name, "batch": spec.batch, "variable": a.variable,
                              "medians_ms": medians, "runs_ms": times,
                              "at_build": a.at_build,
                              "layers": layers if a.at_build else layers[values[0]]}) + "\n")
        cells = "  ".join(f"{v or 'unset'} {medians[v]:.3f} ms ({medians[v] / first:.3f})"
                          for v in values)
        if a.at_build:
            cells += "  layers " + " / ".join(str(layers[v]) for v in values)
        print(f"{entry.name:28s} b{spec.batch:<4d} {cells}", flush=True)


if __name__ == "__main__":
    main()
