"""The summary of bench/int8_bench.py: its targets, the ratios against our FP16, eager FP16
and TensorRT INT8, and the table it prints at the end."""

TRT_INT8_IMG_S = (88500.0, 91800.0)  # MLPerf offline, one H100 SXM, batch 2048
TARGETS = {"int8_over_fp16": 1.6, "int8_over_eager_fp16": 4.0, "top1": 0.95}


def summarize(RESULTS, BATCH, DRY, elapsed_s):
    """The ratios, the targets' checks and the summary table, into RESULTS and printed."""
    st = RESULTS["steps"]
    i8, f16, eager = st.get("int8 run"), st.get("fp16 run"), st.get("pytorch eager fp16")
    ratios = {}
    if i8 and f16:
        ratios["int8_over_fp16"] = i8["img_s"] / f16["img_s"]
    if i8 and eager:
        ratios["int8_over_eager_fp16"] = i8["img_s"] / eager["img_s"]
    if i8 and not DRY:
        ratios["int8_over_tensorrt"] = [i8["img_s"] / t for t in TRT_INT8_IMG_S]
    RESULTS["ratios"] = ratios
    acc = st.get("top-1 vs FP32 (kiln compare)") or st.get("top-1 vs FP32 (plan batch)") \
        or st.get("top-1 vs FP32 (CPU INT8 fallback)")
    checks = {}
    if "int8_over_fp16" in ratios:
        checks["int8_over_fp16 >= 1.6"] = ratios["int8_over_fp16"] >= TARGETS["int8_over_fp16"]
    if "int8_over_eager_fp16" in ratios:
        checks["int8_over_eager_fp16 >= 4"] = ratios["int8_over_eager_fp16"] >= TARGETS["int8_over_eager_fp16"]
    if acc:
        checks["top1 >= 95%"] = acc["top1_agreement"] >= TARGETS["top1"]
    RESULTS["checks"] = checks

    rows = []
    cal = st.get("calibrate")
    errors = RESULTS["errors"]
    for key in ("model", "samples", "cpu probe"):
        if key in errors:
            rows.append((key, "ERROR: " + errors[key]))
    if cal:
        rows.append(("calibration (CPU reference)", f"{cal['samples']} samples, entropy, {cal['wall_s']:.1f} s wall, {cal['tensors']} tensors"))
    elif "calibrate" in errors:
        rows.append(("calibration (CPU reference)", "ERROR: " + errors["calibrate"]))
    for key, label in (("int8 build", "INT8+FP16 build b%d" % BATCH), ("fp16 build", "FP16 build b%d" % BATCH)):
        b = st.get(key)
        if b:
            rows.append((label, "reused (build_bench)" if b.get("reused") else f"{b['build_s']} s, {b['layer_precisions']}"))
        elif key in errors:
            rows.append((label, "ERROR: " + errors[key]))
    for key, label in (("int8 run", "Kiln INT8"), ("fp16 run", "Kiln FP16"), ("pytorch eager fp16", "PyTorch eager FP16")):
        r = st.get(key)
        rows.append((label + f" b{BATCH}", f"{r['median_ms']:.3f} ms, {r['img_s']:.0f} img/s" if r
                     else ("ERROR: " + errors[key] if key in errors else "not run")))
    if "int8_over_fp16" in ratios:
        rows.append(("INT8 / our FP16", f"{ratios['int8_over_fp16']:.2f}x (target >= 1.6x: {'met' if checks['int8_over_fp16 >= 1.6'] else 'NOT met'})"))
    if "int8_over_eager_fp16" in ratios:
        rows.append(("INT8 / eager FP16", f"{ratios['int8_over_eager_fp16']:.2f}x (target >= 4x: {'met' if checks['int8_over_eager_fp16 >= 4'] else 'NOT met'})"))
    if "int8_over_tensorrt" in ratios:
        lo, hi = ratios["int8_over_tensorrt"]
        rows.append(("vs TensorRT INT8 88.5-91.8k", f"{100 * hi:.1f}-{100 * lo:.1f}% of it (MLPerf batch 2048 vs our b{BATCH})"))
    for key in ("top-1 vs FP32 (kiln compare)", "top-1 vs FP32 (plan batch)", "top-1 vs FP32 (CPU INT8 fallback)", "fp16 top-1 vs FP32 (context)"):
        a = st.get(key)
        if a:
            extra = ""
            if "fp32_distinct_top1_classes" in a:
                extra = (f"; FP32 top-1 spans {a['fp32_distinct_top1_classes']} classes; mean-centered "
                         f"top-1 {a['top1_centered_agree_rows']}/{a['rows']}")
            rows.append((key, f"{a['top1_agree_rows']}/{a['rows']} ({100 * a['top1_agreement']:.1f}%), cos {a['cosine']:.5f}, max abs {a['max_abs']:.3g}{extra}"))
        elif key in RESULTS["errors"]:
            rows.append((key, "ERROR: " + RESULTS["errors"][key]))
    meta = st.get("qdq prepare")
    if meta and meta.get("output_step"):
        rows.append((f"QDQ {meta['model']} ORT unopt. vs opt.", f"max abs {meta['ort_simulated_vs_reference_max_abs'] / meta['output_step']:.2f} steps (step {meta['output_step']:.4g}; the reference's own spread)"))
    elif "qdq prepare" in RESULTS["errors"]:
        rows.append(("QDQ prepare", "ERROR: " + RESULTS["errors"]["qdq prepare"]))
    for backend in ("cuda", "cpu"):
        for kind in ("direct", "plan"):
            key = f"qdq {backend} {kind}"
            q = st.get(key)
            if q:
                steps = f"{q['max_abs_steps']:.2f} steps (mean {q['mean_abs_steps']:.2f}), " if "max_abs_steps" in q else ""
                sim = f"; vs ORT unoptimized {q['max_abs_steps_vs_ort_simulated']:.2f} steps" if "max_abs_steps" in q else ""
                rows.append((f"QDQ {st.get('qdq prepare', {}).get('model', '')} {backend} {kind}",
                             f"max abs {steps}{100 * q['max_abs_over_range']:.2f}% of range, top-1 {q['top1_agree_rows']}/{q['rows']}{sim}"))
            elif key in RESULTS["errors"]:
                rows.append((f"QDQ {st.get('qdq prepare', {}).get('model', '')} {backend} {kind}",
                             "ERROR: " + RESULTS["errors"][key]))
    width = max(len(r[0]) for r in rows) if rows else 10
    print("\n=== INT8 summary" + (" (--dry-cpu: CPU backend, small model)" if DRY else "")
          + f", {elapsed_s:.0f} s")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    RESULTS["table"] = [list(r) for r in rows]
