#!/usr/bin/env python3
"""One Kiln layer alone against PyTorch on the same GPU (a bench probe, not a test).

Each case is one node in an ONNX file (ai.kiln FusedAttention; channels-last ai.kiln
FusedConv; LayerNormalization; ai.kiln AddLayerNorm, the residual add and LayerNorm of a
transformer block, with or without the sum as a second output),
built with `kiln build --fp16 --optimization-level 0` and run with `kiln run
--no-data-transfers --export-profile`: the layer's own GPU time (median; the casts of the
float32 graph inputs are layers of their own and left out) and the implementation the
layer chose. PyTorch runs the same operation in fp16 with CUDA events: SDPA on [B, H, S, D]
(its flash backend where it applies); conv2d channels-last with cudnn.benchmark; LayerNorm;
the residual add then LayerNorm.

Usage (device): python3 bench/layer_probe.py --kiln /tmp/kiln/bin/kiln [--cases a,b]
                [--attention-path auto|kiln|cudnn]  (pin the attention cases' implementation)
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Attention: name, batch, heads, seq, head size, layout ("packed": timm's [B, S, 3, H, D]
# QKV read through STRIDED views; "bshd": separate Q, K, V), BERT's additive padding mask.
ATTENTION = [
    ("attn_vit_b16", 64, 12, 197, 64, "packed", False),
    ("attn_deit_s", 128, 6, 197, 64, "packed", False),
    ("attn_bert_base", 128, 12, 128, 64, "bshd", True),
    ("attn_long_1024", 8, 12, 1024, 64, "bshd", False),
    ("attn_levit_like", 256, 4, 196, 32, "bshd", False),
]
# Channels-last convolutions: name, N, H, W, C, K, kernel, stride, groups, activation.
CONV = [
    ("dw7_convnext_s1", 128, 56, 56, 96, 96, 7, 1, 96, "none"),
    ("dw7_convnext_s3", 128, 14, 14, 384, 384, 7, 1, 384, "none"),
    ("dw3_effnet_112", 256, 112, 112, 32, 32, 3, 1, 32, "silu"),
    ("dw5_effnet_s2", 256, 56, 56, 144, 144, 5, 2, 144, "silu"),
    ("g24_regnet_b1", 256, 56, 56, 48, 48, 3, 1, 2, "relu"),
    ("g24_regnet_b2", 256, 28, 28, 120, 120, 3, 1, 5, "relu"),
    ("g24_regnet_b3", 256, 14, 14, 336, 336, 3, 1, 14, "relu"),
    ("g24_regnet_b4", 256, 7, 7, 888, 888, 3, 1, 37, "relu"),
]
# LayerNormalization over the last axis: name, rows shape, channels.
LAYER_NORM = [
    ("ln_convnext_s1", [128, 56, 56], 96),
    ("ln_convnext_s3", [128, 14, 14], 384),
    ("ln_bert_base", [128, 128], 768),
]
# ai.kiln AddLayerNorm (S = A + B, Y = LayerNorm(S)): name, rows shape, channels, outputs
# (1: Y, BERT's post-LN block; 2: Y and S, the pre-LN blocks of ViT and GPT-2).
ADD_LAYER_NORM = [
    ("addln_bert_base", [128, 128], 768, 1),
    ("addln_vit_b16", [64, 197], 768, 2),
]


def save(graph, path, initializers=()):
    graph.initializer.extend(initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.kiln", 1)])
    onnx.save(model, path)


def attention_model(b, h, s, d, layout, masked, path="auto"):
    if layout == "packed":
        e = h * d
        ins = [helper.make_tensor_value_info("qkv", TensorProto.FLOAT, [b, s, 3 * e])]
        views = {f"{n}_view": [i * e, b, h, s, d, s * 3 * e, d, 3 * e] for i, n in enumerate("qkv")}
        node = helper.make_node("FusedAttention", ["qkv"] * 3, ["y"], domain="ai.kiln",
                                scale=d ** -0.5, num_heads=h, qkv_layout="STRIDED",
                                output_layout="BSHD", merge_heads=1, path=path, **views)
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, s, e])
        return helper.make_graph([node], "attention", ins, [out])
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [b, s, h, d]) for n in "qkv"]
    names = ["q", "k", "v"]
    if masked:
        ins.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [b, 1, 1, s]))
        names.append("mask")
    node = helper.make_node("FusedAttention", names, ["y"], domain="ai.kiln", scale=d ** -0.5,
                            num_heads=h, qkv_layout="BSHD", output_layout="BSHD",
                            nan_to_zero=1 if masked else 0, path=path)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, s, h, d])
    return helper.make_graph([node], "attention", ins, [out])


def attention_inputs(rng, b, h, s, d, layout, masked):
    if layout == "packed":
        return {"qkv": rng.standard_normal((b, s, 3 * h * d), dtype=np.float32)}
    inputs = {n: rng.standard_normal((b, s, h, d), dtype=np.float32) for n in "qkv"}
    if masked:
        m = np.zeros((b, 1, 1, s), dtype=np.float32)
        m[:, :, :, s - s // 8:] = -10000.0  # the padded tail of each sequence
        inputs["mask"] = m
    return inputs


def conv_model(n, h, w, c, k, kernel, stride, groups, activation, rng):
    pad = kernel // 2
    ho, wo = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, h, w, c])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, ho, wo, k])
    wt = numpy_helper.from_array(
        (rng.standard_normal((k, kernel, kernel, c // groups)) * 0.1).astype(np.float32), "w")
    bt = numpy_helper.from_array(rng.standard_normal(k).astype(np.float32) * 0.1, "b")
    node = helper.make_node("FusedConv", ["x", "w", "b"], ["y"], domain="ai.kiln",
                            kiln_channels_last=1, group=groups, strides=[stride, stride],
                            pads=[pad] * 4, activation=activation)
    return helper.make_graph([node], "conv", [x], [y]), [wt, bt]


def layer_norm_model(rows, c, rng):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, rows + [c])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, rows + [c])
    scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "bias")
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1,
                            epsilon=1e-6)
    return helper.make_graph([node], "layer_norm", [x], [y]), [scale, bias]


def add_layer_norm_model(rows, c, outputs, rng):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, rows + [c])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, rows + [c])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, rows + [c])
            for n in ("y", "s")[:outputs]]
    gamma = numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "gamma")
    beta = numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "beta")
    node = helper.make_node("AddLayerNorm", ["a", "b", "gamma", "beta"],
                            [o.name for o in outs], domain="ai.kiln", epsilon=1e-6)
    return helper.make_graph([node], "add_layer_norm", [a, b], outs), [gamma, beta]


def torch_add_layer_norm(rows, c):
    import torch
    ln = torch.nn.LayerNorm(c, eps=1e-6).cuda().half()
    a = torch.randn(*rows, c, device="cuda", dtype=torch.float16)
    b = torch.randn(*rows, c, device="cuda", dtype=torch.float16)
    with torch.inference_mode():
        return cuda_ms(lambda: ln(a + b))


def torch_layer_norm(rows, c):
    import torch
    ln = torch.nn.LayerNorm(c, eps=1e-6).cuda().half()
    x = torch.randn(*rows, c, device="cuda", dtype=torch.float16)
    with torch.inference_mode():
        return cuda_ms(lambda: ln(x))


def kiln_layer(kiln, onnx_path, inputs, work):
    shapes = ",".join(f"{n}:{'x'.join(map(str, a.shape))}" for n, a in inputs.items())
    files = []
    for n, a in inputs.items():
        f = os.path.join(work, f"{n}.npy")
        np.save(f, a)
        files.append(f"{n}:{f}")
    plan, profile = onnx_path[:-5] + ".kiln", onnx_path[:-5] + ".profile.json"
    build = [kiln, "build", onnx_path, "-o", plan, "--backend", "cuda", "--fp16",
             "--optimization-level", "0", "--min-shapes", shapes, "--opt-shapes", shapes,
             "--max-shapes", shapes, "--quiet"]
    r = subprocess.run(build, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-300:]}
    run = [kiln, "run", plan, "--shapes", shapes, "--json", "--no-data-transfers",
           "--load-inputs", ",".join(files), "--warmup", "50", "--iterations", "20",
           "--export-profile", profile]
    r = subprocess.run(run, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-300:]}
    doc = json.loads(r.stdout)
    layers = [l for l in json.load(open(profile))[1:] if "Reformat" not in l["name"]
              and "Cast" not in l["name"]]
    main = max(layers, key=lambda l: l["medianMs"])
    impl = [l.get("implementation", "") for l in doc.get("layers", [])
            if l.get("op_type") in ("FusedAttention", "FusedConv", "LayerNormalization",
                                    "AddLayerNorm")]
    return {"ms": main["medianMs"], "impl": impl[0] if impl else ""}


def cuda_ms(fn):
    import torch
    for _ in range(20):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(7):
        start.record()
        for _ in range(20):
            fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 20)
    return sorted(times)[3]


def torch_attention(b, h, s, d, masked):
    import torch
    import torch.nn.functional as F
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    mask = torch.zeros(b, 1, 1, s, device="cuda", dtype=torch.float16) if masked else None
    return cuda_ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def torch_conv(n, h, w, c, k, kernel, stride, groups, activation):
    import torch
    torch.backends.cudnn.benchmark = True
    conv = torch.nn.Conv2d(c, k, kernel, stride, kernel // 2, groups=groups).cuda().half()
    conv = conv.to(memory_format=torch.channels_last)
    act = {"none": torch.nn.Identity(), "relu": torch.nn.ReLU(), "silu": torch.nn.SiLU()}[activation]
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    with torch.inference_mode():
        return cuda_ms(lambda: act(conv(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--work", default="/tmp/kiln-layer-probe")
    ap.add_argument("--cases", default="", help="comma-separated names (default: all)")
    ap.add_argument("--attention-path", default="auto",
                    help="the FusedAttention nodes' path: auto (race), kiln or cudnn")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(7)
    wanted = set(filter(None, args.cases.split(",")))
    print("| case | shape | Kiln layer ms | PyTorch ms | PyTorch / Kiln | Kiln implementation |")
    print("|---|---|---|---|---|---|")
    for case in ATTENTION + CONV + LAYER_NORM + ADD_LAYER_NORM:
        name = case[0]
        if wanted and name not in wanted:
            continue
        path = os.path.join(args.work, f"{name}.onnx")
        if case in ATTENTION:
            _, b, h, s, d, layout, masked = case
            save(attention_model(b, h, s, d, layout, masked, args.attention_path), path)
            k = kiln_layer(args.kiln, path, attention_inputs(rng, b, h, s, d, layout, masked),
                           args.work)
            t = torch_attention(b, h, s, d, masked)
            shape = f"B{b} H{h} S{s} D{d}"
        elif case in ADD_LAYER_NORM:
            _, rows, c, outputs = case
            graph, inits = add_layer_norm_model(rows, c, outputs, rng)
            save(graph, path, inits)
            k = kiln_layer(args.kiln, path,
                           {n: rng.standard_normal(rows + [c], dtype=np.float32)
                            for n in ("a", "b")}, args.work)
            t = torch_add_layer_norm(rows, c)
            shape = "x".join(map(str, rows + [c])) + f", {outputs} output(s)"
        elif case in LAYER_NORM:
            _, rows, c = case
            graph, inits = layer_norm_model(rows, c, rng)
            save(graph, path, inits)
            k = kiln_layer(args.kiln, path,
                           {"x": rng.standard_normal(rows + [c], dtype=np.float32)}, args.work)
            t = torch_layer_norm(rows, c)
            shape = "x".join(map(str, rows + [c]))
        else:
            _, n, h, w, c, kk, kernel, stride, groups, act = case
            graph, inits = conv_model(n, h, w, c, kk, kernel, stride, groups, act, rng)
            save(graph, path, inits)
            k = kiln_layer(args.kiln, path,
                           {"x": rng.standard_normal((n, h, w, c), dtype=np.float32)}, args.work)
            t = torch_conv(n, h, w, c, kk, kernel, stride, groups, act)
            shape = f"{n}x{h}x{w}x{c} k{kernel} s{stride} g{groups}"
        if "error" in k:
            print(f"| {name} | {shape} | error: {k['error']} | {t:.4f} | | |")
        else:
            print(f"| {name} | {shape} | {k['ms']:.4f} | {t:.4f} | {t / k['ms']:.2f}x | "
                  f"{k['impl'][:400]} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
