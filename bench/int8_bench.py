#!/usr/bin/env python3
"""INT8 on the device (issue 8; docs/benchmarks.md, "INT8 (issue 8): how it is measured").

ResNet-50 (bench/export_models.py, random weights):
  1. a calibration set of N random-normal samples [3, 224, 224] (fixed seed), then
     `kiln calibrate --method entropy` on the CPU reference (wall time printed);
  2. `kiln build --backend cuda --int8 --calib-cache C --fp16` at batch 256 (min = opt =
     max) and the plain `--fp16` plan (or --fp16-plan=PATH: build_bench's, same run);
     `kiln run PLAN --no-data-transfers` (GPU compute median) for both and PyTorch eager
     FP16 channels-last (run_bench.time_torch) in the same run: img/s, the ratios, and
     img/s against TensorRT INT8's 88.5-91.8k img/s (MLPerf, one H100 SXM, batch 2048);
  3. top-1 agreement of the CUDA INT8 plan with FP32 on the calibration samples:
     `kiln compare INT8PLAN MODEL.onnx --data CALIB --batch N` (the plan on CUDA, at
     batch N, against the FP32 CPU reference), and independently the plan at its own
     batch (the samples tiled to 256) through `kiln run --export-output` against ONNX
     Runtime FP32; a CPU INT8 plan only if both CUDA paths fail (said in the output).
ONNX Runtime QDQ MobileNetV2 (torchvision, random weights, opset 17, dynamic batch):
  4. quantize_static (QDQ, per-channel, int8 activations and weights, 16 random
     calibration inputs), ONNX Runtime CPU output on 8 fresh inputs as the reference;
     `kiln run QDQ.onnx` directly and as a `kiln build --int8` plan, CUDA and CPU: max
     abs error in output quantization steps, relative to the logits' range, top-1.
Each step catches its failure (one line) and the rest go on; subprocess timeouts keep
the whole run inside --budget seconds (default 220). A table at the end, and
OUT_DIR/int8_bench.json.

Usage: int8_bench.py KILN MODEL_DIR OUT_DIR [--fp16-plan=PLAN] [--samples=32]
                     [--batch=256] [--budget=220] [--calib-budget=60] [--work=DIR]
                     [--skip=throughput,accuracy,qdq,fp16-context] [--dry-cpu]
                     [--model=ONNX] [--qdq-model=FLOAT_ONNX] [--int8-flags=A,B,...]
  --int8-flags: more flags of the INT8 build, comma-separated, e.g.
  --int8-flags=--layer-precisions,/conv1/Conv:fp16,--precision-constraints,obey
  --fp16-plan: build_bench's FP16 plan of this device call (used only if its
  build_bench.json records it); --qdq-model: a float model to quantize instead of the
  MobileNetV2 export; --model (with --dry-cpu): another model for the CPU check.
  --dry-cpu: no GPU, no torch: the CPU backend on tests/data/quant/small_cnn.onnx (16x16
  inputs, 8 samples, batch 16) and the QDQ path on small_cnn, to check the command lines
  and the parsing; CUDA-only steps are skipped or fail with their one-line error.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import int8_bench_summary
from int8_bench_summary import TARGETS, TRT_INT8_IMG_S

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SEED = 20261124


def option(name, default):
    for a in sys.argv:
        if a.startswith("--" + name + "="):
            return a.split("=", 1)[1]
    return default


DRY = "--dry-cpu" in sys.argv
# Extra flags of the INT8 build, comma-separated (e.g. a precision rule for the stem).
INT8_FLAGS = list(filter(None, option("int8-flags", "").split(",")))
SKIP = set(filter(None, option("skip", "").split(",")))  # throughput, accuracy, qdq, fp16-context
START = time.time()
BUDGET = float(option("budget", "220"))


def remaining(reserve=0.0):
    return BUDGET - (time.time() - START) - reserve


def one_line(text, limit=300):
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    # kiln prints its error last ("kiln build: ..."); keep that line.
    line = lines[-1] if lines else ""
    return line[:limit]


class StepError(Exception):
    pass


def sh(cmd, timeout, reserve=0.0, env=None):
    """Runs cmd; returns (CompletedProcess, wall seconds). Timeouts are capped by the budget."""
    limit = min(timeout, remaining(reserve))
    if limit < 2:
        raise StepError(f"skipped: time budget ({BUDGET:.0f} s) spent")
    started = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        tail = " | ".join(err.strip().splitlines()[-3:])
        raise StepError(f"timed out after {limit:.0f} s: {' '.join(map(str, cmd[:3]))} ... "
                        f"last stderr: {tail}")
    except OSError as error:
        raise StepError(f"cannot run {cmd[0]}: {error}")
    return p, time.time() - started


def kiln_json(args, timeout, ok_codes=(0,), reserve=0.0):
    p, wall = sh([KILN, *args], timeout, reserve)
    if p.returncode not in ok_codes:
        raise StepError(f"kiln {args[0]} exit {p.returncode}: {one_line(p.stderr or p.stdout)}")
    try:
        return json.loads(p.stdout), wall
    except ValueError:
        raise StepError(f"kiln {args[0]}: no JSON on stdout: {one_line(p.stdout or p.stderr)}")


RESULTS = {"steps": {}, "errors": {}}


def throughput_baselines():
    """Our FP16 plan (build and run) and PyTorch eager FP16; the FP16 build's result or None."""
    if "model" not in RESULTS["steps"] or "throughput" in SKIP:
        return None
    fp16 = step("fp16 build", fp16_plan)
    if fp16:
        step("fp16 run", run_plan, fp16["plan"])
    step("pytorch eager fp16", torch_eager)
    return fp16


