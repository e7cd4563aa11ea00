#!/usr/bin/env python3
"""The benchmark zoo on one GPU (issue 22, item 1; docs/benchmarks.md, "The zoo").

For each selected entry (zoo_models.py): export the ONNX once (cached in --work), then in
one run: PyTorch eager FP16 at the GPU-bound batch and at batch 1 (CUDA events after
warm-up, median), optionally `torch.compile` (default mode) at the GPU-bound batch; Kiln
FP16 plans built cold at both shapes, `kiln run PLAN --no-data-transfers` (GPU compute
median), batch 1 with `--cuda-graph`; host-fallback layers; accuracy of Kiln's FP16
output against PyTorch FP32 (TF32 off) on the same input (.npy files fed to
`kiln run --load-inputs`, outputs read back with `--export-output`).

Rows go to OUT/zoo.jsonl as they are measured (first line: the run's info) and
OUT/zoo.md is rewritten after each row, so a call cut at its limit keeps what it measured.
A model whose export, build or run fails gives an error row; the run goes on.

Usage: zoo_bench.py --kiln KILN --work DIR --out DIR [--models LIST] [--compile]
                    [--budget S] [--cpu]
  --models: entry names and groups of zoo_models.GROUPS (all, torchscript, dynamo, cnn, vit, transformers,
            holdout, breadth (small text configurations: for --cpu), breadth_images, breadth_text)
  --cpu:    no GPU: exports, then Kiln's CPU backend at batch 1 (FP32) against PyTorch
            FP32 on the CPU: checks the export, import and input/output plumbing.
"""
import argparse
import gc
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_kiln  # noqa: E402
import zoo_models  # noqa: E402
import zoo_report  # noqa: E402

DEFAULT_COMPILE_RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                       "zoo_compile.json")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--work", required=True, help="cache of exports, inputs, plans")
    p.add_argument("--out", required=True, help="zoo.jsonl, zoo.md, zoo_compile.json")
    p.add_argument("--models", default="all")
    p.add_argument("--compile", action="store_true", help="also torch.compile (default mode)")
    p.add_argument("--compile-results", default=DEFAULT_COMPILE_RESULTS,
                   help="earlier torch.compile figures (JSON), shown beside the rows")
    p.add_argument("--budget", type=float, default=480,
                   help="start no new model after this many seconds")
    p.add_argument("--opt-level", type=int, default=2)
    p.add_argument("--batch", type=int, default=0,
                   help="override every selected model's GPU-bound batch")
    p.add_argument("--timing-ms", type=float, default=300, help="PyTorch timing per case")
    p.add_argument("--skip-kiln", action="store_true",
                   help="PyTorch only (e.g. a --compile call for models Kiln already ran)")
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="after timing, print the GPU-bound plan's time per op type and its "
                        "slowest layers (kiln run --profile; bench/profile_summary.py)")
    return p.parse_args()


# ---------------------------------------------------------------- PyTorch side


