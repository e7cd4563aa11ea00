#!/usr/bin/env python3
"""Kiln vs PyTorch eager on one GPU, in one run (see docs/benchmarks.md).

For each model, batch and precision: PyTorch eager (inference mode, channels-last
for CNNs, cudnn.benchmark on, .half() for FP16, TF32 set to match) timed with CUDA
events after warm-up (median of N), and `kiln run --no-data-transfers` (GPU compute
median, also from CUDA events). Batch 1 is also timed with Kiln's --cuda-graph.
MFU is model FLOPs (from `kiln inspect`) over time, against a measured GEMM peak.

Usage: run_bench.py KILN MODEL_DIR OUT_DIR [--quick]
"""
import json
import os
import subprocess
import sys
import time

import torch

KILN, MODEL_DIR, OUT_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
QUICK = "--quick" in sys.argv
ONLY = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--models=")]

MODELS = {
    "resnet50": {"big": 256, "cnn": True},
    "mobilenet_v2": {"big": 256, "cnn": True},
    "bert_base": {"big": 128, "cnn": False},
    "vit_b_16": {"big": 256, "cnn": False},
}
MODES = [("fp32", False), ("tf32", True), ("fp16", True)]


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def gemm_peak(dtype, tf32):
    set_tf32(tf32)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return 2 * n ** 3 / (times[len(times) // 2] / 1e3) / 1e12


def torch_model(name):
    if name == "bert_base":
        from transformers import BertConfig, BertModel
        config = BertConfig()
        model = BertModel(config)
        try:
            model.set_attn_implementation("eager")
        except Exception:
            pass
        return model
    import torchvision
    return getattr(torchvision.models, name)(weights=None)


def time_torch(name, batch, mode):
    set_tf32(mode[1])
    torch.backends.cudnn.benchmark = True
    model = torch_model(name).cuda().eval()
    half = mode[0] == "fp16"
    if half:
        model = model.half()
    if MODELS[name]["cnn"]:
        model = model.to(memory_format=torch.channels_last)
    with torch.inference_mode():
        if name == "bert_base":
            ids = torch.randint(0, 30522, (batch, 128), device="cuda")
            mask = torch.ones(batch, 128, dtype=torch.int64, device="cuda")
            run = lambda: model(input_ids=ids, attention_mask=mask)
        else:
            x = torch.randn(batch, 3, 224, 224, device="cuda")
            if half:
                x = x.half()
            if MODELS[name]["cnn"]:
                x = x.to(memory_format=torch.channels_last)
            run = lambda: model(x)
        for _ in range(10):
            run()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(10 if batch > 1 else 50):
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    times.sort()
    del model
    torch.cuda.empty_cache()
    return times[len(times) // 2]


def shapes_for(name, batch):
    if name == "bert_base":
        return f"input_ids:{batch}x128,attention_mask:{batch}x128"
    return f"input:{batch}x3x224x224"


def run_kiln(name, batch, mode, graph):
    cmd = [KILN, "run", os.path.join(MODEL_DIR, name + ".onnx"), "--shapes", shapes_for(name, batch),
           "--no-data-transfers", "--json", "--warmup", "200", "--iterations", "10",
           "--duration", "0.5" if QUICK else "1"]
    if mode[0] == "fp32":
        cmd.append("--no-tf32")
    if mode[0] == "fp16":
        cmd.append("--fp16")
    if graph:
        cmd.append("--cuda-graph")
    started = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or p.stdout.strip())[-400:]}
    j = json.loads(p.stdout)
    gpu = j["performance_summary"]["GPU Compute Time"]
    return {"median_ms": gpu[3], "mean_ms": gpu[2], "enqueue_ms": j["performance_summary"]["Enqueue Time"][2],
            "fallbacks": j["host_fallback_layers"], "round_trips": j["host_round_trip_layers"],
            "activation_mb": j["memory"]["activation_bytes"] / 2**20, "wall_s": time.time() - started}


def flops(name, batch):
    p = subprocess.run([KILN, "inspect", os.path.join(MODEL_DIR, name + ".onnx"), "--shapes",
                        shapes_for(name, batch), "--json"], capture_output=True, text=True)
    try:
        return json.loads(p.stdout)["flops"]
    except Exception:
        return 0


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d")}
    peaks = {"fp32": gemm_peak(torch.float32, False), "tf32": gemm_peak(torch.float32, True),
             "fp16": gemm_peak(torch.float16, False)}
    print(f"# {info['device']}, torch {info['torch']}, GEMM peak TFLOP/s: "
          + ", ".join(f"{k} {v:.1f}" for k, v in peaks.items()), flush=True)
    rows = []
    models = ONLY or (["resnet50", "bert_base"] if QUICK else list(MODELS))
    for name in models:
        if not os.path.exists(os.path.join(MODEL_DIR, name + ".onnx")):
            print(f"{name}: model missing, skipped", flush=True)
            continue
        for batch in (1, MODELS[name]["big"]):
            f = flops(name, batch)
            for mode in MODES:
                t = time_torch(name, batch, mode)
                k = run_kiln(name, batch, mode, graph=False)
                g = run_kiln(name, batch, mode, graph=True) if batch == 1 else {}
                row = {"model": name, "batch": batch, "mode": mode[0], "torch_ms": t, "kiln": k,
                       "kiln_graph": g, "flops": f}
                if "median_ms" in k:
                    row["ratio"] = t / k["median_ms"]  # > 1: Kiln faster
                    row["kiln_qps"] = batch * 1000 / k["median_ms"]
                    row["mfu"] = f / (k["median_ms"] / 1e3) / (peaks[mode[0]] * 1e12) if f else 0
                rows.append(row)
                kms = k.get("median_ms")
                gms = g.get("median_ms") if g else None
                print(f"{name:13s} b{batch:<4d} {mode[0]}: torch {t:8.3f} ms | kiln "
                      + (f"{kms:8.3f} ms ({t / kms:5.2f}x, MFU {row['mfu'] * 100:4.1f}%)" if kms else f"ERROR {k.get('error')}")
                      + (f" | graph {gms:.3f} ms" if gms else (f" | graph ERROR {g.get('error')}" if g else ""))
                      + (f" | fallbacks {k['fallbacks']}" if kms and k["fallbacks"] else ""), flush=True)
    with open(os.path.join(OUT_DIR, "bench.json"), "w") as fh:
        json.dump({"info": info, "gemm_peak_tflops": peaks, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