def step(name, fn, *args, **kwargs):
    """Runs one step; on failure records and prints its one-line error and returns None."""
    started = time.time()
    print(f"--- {name}", flush=True)
    try:
        value = fn(*args, **kwargs)
        RESULTS["steps"][name] = value
        return value
    except StepError as error:
        message = str(error)
    except Exception as error:  # a bug or an unexpected output must not stop the rest
        message = f"{type(error).__name__}: {error}"
    RESULTS["errors"][name] = message
    print(f"    ERROR ({time.time() - started:.1f} s): {message}", flush=True)
    return None


# ---------------------------------------------------------------- ResNet-50 -----------

def input_info(model, default_shape):
    """The model's (first) input name and its per-sample shape (dims after the batch)."""
    try:
        import onnx
        m = onnx.load(model, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        graph_input = next(i for i in m.graph.input if i.name not in inits)
        dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim][1:]
        return graph_input.name, tuple(dims) if dims and all(dims) else default_shape
    except Exception:
        return "input", default_shape


def shape_arg(name, batch):
    return f"{name}:{batch}x{'x'.join(map(str, SAMPLE_SHAPE))}"


def profile_args(name, batch):
    s = shape_arg(name, batch)
    return ["--min-shapes", s, "--opt-shapes", s, "--max-shapes", s]


def ensure_model():
    if os.path.exists(MODEL):
        return {"model": MODEL, "exported": False}
    if DRY:
        raise StepError(f"{MODEL} missing")
    p, wall = sh([sys.executable, os.path.join(HERE, "export_models.py"), MODEL_DIR, "resnet50"],
                 150)
    if p.returncode != 0 or not os.path.exists(MODEL):
        raise StepError("export failed: " + one_line(p.stdout + p.stderr))
    print(f"    exported {MODEL} in {wall:.1f} s", flush=True)
    return {"model": MODEL, "exported": True, "export_s": round(wall, 1)}


def make_samples():
    import numpy as np
    if os.path.isdir(CALIB):
        shutil.rmtree(CALIB)
    os.makedirs(CALIB)
    rng = np.random.default_rng(SEED)
    for i in range(N_SAMPLES):
        # Standard normal per pixel: the statistics of an ImageNet-normalized image.
        np.save(os.path.join(CALIB, f"sample_{i:03d}.npy"),
                rng.standard_normal(SAMPLE_SHAPE).astype(np.float32))
    return {"dir": CALIB, "samples": N_SAMPLES, "shape": list(SAMPLE_SHAPE), "seed": SEED,
            "distribution": "standard normal"}


