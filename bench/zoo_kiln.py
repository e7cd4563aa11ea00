"""Kiln's side of the zoo (zoo_bench.py): cold plan builds, timed runs, read-back outputs.

Every call is a `kiln` subprocess with a time limit; a failure returns {"error": ...}
instead of raising, so one model never stops the run.
"""
import json
import os
import subprocess
import time

import numpy as np

# Timing: a few hundred ms per run (the device session is short), GPU compute median.
# At least 5 timed runs, so a plan that falls back to the host (seconds a run) stays short.
RUN_TIMING = ["--warmup", "100", "--iterations", "5", "--duration", "0.3"]
# Outputs are read back (JSON text, ~20 bytes a value) only up to this many values.
MAX_EXPORTED_VALUES = 1 << 20


class Kiln:
    def __init__(self, binary, backend="cuda", opt_level=2, build_timeout=180,
                 run_timeout=90):
        self.binary = binary
        self.backend = backend
        self.opt_level = opt_level
        self.build_timeout = build_timeout
        self.run_timeout = run_timeout

    def call(self, args, timeout):
        """(returncode, stdout, stderr, seconds) of `kiln ARGS`."""
        started = time.time()
        try:
            p = subprocess.run([self.binary, *args], capture_output=True, text=True,
                               timeout=timeout)
            return p.returncode, p.stdout, p.stderr, time.time() - started
        except subprocess.TimeoutExpired:
            return 124, "", f"timed out after {timeout} s", time.time() - started

    def inspect_flops(self, onnx_path, shapes):
        rc, out, err, _ = self.call(["inspect", onnx_path, "--shapes", shapes, "--json"], 120)
        if rc != 0:
            return {"error": _tail(err or out)}
        doc = json.loads(out)
        return {"flops": doc.get("flops", 0)}

    def build(self, onnx_path, plan_path, shapes, fp16=True, disabled_passes=()):
        """A cold build (no timing cache) at one fixed shape: the build summary (with
        `disabled_passes`, those graph passes off: bench/pass_ab.py)."""
        if os.path.exists(plan_path):
            os.remove(plan_path)
        args = ["build", onnx_path, "-o", plan_path, "--backend", self.backend,
                "--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes,
                "--optimization-level", str(self.opt_level), "--json", "--quiet"]
        if fp16 and self.backend == "cuda":
            args.append("--fp16")
        for name in disabled_passes:
            args += ["--disable-pass", name]
        rc, out, err, wall = self.call(args, self.build_timeout)
        if rc != 0:
            return {"error": _tail(err or out), "wall_s": round(wall, 1)}
        summary = json.loads(out)
        return {"build_s": summary.get("build_seconds"), "wall_s": round(wall, 1),
                "layers": summary.get("layers"), "precisions": summary.get("layer_precisions"),
                "fusions": summary.get("fusions"), "warnings": len(summary.get("warnings", []))}

    def run(self, plan_path, shapes, input_files, output_file=None, cuda_graph=False):
        """Times the plan (GPU compute median, no host<->device copies) on the given inputs;
        with output_file, the last inference's outputs are written there as JSON."""
        args = ["run", plan_path, "--shapes", shapes, "--json",
                "--load-inputs", ",".join(f"{n}:{f}" for n, f in input_files.items())]
        if self.backend == "cuda":
            args += ["--no-data-transfers", *RUN_TIMING]
        else:
            args += ["--warmup", "0", "--iterations", "1"]
        if cuda_graph:
            args.append("--cuda-graph")
        if output_file:
            if os.path.exists(output_file):
                os.remove(output_file)  # never read a stale file as this run's outputs
            args += ["--export-output", output_file]
        rc, out, err, wall = self.call(args, self.run_timeout)
        if rc != 0:
            return {"error": _tail(err or out), "wall_s": round(wall, 1)}
        doc = json.loads(out)
        if self.backend != "cuda":
            return {"median_ms": doc["latency_ms"]["median"], "fallbacks": 0, "round_trips": 0,
                    "wall_s": round(wall, 1)}
        gpu = doc["performance_summary"]["GPU Compute Time"]  # min, max, mean, median, ...
        return {"median_ms": gpu[3], "fallbacks": doc["host_fallback_layers"],
                "round_trips": doc["host_round_trip_layers"],
                "fallback_ops": sorted({l["op_type"] for l in doc.get("layers", [])
                                        if l.get("placement") == "host-fallback"}),
                "wall_s": round(wall, 1)}


def _tail(text, n=400):
    text = (text or "").strip()
    return text[-n:] if len(text) > n else text


def save_inputs(inputs, directory, stem):
    """Writes each input as NAME.npy for --load-inputs; returns {name: path}."""
    os.makedirs(directory, exist_ok=True)
    files = {}
    for name, tensor in inputs.items():
        path = os.path.join(directory, f"{stem}_{name}.npy")
        np.save(path, tensor.numpy())
        files[name] = path
    return files


def reference_path(work, stem):
    """Where save_reference keeps the FP32 reference output of inputs STEM."""
    return os.path.join(work, "references", f"{stem}.npy")


def save_reference(values, work, stem):
    """Keeps PyTorch's FP32 output of the inputs saved as STEM (zoo_bench's) for later
    comparisons of a plan's output (binary_ab.py)."""
    path = reference_path(work, stem)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, values)


def read_output(path, name):
    """The named output (else the first) from `kiln run --export-output` JSON."""
    with open(path) as f:
        doc = json.load(f)
    chosen = next((o for o in doc if o["name"] == name), doc[0])
    return np.asarray(chosen["values"], dtype=np.float64).reshape(chosen["shape"])


def accuracy(got, reference):
    """Cosine, max abs and max rel (max abs error over max |reference|) of got against
    the reference, both flattened; non-finite values in got are counted."""
    a = np.asarray(got, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return {"error": f"output has {a.size} values, the reference {b.size}"}
    if not np.abs(b).max() > 0:
        return {"error": "the reference output is all zeros: nothing to compare"}
    finite = np.isfinite(a)
    result = {"non_finite": int((~finite).sum())}
    if not finite.all():
        result.update(cosine=float("nan"), max_abs=float("nan"), max_rel=float("nan"))
        return result
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    diff = np.abs(a - b).max()
    scale = np.abs(b).max()
    result.update(cosine=float(a @ b / denominator) if denominator else float("nan"),
                  max_abs=float(diff), max_rel=float(diff / scale) if scale else float("nan"))
    return result
