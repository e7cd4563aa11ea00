"""The zoo's printed line per model and its markdown table (zoo_bench.py).

Also `python3 bench/zoo_report.py ZOO.jsonl [...]`: one table from the JSON lines of
several device calls (header from the first call's info line).
"""
import json
import sys

BASELINE = ("PyTorch eager FP16 (`.half()`, inference_mode; channels-last + cudnn.benchmark "
            "for CNNs, the library's default SDPA attention for transformers)")

COLUMNS = ["model", "exporter", "batch", "eager ms", "Kiln ms", "Kiln / eager",
           "Kiln / the module's fastest eager", "compile ms", "Kiln / compile", "b1 eager ms", "b1 Kiln graph ms", "b1 Kiln / eager",
           "host fallbacks", "cosine", "eager FP16 cosine", "max abs", "max rel", "cold build s",
           "layers", "MFU"]


# Entries whose PyTorch baseline is another entry's module: bert_base_eager exports with eager
# attention, but its baseline runs the default SDPA attention, as bert_base_sdpa's does.
SAME_BASELINE = {"bert_base_eager": "bert_base_sdpa"}


def fastest_eager(rows):
    """(module, batch) -> the lowest eager ms any row of the table measured for it: one module
    timed in several entries (both exporters, bert_base_eager) varies run to run, and a ratio
    against its slowest run would flatter Kiln."""
    best = {}
    for r in rows:
        key = (SAME_BASELINE.get(r.get("model"), r.get("model")), r.get("batch"))
        if r.get("eager_ms"):
            best[key] = min(best.get(key, r["eager_ms"]), r["eager_ms"])
    return best


def _f(value, digits=3):
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "–"


def _precisions(build):
    """'float16 170 float32 11': a plan's layers by precision (the b1 plan may pick fp32)."""
    counts = (build or {}).get("precisions") or {}
    return " ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "–"


def line(row):
    """One printed line: ratios, fallbacks and cosine, or the error."""
    head = f"{row['entry']:28s} b{row.get('batch', 0):<4d}"
    if row.get("error"):
        return f"{head} ERROR {row['error']}"
    big, b1, acc = row.get("kiln", {}), row.get("kiln_b1", {}), (row.get("accuracy_worst") or row.get("accuracy") or row.get("accuracy_b1") or {})
    parts = [f"eager {_f(row.get('eager_ms'))} kiln {_f(big.get('median_ms'))} ms "
             f"{_ratio(row.get('eager_ms'), big.get('median_ms'))}",
             f"b1 eager {_f(row.get('eager_b1_ms'))} kiln(graph) {_f(b1.get('median_ms'))} ms "
             f"{_ratio(row.get('eager_b1_ms'), b1.get('median_ms'))}",
             f"fallbacks {big.get('fallbacks', '?')}/{b1.get('fallbacks', '?')}",
             f"cos {_f(acc.get('cosine'), 6)} (b{acc.get('batch', '?')}, eager fp16 "
             f"{_f((row.get('eager_fp16_accuracy') or {}).get('cosine'), 6)})",
             f"build {_f(row.get('build', {}).get('build_s'), 1)}+"
             f"{_f(row.get('build_b1', {}).get('build_s'), 1)} s",
             f"layers {_precisions(row.get('build'))} / {_precisions(row.get('build_b1'))}"]
    if row.get("compile_ms"):
        parts.insert(1, f"compile {_f(row['compile_ms'])} ms "
                        f"{_ratio(row['compile_ms'], big.get('median_ms'))}")
    errors = [f"{k}: {row[k]['error']}" for k in ("build", "build_b1", "kiln", "kiln_b1")
              if isinstance(row.get(k), dict) and row[k].get("error")]
    if row.get("seconds"):
        parts.append(f"{row['seconds']:.0f} s")
    return " | ".join([head + " " + parts[0]] + parts[1:] + errors)


