#!/usr/bin/env python3
"""How much of a zoo model's FP16 error is the model's own (a bench probe, CPU, no Kiln).

Runs the zoo's model (bench/zoo_models.py: the same seeded random weights and calibrated
BatchNorm statistics) in FP32 on the CPU and again with chosen tensors rounded to FP16,
and prints the cosine of each against the pure FP32 output:
  weights only          every Conv and Linear weight rounded, arithmetic and activations FP32
  activations only      every leaf module's output rounded, weights FP32
  both                  what any FP16 engine stores (its arithmetic aside)
  both, but STAGE       the same with one top-level stage (and its weights) left in FP32
A model whose "weights only" cosine is below a target cannot meet it with 16-bit weights,
whatever the engine computes in.

Usage: python3 bench/fp16_sensitivity.py MODEL [--batch 4] [--stages]
"""
import argparse
import copy
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_models  # noqa: E402


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float((a @ b) / (a.norm() * b.norm()))


def rounded(t):
    return t.half().float()


def is_leaf(module):
    return len(list(module.children())) == 0


def run(model, x, weights, activations, keep=""):
    """The model's output with weights and/or leaf outputs rounded to FP16, except under
    the module prefix `keep`."""
    m = copy.deepcopy(model)
    for name, module in m.named_modules():
        if keep and (name == keep or name.startswith(keep + ".")):
            continue
        if weights and isinstance(module, (nn.Conv2d, nn.Linear)):
            module.weight.data = rounded(module.weight.data)
        if activations and is_leaf(module):
            module.register_forward_hook(
                lambda mod, inputs, out: rounded(out) if isinstance(out, torch.Tensor) else out)
    with torch.no_grad():
        return m(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a zoo entry with one image input (e.g. resnet50)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--stages", action="store_true", help="also leave each stage in FP32")
    args = ap.parse_args()
    entry = zoo_models.BY_NAME.get(args.model)  # the zoo, holdout and breadth entries
    if entry is None:
        sys.exit(f"fp16_sensitivity: no zoo entry '{args.model}'")
    model = zoo_models.build(entry.model)
    torch.manual_seed(0)
    x = torch.randn(args.batch, 3, 224, 224)
    with torch.no_grad():
        reference = model(x)
    print(f"| {args.model} (batch {args.batch}) | cosine against FP32 |")
    print("|---|---|")
    for label, w, a in (("weights only", True, False), ("activations only", False, True),
                        ("both", True, True)):
        print(f"| {label} | {cosine(run(model, x, w, a), reference):.6f} |")
    if args.stages:
        stages = sorted({n.split(".")[0] for n, _ in model.named_children()})
        for stage in stages:
            c = cosine(run(model, x, True, True, keep=stage), reference)
            print(f"| both, but {stage} | {c:.6f} |")


if __name__ == "__main__":
    main()
