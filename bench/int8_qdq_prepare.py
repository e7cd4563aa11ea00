#!/usr/bin/env python3
"""The ONNX Runtime QDQ half of bench/int8_bench.py (step 4), run by it as a child process
in parallel with the rest: a float model quantized with quantize_static (QDQ, per-channel,
int8 activations and weights, 16 random calibration inputs) and ONNX Runtime's CPU outputs
on fresh inputs as the reference.

Usage: int8_qdq_prepare.py WORK [--seed=N] [--dry-cpu] [--qdq-model=FLOAT_ONNX]
"""
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def prepare_qdq(work, given, dry, seed):
    """The float model (`given`, or small_cnn when `dry`, else the MobileNetV2 export),
    quantize_static, ONNX Runtime's reference outputs. Writes work/qdq_meta.json."""
    import numpy as np
    import onnx
    from onnxruntime import InferenceSession, SessionOptions
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    os.makedirs(work, exist_ok=True)
    meta = {}
    t0 = time.time()
    if given or dry:  # a float model to quantize instead of the MobileNetV2 export
        float_path = given or os.path.join(ROOT, "tests", "data", "quant", "small_cnn.onnx")
        m = onnx.load(float_path)
        inits = {i.name for i in m.graph.initializer}
        dims = next(i for i in m.graph.input if i.name not in inits).type.tensor_type.shape.dim
        shape = tuple(d.dim_value for d in dims[1:])
        name = os.path.splitext(os.path.basename(float_path))[0]
    else:
        import torch
        import torchvision
        torch.set_num_threads(4)
        torch.manual_seed(0)
        model = torchvision.models.mobilenet_v2(weights=None).eval()
        float_path = os.path.join(work, "mobilenet_v2.onnx")
        sys.path.insert(0, HERE)
        import export_models
        export_models.export(model, (torch.randn(1, 3, 224, 224),), float_path, ["input"],
                             ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}, opset=17)
        shape, name = (3, 224, 224), "mobilenet_v2"
    meta["export_s"] = round(time.time() - t0, 1)
    meta["model"] = name
    m = onnx.load(float_path)
    inits = {i.name for i in m.graph.initializer}
    inp = next(i.name for i in m.graph.input if i.name not in inits)
    prepared = os.path.join(work, name + "_prepared.onnx")
    try:
        from onnxruntime.quantization.shape_inference import quant_pre_process
        quant_pre_process(float_path, prepared, skip_symbolic_shape=True)
        meta["pre_process"] = "quant_pre_process"
    except Exception as error:  # optional: quantize the exported model as it is
        shutil.copy(float_path, prepared)
        meta["pre_process"] = f"skipped ({type(error).__name__}: {str(error)[:120]})"
    rng = np.random.default_rng(seed + 1)
    calib = [rng.standard_normal((1, *shape)).astype(np.float32) for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{inp: c} for c in calib])

        def get_next(self):
            return next(self.items, None)

    qdq = os.path.join(work, name + "_qdq.onnx")
    t1 = time.time()
    quantize_static(prepared, qdq, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    meta["quantize_s"] = round(time.time() - t1, 1)
    x = np.random.default_rng(seed + 2).standard_normal((8 if not dry else 4, *shape)).astype(np.float32)
    x_path = os.path.join(work, "qdq_input.npy")
    np.save(x_path, x)
    options = SessionOptions()
    options.intra_op_num_threads = 4
    expected = InferenceSession(qdq, options, providers=["CPUExecutionProvider"]).run(None, {inp: x})[0]
    np.save(os.path.join(work, "qdq_expected.npy"), expected.astype(np.float32))
    float_out = InferenceSession(prepared, options, providers=["CPUExecutionProvider"]).run(None, {inp: x})[0]
    np.save(os.path.join(work, "float_expected.npy"), float_out.astype(np.float32))
    # ONNX Runtime without graph optimizations runs the Q/DQ nodes one by one (the float
    # simulation); with them (the reference) it fuses them into QLinearConv etc. Their
    # difference is how far two valid executions of the same QDQ model drift apart.
    from onnxruntime import GraphOptimizationLevel
    plain = SessionOptions()
    plain.intra_op_num_threads = 4
    plain.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    simulated = InferenceSession(qdq, plain, providers=["CPUExecutionProvider"]).run(None, {inp: x})[0]
    np.save(os.path.join(work, "qdq_simulated.npy"), simulated.astype(np.float32))
    # The output's quantization step: the scale of the DequantizeLinear writing it.
    q = onnx.load(qdq)
    values = {i.name: onnx.numpy_helper.to_array(i) for i in q.graph.initializer}
    out_name = q.graph.output[0].name
    step_size = None
    for node in q.graph.node:
        if out_name in node.output and node.op_type == "DequantizeLinear":
            scale = values.get(node.input[1])
            step_size = float(np.max(scale)) if scale is not None else None
    counts = {}
    for node in q.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    meta.update({"qdq": qdq, "float": prepared, "input": inp, "input_npy": x_path,
                 "batch": int(x.shape[0]), "output": out_name, "output_step": step_size,
                 "qdq_nodes": counts, "shape": list(shape),
                 "ort_float_vs_qdq_top1": float((float_out.argmax(1) == expected.argmax(1)).mean()),
                 "ort_simulated_vs_reference_max_abs": float(np.abs(simulated - expected).max()),
                 "logits_range": float(expected.max() - expected.min())})
    with open(os.path.join(work, "qdq_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta), flush=True)


def main(argv):
    options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    work = next(a for a in argv if not a.startswith("--"))
    prepare_qdq(work, options.get("qdq-model", ""), "--dry-cpu" in argv,
                int(options.get("seed", "20261124")))


if __name__ == "__main__":
    main(sys.argv[1:])
