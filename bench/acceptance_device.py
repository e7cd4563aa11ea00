"""Device acceptance of the TensorRT 11 bridge (issue 24) and the advisor (issue 25),
run after `bench/zoo_bench.py` in the same device call (it reuses the zoo's exports,
inputs and FP16 plans in WORK):

  python3 bench/acceptance_device.py --kiln KILN --work /tmp/kiln-zoo --out $OUT
      [--models resnet50,bert_base_sdpa] [--steps peaks,typed,int8,advise,roofline,sweep]
      [--budget S]

- peaks:    `kiln device --calibrate --backend cuda` (the measured peaks file lands in OUT)
- typed:    per model, the zoo's FP16 plan -> `kiln export-onnx --from` -> `kiln build
            --strongly-typed` at the same shapes; both timed in one run (alternating), the
            per-ONNX-node precision tables compared (tests/cli/typed_export_check.py)
- int8:     per model (ResNet-50 at batch 64, BERT-base SDPA at 128): `kiln calibrate
            --backend cuda` on 32 random samples (BERT: one subfolder per input),
            `kiln build --int8 --fp16` and `kiln export-onnx --from PLAN --calib-cache` ->
            `kiln build --strongly-typed`; both timed, per-node precisions compared
- advise:   `kiln advise` (with a profile) on every plan in WORK/plans
- roofline: ResNet-50's plan as engine-inspector JSON + profile (small files the studio
            opens with the measured peaks) and `kiln inspect --roofline`
- sweep:    `kiln sweep` of ResNet-50 at batch 32, precision x optimization level
Every step is bounded; a failing step prints one line and the others go on. A summary
goes to OUT/acceptance.json; small artifacts to OUT/acceptance.tgz.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_kiln  # noqa: E402

BATCH = {"resnet50": 256, "bert_base_sdpa": 128}
TABLES = os.path.join(HERE, "..", "tests", "cli", "typed_export_check.py")


def shapes_of(name, batch):
    if name.startswith("bert"):
        return f"input_ids:{batch}x128,attention_mask:{batch}x128"
    return f"input:{batch}x3x224x224"


def input_files(work, name, batch):
    """The zoo's saved inputs of NAME at BATCH (zoo_kiln.save_inputs: NAME_bB_INPUT.npy)."""
    prefix = os.path.join(work, "inputs", f"{name}_b{batch}_")
    return {f[len(prefix):-4]: f for f in sorted(glob.glob(prefix + "*.npy"))}