def _cells(row, fastest=None):
    if row.get("error"):
        return [row["model"], row["exporter"], str(row.get("batch", "")),
                f"**error** ({row.get('stage', '?')}): {_md(row['error'])}"] + [""] * (len(COLUMNS) - 4)
    big, b1, acc = row.get("kiln", {}), row.get("kiln_b1", {}), (row.get("accuracy_worst") or row.get("accuracy") or row.get("accuracy_b1") or {})
    kms = big.get("median_ms") or None
    compile_ms = row.get("compile_ms")
    compile_cell = _f(compile_ms) + (f" ({row['compile_date']})" if row.get("compile_date") else "")
    fallbacks = f"{big.get('fallbacks', '–')} / {b1.get('fallbacks', '–')}"
    if big.get("fallback_ops"):
        fallbacks += " (" + ", ".join(big["fallback_ops"]) + ")"
    return [row["model"], row["exporter"], str(row["batch"]), _f(row.get("eager_ms")),
            _f(kms) if kms else "error: " + _md(big.get("error", "")),
            _ratio(row.get("eager_ms"), kms),
            _ratio((fastest or {}).get((SAME_BASELINE.get(row["model"], row["model"]),
                                        row["batch"])), kms),
            compile_cell if compile_ms else "–",
            _ratio(compile_ms, kms), _f(row.get("eager_b1_ms")),
            _f(b1.get("median_ms")) if b1.get("median_ms") else "error: " + _md(b1.get("error", "")),
            _ratio(row.get("eager_b1_ms"), b1.get("median_ms")), fallbacks,
            (_f(acc.get("cosine"), 6) + f" (b{acc['batch']})") if "cosine" in acc
            else _md(acc.get("error", "–")),
            _f((row.get("eager_fp16_accuracy") or {}).get("cosine"), 6),
            _f(acc.get("max_abs"), 4), _f(acc.get("max_rel"), 4),
            f"{_f(row.get('build', {}).get('build_s'), 1)} / "
            f"{_f(row.get('build_b1', {}).get('build_s'), 1)}",
            str(row.get("build", {}).get("layers", "–")),
            f"{row['mfu'] * 100:.1f}%" if row.get("mfu") else "–"]


def _md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")[:200]


def table(info, rows):
    """The markdown table, titled with device, date, torch version and the baseline."""
    if info.get("device") == "CPU":
        method = ("CPU check (`zoo_bench.py --cpu`): batch 1, Kiln's CPU plan (FP32) against "
                  "PyTorch FP32 on the CPU; times are not benchmarks.")
    else:
        method = (f"Baseline: {BASELINE}. Kiln: FP16 plan (`kiln build --fp16 "
                  f"--optimization-level {info.get('opt_level', 2)}`, cold), `kiln run PLAN "
                  "--no-data-transfers`, GPU compute median; batch 1 with `--cuda-graph`. "
                  "Accuracy: the first output of Kiln's FP16 plan against PyTorch FP32 (TF32 "
                  "off) on the same input, the worse of the two batches read back; max rel = "
                  "max abs error / max |reference|; eager FP16 cosine: PyTorch's own FP16 run "
                  "against the same FP32 reference at batch 1. Host fallbacks and cold build: GPU-bound "
                  "plan / batch-1 plan. The module's fastest eager: the lowest eager time of the "
                  "same PyTorch module at that batch in this table (both exporters' entries; "
                  "bert_base_eager's baseline is bert_base_sdpa's module).")
    lines = [f"### Zoo: {info['device']}, {info['date']}, torch {info['torch']}", "", method, "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    fastest = fastest_eager(rows)
    lines += ["| " + " | ".join(_cells(r, fastest)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main():
    info, rows = None, []
    for path in sys.argv[1:]:
        with open(path) as f:
            for text in f:
                doc = json.loads(text)
                if "info" in doc:
                    info = info or doc["info"]
                else:
                    rows.append(doc)
    sys.stdout.write(table(info or {"device": "?", "date": "?", "torch": "?"}, rows))


if __name__ == "__main__":
    main()