def probe_cpu():
    """One batch-1 FP32 run on the CPU reference: predicts the calibration time."""
    j, wall = kiln_json(["run", MODEL, "--backend", "cpu", "--shapes", shape_arg(INPUT, 1),
                         "--iterations", "1", "--warmup", "0", "--json"], 60)
    ms = j["latency_ms"]["median"]
    print(f"    CPU reference, batch 1: {ms:.0f} ms per sample", flush=True)
    return {"cpu_ms_per_sample": ms}


def calibrate(probe):
    global N_SAMPLES
    cal_budget = float(option("calib-budget", "60"))
    if probe and not DRY:
        # Calibration costs about 3x a plain CPU run per sample (histograms, batches of 8;
        # measured on the development machine). Fewer samples rather than no INT8 numbers.
        affordable = int(cal_budget / (3 * probe["cpu_ms_per_sample"] / 1e3))
        if affordable < N_SAMPLES:
            keep = max(8, affordable)
            print(f"    NOTE: CPU calibration of {N_SAMPLES} samples would take about "
                  f"{3 * probe['cpu_ms_per_sample'] / 1e3 * N_SAMPLES:.0f} s; using the first "
                  f"{keep} samples", flush=True)
            for i in range(keep, N_SAMPLES):
                os.remove(os.path.join(CALIB, f"sample_{i:03d}.npy"))
            N_SAMPLES = keep
            RESULTS["samples_reduced_to"] = keep
    p, wall = sh([KILN, "calibrate", MODEL, "--data", CALIB, "-o", CACHE, "--method", "entropy",
                  "--batch", "8", "--quiet"], 150, reserve=60)
    if p.returncode != 0:
        raise StepError(f"kiln calibrate exit {p.returncode}: {one_line(p.stderr or p.stdout)}")
    tensors = sum(1 for line in open(CACHE) if line.startswith("tensor "))
    print(f"    kiln calibrate (CPU reference, entropy, {N_SAMPLES} samples, batch 8): "
          f"{wall:.1f} s wall, {tensors} tensors", flush=True)
    return {"wall_s": round(wall, 2), "samples": N_SAMPLES, "batch": 8, "method": "entropy",
            "tensors": tensors, "cache": CACHE}


def build(plan, flags, timeout, reserve):
    cache = plan + ".timing.json"
    if os.path.exists(cache):
        os.remove(cache)
    j, wall = kiln_json(["build", MODEL, "-o", plan, "--backend", BACKEND, *profile_args(INPUT, BATCH),
                         "--optimization-level", "2", "--timing-cache", cache, "--json",
                         "--progress", *flags],
                        timeout, reserve=reserve)
    out = {"plan": plan, "build_s": round(j["build_seconds"], 1), "wall_s": round(wall, 1),
           "layers": j["layers"], "layer_precisions": j["layer_precisions"],
           "candidates_timed": j["candidates_timed"], "warnings": len(j.get("warnings", []))}
    print(f"    built in {out['build_s']} s: {out['layers']} layers, {out['layer_precisions']}",
          flush=True)
    return out


def run_plan(plan):
    args = ["run", plan, "--shapes", shape_arg(INPUT, BATCH), "--json"]
    if BACKEND == "cuda":
        args += ["--no-data-transfers", "--warmup", "200", "--iterations", "10", "--duration", "1"]
    else:
        args += ["--warmup", "1", "--iterations", "3"]
    j, _ = kiln_json(args, 120, reserve=10)
    if BACKEND == "cuda":
        ps = j["performance_summary"]
        ms = ps["GPU Compute Time"][3]  # trtexec order: min, max, mean, median, ...
        out = {"median_ms": ms, "metric": "GPU compute median (CUDA events)",
               "host_fallback_layers": j.get("host_fallback_layers"),
               "host_round_trip_layers": j.get("host_round_trip_layers"),
               "precision": j.get("precision"), "device": j.get("device")}
    else:
        ms = j["latency_ms"]["median"]
        out = {"median_ms": ms, "metric": "CPU latency median"}
    if out.get("device"):
        RESULTS.setdefault("device", out["device"])
    out["img_s"] = BATCH * 1000.0 / ms
    print(f"    {ms:.3f} ms -> {out['img_s']:.0f} img/s"
          + (f" (host fallbacks {out['host_fallback_layers']})" if out.get("host_fallback_layers")
             else ""), flush=True)
    return out