class Steps:
    def __init__(self, args):
        self.args = args
        self.kiln = zoo_kiln.Kiln(args.kiln, build_timeout=240)
        self.deadline = time.time() + args.budget
        self.summary = {}
        self.keep = []  # small files for acceptance.tgz
        os.makedirs(os.path.join(args.work, "acceptance"), exist_ok=True)

    def left(self):
        return max(5, int(self.deadline - time.time()))

    def sh(self, argv, timeout=None, out_file=None):
        started = time.time()
        try:
            p = subprocess.run(argv, capture_output=True, text=True,
                               timeout=min(timeout or 1e9, self.left()))
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", f"timed out: {' '.join(argv[:3])}"
        if out_file:
            with open(out_file, "w") as f:
                f.write(out)
            self.keep.append(out_file)
        print(f"  [{time.time() - started:5.1f} s rc={rc}] {' '.join(os.path.basename(a) if '/' in a else a for a in argv)[:200]}",
              flush=True)
        if rc != 0:
            print("    " + (err or out).strip()[-400:].replace("\n", "\n    "), flush=True)
        return rc, out, err

    def path(self, name):
        return os.path.join(self.args.work, "acceptance", name)

    def timed_pair(self, a, b, shapes, files):
        """Medians of two plans timed alternately (a, b, a, b): the better of each pair."""
        got = {"a": [], "b": []}
        for _ in range(2):
            for key, plan in (("a", a), ("b", b)):
                r = self.kiln.run(plan, shapes, files)
                got[key].append(r.get("median_ms", float("nan")) if "error" not in r else r["error"])
        best = {k: min((x for x in v if isinstance(x, float)), default=v[-1]) for k, v in got.items()}
        return {"plan_ms": best["a"], "typed_ms": best["b"], "runs": got}

    def tables(self, a_plan, b_plan, only=()):
        ja, jb = self.path(os.path.basename(a_plan) + ".json"), self.path(os.path.basename(b_plan) + ".json")
        self.sh([self.args.kiln, "inspect", a_plan, "--json"], 60, ja)
        self.sh([self.args.kiln, "inspect", b_plan, "--json"], 60, jb)
        rc, out, err = self.sh([sys.executable, TABLES, "tables", ja, jb, *only], 60)
        return (out or err).strip()[-300:]

    def typed_against(self, plan, typed_onnx, typed_plan, shapes, files, row):
        """Builds TYPED_ONNX --strongly-typed at SHAPES, times it against PLAN, compares the
        per-node precision tables, profiles both when it is over 5% slower; False when the
        build failed."""
        rc, out, _ = self.sh([self.args.kiln, "build", typed_onnx, "-o", typed_plan, "--backend",
                              "cuda", "--strongly-typed", "--min-shapes", shapes, "--opt-shapes",
                              shapes, "--max-shapes", shapes, "--json", "--quiet"], 240)
        if rc:
            row["error"] = "strongly typed build failed"
            return False
        row["typed_build_s"] = json.loads(out).get("build_seconds")
        row.update(self.timed_pair(plan, typed_plan, shapes, files))
        row["tables"] = self.tables(plan, typed_plan)
        if isinstance(row["typed_ms"], float) and row["typed_ms"] > 1.05 * row["plan_ms"]:
            print(f"  --- profile of the plan {os.path.basename(plan)}", flush=True)
            self.profile(plan, shapes, files)
            print(f"  --- profile of the strongly typed plan {os.path.basename(typed_plan)}", flush=True)
            self.profile(typed_plan, shapes, files)
        return True

    def profile(self, plan, shapes, files):
        """The plan's per-layer profile summary (bench/profile_summary.py)."""
        rc, out, _ = self.sh([self.args.kiln, "run", plan, "--shapes", shapes, "--json", "--profile",
                              "--no-data-transfers", "--warmup", "10", "--iterations", "10",
                              "--duration", "0", "--load-inputs",
                              ",".join(f"{n}:{f}" for n, f in files.items())], 90)
        if rc == 0:
            s = subprocess.run([sys.executable, os.path.join(HERE, "profile_summary.py")], input=out,
                               capture_output=True, text=True)
            print(s.stdout[:2500], flush=True)

    def peaks(self):
        peaks = os.path.join(self.args.out, "device_peaks.json")
        os.environ["KILN_DEVICE_PEAKS"] = peaks
        rc, out, _ = self.sh([self.args.kiln, "device", "--calibrate", "--backend", "cuda", "--json"], 120)
        self.summary["peaks"] = json.loads(out) if rc == 0 and out.strip() else {"rc": rc}

    def typed(self):
        for name in self.args.models.split(","):
            batch = BATCH[name]
            shapes = shapes_of(name, batch)
            plan = os.path.join(self.args.work, "plans", f"{name}_b{batch}.kiln")
            files = input_files(self.args.work, name, batch)
            row = {"batch": batch}
            self.summary[f"typed_{name}"] = row
            if not os.path.exists(plan) or not files:
                row["error"] = f"no zoo plan or inputs for {name} (run zoo_bench first)"
                print("  " + row["error"])
                continue
            onnx = os.path.join(self.args.work, "onnx", f"{name}.onnx")
            typed_onnx, typed_plan = self.path(f"{name}.typed.onnx"), self.path(f"{name}.typed.kiln")
            # Float32 inputs and outputs, as the plan has them: the same input files feed both.
            rc, out, _ = self.sh([self.args.kiln, "export-onnx", onnx, "-o", typed_onnx, "--from",
                                  plan, "--keep-io-types", "--json"], 120)
            if rc:
                row["error"] = "export failed"
                continue
            doc = json.loads(out)
            row["export"] = {k: (v[:6] + [f"... {len(v)} in all"] if isinstance(v, list) else v)
                             for k, v in doc.items()}
            if not self.typed_against(plan, typed_onnx, typed_plan, shapes, files, row):
                continue
            print(f"  {name}: plan {row['plan_ms']} ms, strongly typed {row['typed_ms']} ms; {row['tables']}",
                  flush=True)

    INT8_BATCH = {"resnet50": 64, "bert_base_sdpa": 128}

    def calibration_data(self, name):
        """32 random samples: N(0, 1) images for a CNN; for BERT one subfolder per input
        (kiln calibrate's layout for several inputs): random token ids, a full mask."""
        data = self.path(f"calib_{name}")
        if os.path.isdir(data):
            return data
        rng = np.random.default_rng(7)
        if name.startswith("bert"):
            for sub in ("input_ids", "attention_mask"):
                os.makedirs(os.path.join(data, sub))
            for k in range(32):
                np.save(os.path.join(data, "input_ids", f"s{k:02d}.npy"),
                        rng.integers(1000, 30000, (128,), dtype=np.int64))
                np.save(os.path.join(data, "attention_mask", f"s{k:02d}.npy"),
                        np.ones((128,), dtype=np.int64))
        else:
            os.makedirs(data)
            np.save(os.path.join(data, "samples.npy"),
                    rng.standard_normal((32, 3, 224, 224), dtype=np.float32))
        return data

    def int8(self):
        for name in self.args.models.split(","):
            if name in self.INT8_BATCH:
                self.int8_model(name, self.INT8_BATCH[name])

    def int8_model(self, name, batch):
        shapes = shapes_of(name, batch)
        onnx = os.path.join(self.args.work, "onnx", f"{name}.onnx")
        row = {"batch": batch}
        self.summary[f"int8_{name}"] = row
        cache = self.path(f"{name}.cache")
        rc, _, _ = self.sh([self.args.kiln, "calibrate", onnx, "--data", self.calibration_data(name),
                            "-o", cache, "--backend", "cuda", "--quiet"], 180)
        if rc:
            row["error"] = "calibration failed"
            return
        self.keep.append(cache)
        files = input_files(self.args.work, name, batch)
        if not files:
            sample = self.path("int8_input.npy")
            np.save(sample, np.random.default_rng(8).standard_normal((batch, 3, 224, 224),
                                                                       dtype=np.float32))
            files = {"input": sample}
        plan, qdq, qdq_plan = (self.path(f"{name}_int8.kiln"), self.path(f"{name}_qdq.onnx"),
                               self.path(f"{name}_qdq.kiln"))
        fixed = ["--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes]
        rc, out, _ = self.sh([self.args.kiln, "build", onnx, "-o", plan, "--backend", "cuda", "--int8",
                              "--fp16", "--calib-cache", cache, *fixed, "--json", "--quiet"], 240)
        if rc:
            row["error"] = "INT8 build failed"
            return
        row["int8_build_s"] = json.loads(out).get("build_seconds")
        # --from the INT8 + FP16 plan too: its FP16 layers (a stem, pools, a head, the
        # attention) stay FP16 in the export, so the two tables can agree on every node.
        rc, out, _ = self.sh([self.args.kiln, "export-onnx", onnx, "-o", qdq, "--from", plan,
                              "--calib-cache", cache, "--keep-io-types", "--json"], 120)
        if rc:
            row["error"] = "Q/DQ export failed"
            return
        if not self.typed_against(plan, qdq, qdq_plan, shapes, files, row):
            return
        print(f"  {name} INT8 b{batch}: plan {row['plan_ms']} ms, Q/DQ strongly typed {row['typed_ms']} ms;"
              f" {row['tables']}", flush=True)

    def advise(self):
        rows = {}
        for plan in sorted(glob.glob(os.path.join(self.args.work, "plans", "*.kiln")) +
                           glob.glob(self.path("*_int8.kiln"))):
            base = os.path.basename(plan)[:-5]
            name, _, b = base.rpartition("_b")
            if base.endswith("_int8"):  # the int8 step's plans: MODEL_int8 at INT8_BATCH
                name = base[:-len("_int8")]
                b = str(self.INT8_BATCH.get(name, 64))
            elif not b.isdigit():
                name, b = base, "64"
            files = input_files(self.args.work, name, int(b)) or (
                {"input": self.path("int8_input.npy")} if "int8" in base else {})
            if not files:
                continue
            shapes = shapes_of(name, int(b)) if name in BATCH else None
            profile = self.path(base + ".profile.json")
            run = [self.args.kiln, "run", plan, "--no-data-transfers", "--warmup", "10", "--iterations",
                   "10", "--duration", "0", "--export-profile", profile,
                   "--load-inputs", ",".join(f"{n}:{f}" for n, f in files.items())]
            if shapes:
                run += ["--shapes", shapes]
            rc, _, _ = self.sh(run, 90)
            argv = [self.args.kiln, "advise", plan, "--json"] + (["--profile", profile] if rc == 0 else [])
            rc, out, _ = self.sh(argv, 60, self.path(base + ".advise.json"))
            if rc == 0 and out.strip():
                doc = json.loads(out)
                findings = doc.get("findings", doc if isinstance(doc, list) else [])
                rows[base] = [f"{f.get('rule')} ({f.get('severity')}, {len(f.get('layers', []))} layers"
                              f"{', %.3f ms' % f['cost_ms'] if f.get('cost_ms') else ''})" for f in findings]
                print(f"  {base}: " + "; ".join(rows[base])[:600], flush=True)
        self.summary["advise"] = rows

    def roofline(self):
        plan = os.path.join(self.args.work, "plans", "resnet50_b256.kiln")
        if not os.path.exists(plan):
            print("  no ResNet-50 b256 plan")
            return
        profile = self.path("resnet50_b256.profile.json")
        if not os.path.exists(profile):
            files = input_files(self.args.work, "resnet50", 256)
            self.sh([self.args.kiln, "run", plan, "--no-data-transfers", "--warmup", "10", "--iterations",
                     "10", "--duration", "0", "--export-profile", profile, "--load-inputs",
                     ",".join(f"{n}:{f}" for n, f in files.items())], 90)
        self.keep.append(profile)
        self.sh([self.args.kiln, "inspect", plan, "--json"], 60, self.path("resnet50_b256.graph.json"))
        rc, out, _ = self.sh([self.args.kiln, "inspect", plan, "--roofline", "--profile", profile], 60,
                             self.path("resnet50_b256.roofline.txt"))
        print("\n".join(out.splitlines()[-12:]), flush=True)

    def sweep(self):
        onnx = os.path.join(self.args.work, "onnx", "resnet50.onnx")
        shapes = shapes_of("resnet50", 32)
        cache = self.path("resnet50.cache")
        sweep_dir = self.path("sweep")
        argv = [self.args.kiln, "sweep", onnx, "--backend", "cuda", "--vary", "precision=" + self.args.sweep_precisions,
                "--vary", "optimization-level=" + self.args.sweep_levels, "--max-error", "cosine>=0.99",
                "--min-shapes", shapes, "--opt-shapes", shapes, "--max-shapes", shapes,
                "--iterations", "20", "--dir", sweep_dir, "--continue", "--json"]
        if os.path.exists(cache):
            argv += ["--calib-cache", cache]
        # The accuracy check on data from the calibration's distribution (the int8 step
        # calibrated on N(0, 1) images): the seeded default, U(-1, 1), judges INT8 on inputs
        # narrower than the ranges it calibrated (suspected behind cosine 0.936 on 2026-11-29).
        sample = self.path("sweep_input.npy")
        np.save(sample, np.random.default_rng(11).standard_normal((32, 3, 224, 224), dtype=np.float32))
        argv += ["--load-inputs", f"input:{sample}"]
        rc, out, _ = self.sh(argv, None, self.path("sweep_report.json"))
        self.keep.append(os.path.join(sweep_dir, "sweep.jsonl"))
        print(out[-1500:], flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kiln", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="resnet50,bert_base_sdpa")
    p.add_argument("--steps", default="peaks,typed,int8,advise,roofline,sweep")
    p.add_argument("--sweep-precisions", default="fp32,fp16,int8",
                   help="the sweep's precisions (int8 reads the int8 step's calibration cache)")
    p.add_argument("--sweep-levels", default="0,3",
                   help="the sweep's optimization levels (precision x these)")
    p.add_argument("--budget", type=float, default=400)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    steps = Steps(args)
    for step in args.steps.split(","):
        if steps.left() <= 10:
            print(f"== {step}: skipped, budget spent", flush=True)
            continue
        print(f"== {step} ({steps.left()} s left)", flush=True)
        try:
            getattr(steps, step)()
        except Exception as error:  # one step failing must not stop the others
            print(f"  {step} failed: {type(error).__name__}: {error}", flush=True)
            steps.summary[step + "_error"] = str(error)
    with open(os.path.join(args.out, "acceptance.json"), "w") as f:
        json.dump(steps.summary, f, indent=1, default=str)
    with tarfile.open(os.path.join(args.out, "acceptance.tgz"), "w:gz") as tar:
        for path in steps.keep:
            if os.path.exists(path) and os.path.getsize(path) < 8 << 20:
                tar.add(path, arcname=os.path.basename(path))


if __name__ == "__main__":
    main()