def time_ms(fn, device, timing_ms, warmup=3, min_runs=10, max_runs=200):
    """Median ms of fn() after warm-up: CUDA events per run on a GPU, wall clock on a CPU."""
    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        times, started = [], time.time()
        while len(times) < min_runs or ((time.time() - started) * 1e3 < timing_ms
                                        and len(times) < max_runs):
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) * 1e3)
                if len(times) >= 2:
                    break  # plumbing only
    times.sort()
    return times[len(times) // 2]


def first_output(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def reference(model, inputs, device):
    """PyTorch FP32 (TF32 off) first output on the inputs, as float64 numpy."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.inference_mode():
        out = first_output(model(*[t.to(device) for t in inputs.values()]))
    return out.double().cpu().numpy()


def eager_inputs(spec, inputs, device, half):
    args = []
    for t in inputs.values():
        t = t.to(device)
        if t.is_floating_point() and half:
            t = t.half()
        if spec.cnn and t.dim() == 4:
            t = t.to(memory_format=torch.channels_last)
        args.append(t)
    return args


def torch_side(spec, model, inputs_big, inputs_b1, device, args, row):
    """FP32 references, then FP16 eager (and torch.compile) timings; fills row."""
    model = model.to(device)
    refs = {"b1": reference(model, inputs_b1, device)}
    if row["batch"] == 1:
        refs["big"] = refs["b1"]
    elif refs["b1"].size * row["batch"] <= zoo_kiln.MAX_EXPORTED_VALUES:
        refs["big"] = reference(model, inputs_big, device)
    if device != "cuda":
        row["eager_b1_ms"] = time_ms(lambda: model(*inputs_b1.values()), device, 0)
        return refs
    torch.backends.cudnn.benchmark = True
    model = model.half()
    # timm's LeViT caches its attention biases per device in eval mode: the FP32
    # reference runs filled the cache with float32 tensors that .half() does not touch.
    for m in model.modules():
        if isinstance(getattr(m, "attention_bias_cache", None), dict):
            m.attention_bias_cache = {}
    if spec.cnn:
        model = model.to(memory_format=torch.channels_last)
    for key, inputs in (("eager_ms", inputs_big), ("eager_b1_ms", inputs_b1)):
        x = eager_inputs(spec, inputs, device, half=True)
        row[key] = time_ms(lambda: model(*x), device, args.timing_ms)
    # PyTorch's own FP16 error on the batch-1 input: the floor the model's FP16 arithmetic
    # sets, beside Kiln's (a cosine gate an FP16 eager run misses says so about the model).
    with torch.inference_mode():
        x = eager_inputs(spec, inputs_b1, device, half=True)
        half_out = first_output(model(*x)).double().cpu().numpy()
    row["eager_fp16_accuracy"] = dict(zoo_kiln.accuracy(half_out, refs["b1"]), batch=1)
    if args.compile:
        x = eager_inputs(spec, inputs_big, device, half=True)
        row.update(time_compiled(model, x, device, args.timing_ms))
    return refs


def time_compiled(model, x, device, timing_ms):
    """torch.compile (default mode): the first call's seconds (compilation), then ms."""
    compiled = torch.compile(model)
    started = time.time()
    with torch.inference_mode():
        compiled(*x)
    if device == "cuda":
        torch.cuda.synchronize()
    result = {"compile_s": round(time.time() - started, 1),
              "compile_ms": time_ms(lambda: compiled(*x), device, timing_ms),
              "compile_date": time.strftime("%Y-%m-%d")}
    torch._dynamo.reset()
    return result


# ---------------------------------------------------------------- one entry


def fingerprint(model):
    """A digest of the weights and buffers: a cached export is reused only for a model
    built the same way (same seed, calibration and library versions)."""
    import hashlib
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, t in model.state_dict().items():
            t = t.double()
            digest.update(f"{name}{tuple(t.shape)}{t.sum().item():.9e}{t.abs().sum().item():.9e}"
                          .encode())
    return digest.hexdigest()[:16]


def export_cached(entry, model, work, row):
    """The entry's ONNX file in WORK/onnx, exported unless an earlier run exported the
    same weights (the .done file, written last, holds their fingerprint)."""
    path = os.path.join(work, "onnx", entry.name + ".onnx")
    done = path + ".done"
    weights = fingerprint(model)
    if os.path.exists(done) and open(done).read().strip() == weights:
        row["export"] = "cached"
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    seconds = zoo_models.export(entry, model, path)
    with open(done, "w") as f:
        f.write(weights + "\n")
    row["export"] = f"{seconds:.1f} s, {zoo_models.onnx_size_mb(path):.0f} MB"
    return path


def print_profile(kiln, plan, shapes, files):
    """The plan's per-layer profile, summarized by bench/profile_summary.py."""
    import subprocess
    args = [kiln.binary, "run", plan, "--shapes", shapes, "--json", "--profile",
            "--no-data-transfers", "--warmup", "20", "--iterations", "20", "--duration", "0",
            "--load-inputs", ",".join(f"{n}:{f}" for n, f in files.items())]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    # The whole per-layer profile travels back too ($OUT of the device call), for the
    # layer-by-layer reading the summary leaves out.
    keep = os.environ.get("OUT")
    if keep:
        # '@' (a dynamo entry's suffix) is not a name the device tool brings back: '-'.
        name = os.path.basename(plan).replace(".kiln", "").replace("@", "-") + ".profile.json"
        with open(os.path.join(keep, name), "w") as f:
            f.write(p.stdout)
    summary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile_summary.py")
    s = subprocess.run([sys.executable, summary], input=p.stdout, capture_output=True, text=True)
    print(f"--- profile of {os.path.basename(plan)}\n{s.stdout}{s.stderr[-300:]}", flush=True)


def kiln_side(entry, onnx_path, files_big, files_b1, refs, kiln, work, row, profile=False):
    """Cold FP16 builds at both shapes, timed runs, accuracy from the read-back outputs
    (at batch 1 always; at the GPU-bound batch where its output is small enough)."""
    spec = entry.model
    cases = [("", row["batch"], files_big, "big")]
    if row["batch"] != 1:
        cases.append(("_b1", 1, files_b1, "b1"))
    for suffix, batch, files, ref_key in cases:
        shapes = zoo_models.shapes_arg(spec, batch)
        plan = os.path.join(work, "plans", f"{entry.name}_b{batch}.kiln")
        out_file = os.path.join(work, "outputs", f"{entry.name}_b{batch}.json")
        for d in (plan, out_file):
            os.makedirs(os.path.dirname(d), exist_ok=True)
        row["build" + suffix] = kiln.build(onnx_path, plan, shapes)
        if "error" in row["build" + suffix]:
            row["kiln" + suffix] = {"error": "build failed"}
            continue
        want = ref_key in refs
        # Batch 1 is latency-bound: replayed as one CUDA graph.
        graph = batch == 1 and kiln.backend == "cuda"
        row["kiln" + suffix] = kiln.run(plan, shapes, files, out_file if want else None, graph)
        if profile and suffix == "" and "error" not in row["kiln"]:
            print_profile(kiln, plan, shapes, files)
        if want and "error" not in row["kiln" + suffix]:
            got = zoo_kiln.read_output(out_file, spec.outputs[0])
            row["accuracy" + suffix] = dict(zoo_kiln.accuracy(got, refs[ref_key]), batch=batch)
            os.remove(out_file)
    checked = [row[k] for k in ("accuracy", "accuracy_b1") if "cosine" in row.get(k, {})]
    if checked:  # the table shows the worse of the two
        row["accuracy_worst"] = min(checked, key=lambda a: (a["cosine"] == a["cosine"], a["cosine"]))


def bench_entry(entry, args, kiln, device, peak_tflops):
    spec = entry.model
    batch = 1 if device != "cuda" else (args.batch or spec.batch)
    row = {"entry": entry.name, "model": spec.name, "exporter": entry.exporter, "batch": batch}
    stage = "build model"
    try:
        model = zoo_models.build(spec)
        stage = "export"
        onnx_path = export_cached(entry, model, args.work, row)
        stage = "inputs"
        inputs_big = zoo_models.make_inputs(spec, batch)
        inputs_b1 = zoo_models.make_inputs(spec, 1)
        inputs_dir = os.path.join(args.work, "inputs")
        files_big = zoo_kiln.save_inputs(inputs_big, inputs_dir, f"{spec.name}_b{batch}")
        files_b1 = zoo_kiln.save_inputs(inputs_b1, inputs_dir, f"{spec.name}_b1")
        stage = "pytorch"
        refs = torch_side(spec, model, inputs_big, inputs_b1, device, args, row)
        if "big" in refs:  # for bench/binary_ab.py's accuracy of each binary's plan
            zoo_kiln.save_reference(refs["big"], args.work, f"{spec.name}_b{batch}")
        del model
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        if args.skip_kiln:
            return row
        stage = "kiln"
        row["flops"] = kiln.inspect_flops(onnx_path, zoo_models.shapes_arg(spec, batch)).get("flops")
        kiln_side(entry, onnx_path, files_big, files_b1, refs, kiln, args.work, row, args.profile)
        kms = row.get("kiln", {}).get("median_ms")
        if kms and row.get("flops") and peak_tflops:
            row["mfu"] = row["flops"] / (kms / 1e3) / (peak_tflops * 1e12)
    except Exception as error:  # one model failing must not stop the zoo
        row.update(error=f"{type(error).__name__}: {str(error).strip()[:300]}", stage=stage)
    return row


# ---------------------------------------------------------------- the run


def gemm_peak_fp16():
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ms = time_ms(lambda: a @ b, "cuda", 100)
    return 2 * n ** 3 / (ms / 1e3) / 1e12


def load_compile_results(path, device_name):
    """Earlier torch.compile figures for this device: {model: {...}}."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.get("models", {}).items() if v.get("device") == device_name}


def save_compile_result(path, earlier, row, info):
    """Adds the row's figure to OUT/zoo_compile.json, which starts as a copy of the earlier
    results (--compile-results), so it can replace bench/results/zoo_compile.json."""
    doc = {"models": {}}
    for source in (path, earlier):
        if os.path.exists(source):
            with open(source) as f:
                doc = json.load(f)
            break
    doc["models"][row["model"]] = {
        "device": info["device"], "torch": info["torch"], "date": row["compile_date"],
        "batch": row["batch"], "compile_ms": row["compile_ms"], "eager_ms": row["eager_ms"],
        "first_call_s": row["compile_s"], "mode": "default"}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)


def main():
    args = parse_args()
    entries = zoo_models.select(args.models)
    device = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    kiln = zoo_kiln.Kiln(args.kiln, backend=device, opt_level=args.opt_level)
    os.makedirs(args.out, exist_ok=True)
    info = {"device": torch.cuda.get_device_name() if device == "cuda" else "CPU",
            "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
            "opt_level": kiln.opt_level, "models": [e.name for e in entries]}
    peak = gemm_peak_fp16() if device == "cuda" else 0
    info["fp16_gemm_peak_tflops"] = round(peak, 1)
    print(f"# zoo on {info['device']}, {info['date']}, torch {info['torch']}, "
          f"{len(entries)} entries, FP16 GEMM peak {peak:.0f} TFLOP/s", flush=True)
    compiled = load_compile_results(args.compile_results, info["device"])
    out_compile = os.path.join(args.out, "zoo_compile.json")
    jsonl = os.path.join(args.out, "zoo.jsonl")
    with open(jsonl, "w") as f:
        f.write(json.dumps({"info": info}) + "\n")
    rows, started = [], time.time()
    for entry in entries:
        if time.time() - started > args.budget:
            row = {"entry": entry.name, "model": entry.model.name, "exporter": entry.exporter,
                   "batch": entry.model.batch, "error": "skipped: over --budget", "stage": "-"}
        else:
            entry_started = time.time()
            row = bench_entry(entry, args, kiln, device, peak)
            row["seconds"] = round(time.time() - entry_started, 1)  # the entry's device time
        if row.get("compile_ms"):
            save_compile_result(out_compile, args.compile_results, row, info)
        elif (compiled.get(entry.model.name, {}).get("batch") == row["batch"]
              and not row.get("error")):
            row["compile_ms"] = compiled[entry.model.name]["compile_ms"]
            row["compile_date"] = compiled[entry.model.name]["date"]
        rows.append(row)
        print(zoo_report.line(row), flush=True)
        with open(jsonl, "a") as f:
            f.write(json.dumps(row) + "\n")
        with open(os.path.join(args.out, "zoo.md"), "w") as f:
            f.write(zoo_report.table(info, rows))
    print(zoo_report.table(info, rows), flush=True)


if __name__ == "__main__":
    main()