def reusable(plan):
    """build_bench's plan, only if its build_bench.json (written after its builds) says
    it built this plan and both are fresh: a warm device keeps older files in its dirs."""
    record = os.path.join(os.path.dirname(plan), "build_bench.json")
    if not os.path.exists(plan) or not os.path.exists(record):
        return "missing"
    if not START - 1800 <= os.path.getmtime(plan) <= os.path.getmtime(record):
        return "not written by this call's build_bench: older than 30 min or newer than build_bench.json"
    rows = json.load(open(record)).get("rows", [])
    if not any(r.get("model") == "resnet50" and r.get("batch") == BATCH and r.get("mode") == "fp16"
               and "error" not in r.get("cold", {"error": 1}) for r in rows):
        return "build_bench.json has no successful resnet50 fp16 build at this batch"
    return ""


def fp16_plan():
    given = option("fp16-plan", "")
    if given:
        why = reusable(given)
        if not why:
            print(f"    reusing {given} (build_bench, earlier in this device call)", flush=True)
            return {"plan": given, "reused": True}
        print(f"    not reusing {given} ({why}): building", flush=True)
    return build(FP16_PLAN, ["--fp16"], 200, reserve=25)


def torch_eager():
    if DRY:
        raise StepError("skipped: --dry-cpu (no GPU, no torch)")
    if remaining() < 20:
        raise StepError(f"skipped: time budget ({BUDGET:.0f} s) spent")
    import run_bench  # reads KILN MODEL_DIR OUT_DIR from sys.argv, as this script does
    ms = run_bench.time_torch("resnet50", BATCH, ("fp16", True))
    RESULTS["device"] = run_bench.torch.cuda.get_device_name()
    RESULTS["torch"] = run_bench.torch.__version__
    print(f"    PyTorch eager FP16 channels-last: {ms:.3f} ms -> {BATCH * 1000 / ms:.0f} img/s",
          flush=True)
    return {"median_ms": ms, "img_s": BATCH * 1000.0 / ms,
            "setup": "inference_mode, cudnn.benchmark, channels-last, .half(), median of 10"}


def compare_stats(j):
    out = j["outputs"][0]
    top = out.get("top_k", {})
    rows = top.get("rows", 0)
    return {"a": j["a"], "b": j["b"], "rows": rows, "top1_agreement": top.get("top1_agreement"),
            "top1_agree_rows": round(top.get("top1_agreement", 0) * rows),
            "top5_overlap": top.get("top_k_overlap"), "cosine": out["cosine"],
            "max_abs": out["max_abs"], "mean_abs": out["mean_abs"],
            "nan": out["nan"], "inf": out["inf"]}


def accuracy_compare(plan, label):
    """kiln compare: the plan (on its backend, at batch N) against the FP32 CPU reference."""
    j, wall = kiln_json(["compare", plan, MODEL, "--data", CALIB, "--batch", str(N_SAMPLES),
                         "--top-k", "5", "--json"], 150, ok_codes=(0, 3), reserve=15)
    s = compare_stats(j)
    s["wall_s"] = round(wall, 1)
    s["plan"] = label
    print(f"    {label} vs FP32 CPU reference: top-1 {s['top1_agree_rows']}/{s['rows']} "
          f"({100 * s['top1_agreement']:.1f}%), top-5 overlap {100 * s['top5_overlap']:.1f}%, "
          f"cosine {s['cosine']:.5f}, max abs {s['max_abs']:.4g} ({wall:.1f} s)", flush=True)
    return s


def fp32_logits(batch_path):
    """FP32 logits of the calibration samples: ONNX Runtime, else Kiln's CPU reference."""
    import numpy as np
    x = np.load(batch_path)
    try:
        import onnxruntime as ort
        session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
        return session.run(None, {INPUT: x})[0].astype(np.float64), "ONNX Runtime CPU FP32"
    except ImportError:
        pass
    out = os.path.join(WORK, "fp32_out.json")
    p, _ = sh([KILN, "run", MODEL, "--backend", "cpu", "--load-inputs", f"{INPUT}:{batch_path}",
               "--iterations", "1", "--warmup", "0", "--export-output", out], 120, reserve=10)
    if p.returncode != 0:
        raise StepError("FP32 reference run: " + one_line(p.stderr or p.stdout))
    o = json.load(open(out))[0]
    return np.array(o["values"]).reshape(o["shape"]), "Kiln CPU reference FP32"


def export_output(plan_or_model, input_path, out_path, extra=()):
    import numpy as np
    args = ["run", plan_or_model, "--load-inputs", f"{INPUT}:{input_path}", "--iterations", "1",
            "--warmup", "0", "--export-output", out_path, *extra]
    if BACKEND == "cuda" and "--backend" not in extra:
        args += ["--duration", "0"]
    p, _ = sh([KILN, *args], 120, reserve=10)
    if p.returncode != 0:
        raise StepError(f"kiln run exit {p.returncode}: {one_line(p.stderr or p.stdout)}")
    o = json.load(open(out_path))[0]
    return np.array(o["values"], dtype=np.float64).reshape(o["shape"])


def logits_stats(actual, expected):
    import numpy as np
    a, e = actual.reshape(len(actual), -1), expected.reshape(len(expected), -1)
    agree = int((a.argmax(1) == e.argmax(1)).sum())
    cos = float((a * e).sum() / (np.linalg.norm(a) * np.linalg.norm(e) + 1e-30))
    # Random weights often give every input the same top class (a common logit vector
    # dominates); without FP32's mean logits the top-1 depends on the input only.
    mean = e.mean(0, keepdims=True)
    centered = int(((a - mean).argmax(1) == (e - mean).argmax(1)).sum())
    return {"rows": len(a), "top1_agree_rows": agree, "top1_agreement": agree / len(a),
            "cosine": cos, "max_abs": float(np.abs(a - e).max()),
            "fp32_distinct_top1_classes": int(len(set(e.argmax(1).tolist()))),
            "top1_centered_agree_rows": centered, "top1_centered_agreement": centered / len(a),
            "fp32_distinct_centered_top1_classes": int(len(set((e - mean).argmax(1).tolist())))}


def accuracy_at_plan_batch(plan):
    """The INT8 plan at its own batch: the N samples tiled to BATCH rows, kiln run
    --export-output, the first N rows against FP32 (an independent check of kiln compare)."""
    import numpy as np
    files = sorted(f for f in os.listdir(CALIB) if f.endswith(".npy"))
    x = np.stack([np.load(os.path.join(CALIB, f)) for f in files]).astype(np.float32)
    small = os.path.join(WORK, "calib_batch.npy")
    np.save(small, x)
    tiled = np.concatenate([x] * (-(-BATCH // len(x))))[:BATCH]
    big = os.path.join(WORK, "calib_tiled.npy")
    np.save(big, tiled)
    expected, source = fp32_logits(small)
    actual = export_output(plan, big, os.path.join(WORK, "int8_out.json"))
    s = logits_stats(actual[:len(x)], expected)
    copies = actual[: (BATCH // len(x)) * len(x)].reshape(-1, len(x), actual.shape[-1])
    s["copies_max_spread"] = float(np.abs(copies - copies[:1]).max())  # same sample, other row
    s["reference"] = source
    s["plan"] = f"{os.path.basename(plan)} at batch {BATCH} (samples tiled)"
    print(f"    {s['plan']} vs {source}: top-1 {s['top1_agree_rows']}/{s['rows']} "
          f"({100 * s['top1_agreement']:.1f}%), cosine {s['cosine']:.5f}, max abs {s['max_abs']:.4g}; "
          f"FP32 picks {s['fp32_distinct_top1_classes']} distinct classes; without the FP32 mean "
          f"logits: top-1 {s['top1_centered_agree_rows']}/{s['rows']} over "
          f"{s['fp32_distinct_centered_top1_classes']} classes; spread across copies "
          f"{s['copies_max_spread']:.3g}", flush=True)
    os.remove(big)
    return s


def cpu_int8_fallback():
    plan = os.path.join(WORK, "resnet50_int8_cpu_b1.kiln")
    # Shapes at batch 1: the CPU builder times every candidate, cheap only at batch 1;
    # kiln compare runs the plan at batch N (a CPU plan runs outside its profile there).
    kiln_json(["build", MODEL, "-o", plan, "--backend", "cpu", "--int8", "--calib-cache", CACHE,
               *profile_args(INPUT, 1), "--json"], 120, reserve=10)
    return accuracy_compare(plan, "CPU INT8 plan (FALLBACK: the CUDA paths failed)")


# ---------------------------------------------------------------- QDQ MobileNet -------

def start_qdq_prepare():
    log = open(os.path.join(OUT_DIR, "int8_qdq_prepare.log"), "w")
    args = [sys.executable, os.path.join(HERE, "int8_qdq_prepare.py"), QDQ_WORK,
            f"--seed={SEED}"] + (["--dry-cpu"] if DRY else [])
    if option("qdq-model", ""):
        args.append("--qdq-model=" + os.path.abspath(option("qdq-model", "")))
    env = dict(os.environ, OMP_NUM_THREADS="4", OPENBLAS_NUM_THREADS="4")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env), log


def wait_qdq_prepare(proc):
    limit = max(1.0, min(150.0, remaining(10)))
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise StepError(f"QDQ preparation (export + quantize_static) timed out after {limit:.0f} s")
    meta_path = os.path.join(QDQ_WORK, "qdq_meta.json")
    if proc.returncode != 0 or not os.path.exists(meta_path):
        tail = open(os.path.join(OUT_DIR, "int8_qdq_prepare.log")).read()
        raise StepError(f"QDQ preparation exit {proc.returncode}: {one_line(tail)}")
    meta = json.load(open(meta_path))
    print(f"    {meta['model']} exported in {meta['export_s']} s, quantize_static "
          f"{meta['quantize_s']} s ({meta['pre_process']}); Q/DQ nodes {meta['qdq_nodes']}; "
          f"output step {meta['output_step']}; ORT QDQ vs ORT float top-1 "
          f"{100 * meta['ort_float_vs_qdq_top1']:.0f}%; ORT unoptimized (Q/DQ simulated) vs ORT "
          f"optimized: max abs {meta['ort_simulated_vs_reference_max_abs']:.4g}"
          + (f" = {meta['ort_simulated_vs_reference_max_abs'] / meta['output_step']:.2f} steps"
             if meta["output_step"] else ""), flush=True)
    return meta


def qdq_variant(meta, backend, planned):
    import numpy as np
    expected = np.load(os.path.join(QDQ_WORK, "qdq_expected.npy")).astype(np.float64)
    tag = f"{backend}_{'plan' if planned else 'direct'}"
    out_json = os.path.join(QDQ_WORK, f"out_{tag}.json")
    target = meta["qdq"]
    info = {}
    shapes = f"{meta['input']}:{meta['batch']}x{'x'.join(map(str, meta['shape']))}"
    if planned:
        target = os.path.join(QDQ_WORK, f"qdq_{backend}.kiln")
        j, wall = kiln_json(["build", meta["qdq"], "-o", target, "--int8", "--backend", backend,
                             "--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes,
                             "--json"], 90, reserve=5)
        info = {"build_s": round(j["build_seconds"], 1), "layer_precisions": j["layer_precisions"]}
    args = ["run", target, "--load-inputs", f"{meta['input']}:{meta['input_npy']}",
            "--iterations", "1", "--warmup", "0", "--export-output", out_json]
    if not planned:
        args += ["--backend", backend]
        if backend == "cuda":
            args += ["--no-tf32"]  # the float simulation of Q/DQ in exact fp32
    if backend == "cuda":
        args += ["--duration", "0"]
    p, wall = sh([KILN, *args], 90, reserve=5)
    if p.returncode != 0:
        raise StepError(f"kiln run exit {p.returncode}: {one_line(p.stderr or p.stdout)}")
    o = json.load(open(out_json))[0]
    actual = np.array(o["values"], dtype=np.float64).reshape(o["shape"])
    if actual.shape != expected.shape:
        raise StepError(f"output shape {list(actual.shape)} != ORT's {list(expected.shape)}")
    err = np.abs(actual - expected)
    rng = float(expected.max() - expected.min()) or 1.0
    step_size = meta.get("output_step")
    out = dict(info)
    out.update({"max_abs": float(err.max()), "mean_abs": float(err.mean()),
                "max_abs_over_range": float(err.max()) / rng,
                "top1_agree_rows": int((actual.argmax(1) == expected.argmax(1)).sum()),
                "rows": int(actual.shape[0])})
    simulated = np.load(os.path.join(QDQ_WORK, "qdq_simulated.npy")).astype(np.float64)
    out["max_abs_vs_ort_simulated"] = float(np.abs(actual - simulated).max())
    if step_size:
        out["max_abs_steps"] = float(err.max()) / step_size
        out["mean_abs_steps"] = float(err.mean()) / step_size
        out["within_2_steps"] = bool(err.max() <= 2 * step_size * (1 + 1e-6))
        out["max_abs_steps_vs_ort_simulated"] = out["max_abs_vs_ort_simulated"] / step_size
    print(f"    {tag}: max abs {out['max_abs']:.4g}"
          + (f" = {out['max_abs_steps']:.2f} steps (mean {out['mean_abs_steps']:.3f})" if step_size else "")
          + f", {100 * out['max_abs_over_range']:.2f}% of the logits' range, top-1 "
          f"{out['top1_agree_rows']}/{out['rows']}"
          + (f"; vs ORT unoptimized {out['max_abs_steps_vs_ort_simulated']:.2f} steps" if step_size else "")
          + (f"; plan {info['layer_precisions']}" if info else ""), flush=True)
    return out


# ---------------------------------------------------------------- report --------------

def main():
    global KILN, MODEL_DIR, OUT_DIR, WORK, QDQ_WORK, MODEL, INPUT, CALIB, CACHE, BATCH
    global N_SAMPLES, SAMPLE_SHAPE, BACKEND, INT8_PLAN, FP16_PLAN
    KILN, MODEL_DIR, OUT_DIR = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.makedirs(OUT_DIR, exist_ok=True)
    WORK = option("work", os.path.join("/tmp", "kiln-int8" + ("-dry" if DRY else "")))
    QDQ_WORK = os.path.join(WORK, "qdq")
    if os.path.isdir(QDQ_WORK):
        shutil.rmtree(QDQ_WORK)
    os.makedirs(QDQ_WORK)
    if DRY:
        MODEL = option("model", os.path.join(ROOT, "tests", "data", "quant", "small_cnn.onnx"))
        SAMPLE_SHAPE, BACKEND = (3, 16, 16), "cpu"
        N_SAMPLES, BATCH = int(option("samples", "8")), int(option("batch", "16"))
    else:
        MODEL = os.path.join(MODEL_DIR, "resnet50.onnx")
        SAMPLE_SHAPE, BACKEND = (3, 224, 224), "cuda"
        N_SAMPLES, BATCH = int(option("samples", "32")), int(option("batch", "256"))
    CALIB, CACHE = os.path.join(WORK, "calib"), os.path.join(WORK, "resnet50.cache")
    INT8_PLAN = os.path.join(WORK, f"resnet50_b{BATCH}_int8.kiln")
    FP16_PLAN = os.path.join(WORK, f"resnet50_b{BATCH}_fp16.kiln")
    RESULTS.update({"date": time.strftime("%Y-%m-%d"), "dry_cpu": DRY, "kiln": KILN,
                    "model": MODEL, "batch": BATCH, "backend": BACKEND,
                    "tensorrt_int8_img_s": list(TRT_INT8_IMG_S), "targets": TARGETS,
                    "int8_extra_flags": INT8_FLAGS})
    print(f"# int8_bench: {MODEL}, batch {BATCH}, {N_SAMPLES} calibration samples, backend "
          f"{BACKEND}, budget {BUDGET:.0f} s, work dir {WORK}", flush=True)

    prepare = None
    try:
        if "qdq" not in SKIP:
            prepare = start_qdq_prepare()
    except Exception as error:
        RESULTS["errors"]["qdq prepare"] = f"could not start: {error}"

    if step("model", ensure_model) is not None:
        INPUT, SAMPLE_SHAPE = input_info(MODEL, SAMPLE_SHAPE)
        have_samples = step("samples", make_samples) is not None
        probe = step("cpu probe", probe_cpu) if have_samples else None
        cal = step("calibrate", calibrate, probe) if have_samples else None
        int8 = step("int8 build", build, INT8_PLAN,
                    ["--int8", "--calib-cache", CACHE, "--fp16", *INT8_FLAGS], 300, 60) if cal else None
        if int8 and "throughput" not in SKIP:
            step("int8 run", run_plan, INT8_PLAN)
        # The same-run baselines next, before the slow accuracy steps: a spent budget
        # must not leave the INT8 time without its ratios.
        fp16 = throughput_baselines()
        if int8 and "accuracy" not in SKIP:
            c = step("top-1 vs FP32 (kiln compare)", accuracy_compare, INT8_PLAN,
                     f"{'CUDA' if BACKEND == 'cuda' else 'CPU'} INT8 plan (b{BATCH} plan run at batch {N_SAMPLES})")
            b = step("top-1 vs FP32 (plan batch)", accuracy_at_plan_batch, INT8_PLAN)
            if c is None and b is None and BACKEND == "cuda":
                step("top-1 vs FP32 (CPU INT8 fallback)", cpu_int8_fallback)
        elif cal and BACKEND == "cuda" and "accuracy" not in SKIP:
            step("top-1 vs FP32 (CPU INT8 fallback)", cpu_int8_fallback)
    else:
        INPUT = "input"
        fp16 = None

    if prepare:
        meta = step("qdq prepare", wait_qdq_prepare, prepare[0])
        prepare[1].close()
        if meta:
            for backend in ("cuda", "cpu"):
                if DRY and backend == "cuda":
                    # No GPU here: one try shows the error path; the plan build would fail alike.
                    step("qdq cuda direct", qdq_variant, meta, "cuda", False)
                    continue
                step(f"qdq {backend} direct", qdq_variant, meta, backend, False)
                step(f"qdq {backend} plan", qdq_variant, meta, backend, True)

    if fp16 and "fp16-context" not in SKIP and "accuracy" not in SKIP and "calibrate" in RESULTS["steps"]:
        if remaining() > 40:
            step("fp16 top-1 vs FP32 (context)", accuracy_compare, fp16["plan"],
                 f"FP16 plan (b{BATCH} plan run at batch {N_SAMPLES})")
        else:
            print("--- fp16 top-1 vs FP32 (context): skipped, under 40 s of the budget left")

    int8_bench_summary.summarize(RESULTS, BATCH, DRY, time.time() - START)
    RESULTS["wall_s"] = round(time.time() - START, 1)
    path = os.path.join(OUT_DIR, "int8_bench.json")
    with open(path, "w") as f:
        json.dump(RESULTS, f, indent=1)
    print(f"written {path} ({RESULTS['wall_s']} s)")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
