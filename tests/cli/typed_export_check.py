"""Helpers of test_typed_export.sh (the strongly typed ONNX export, issue 24).

  make DIR                      writes DIR/chain.onnx (Conv, Relu, shape ops, MatMul, Add,
                                LayerNormalization, a ConstantOfShape and a Constant scale,
                                Softmax; random non-zero weights) and DIR/island.json, a
                                constraints file: '*' fp16, the MatMul pinned to fp32
  check ORIG EXPORT [--island N]... [--reduced N]... [--keep-io-types] [--dtype fp16|bf16]
        [--expect-off]          onnx.checker full check; node names kept; the `kiln:`
                                metadata; each island node reads float32 and each reduced
                                node reads the reduced type; ONNX Runtime (CPU) on both
                                models with the same random inputs: the export within the
                                stated tolerance of the FP32 model, and not equal to it
                                (--expect-off: outside it, for an export that lacks a
                                needed FP32 island)
  qdq ORIG EXPORT DATA_DIR PLAN_ERROR
                                an INT8 Q/DQ export: checker full check, Q/DQ pairs and
                                int8 weights behind per-channel DequantizeLinear nodes,
                                the `kiln:` metadata; ONNX Runtime on every .npy sample of
                                DATA_DIR: max abs error against FP32 within 1.5 x
                                PLAN_ERROR (+1e-3; the Kiln INT8 plan's own max abs error
                                on the same samples) and not zero, cosine >= 0.999, same
                                top-1 class
  tables A.json B.json [NODE...]
                                per ONNX node, the precision of the layer holding it in two
                                `kiln inspect --json` reports agrees (nodes in both, or the
                                NODEs named)

Exit 0 on success, 1 with the reason on failure. test_typed_export.sh checks for onnx and
onnxruntime first (skipping loudly when they are missing).
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The FP16 tolerance: kiln debug precision's default (|err| <= atol + rtol * |ref|, as
# kiln compare passes). Exports with the needed FP32 islands land near 1e-4 on these
# softmax outputs; fp16_overflow.onnx all in fp16 misses it by 6e-3.
ATOL = 1e-2
RTOL = 1e-2


def make(folder):
    rng = np.random.default_rng(7)

    def weight(name, shape, scale=0.5):
        values = rng.uniform(-scale, scale, size=shape).astype(np.float32)
        values[values == 0] = 0.25
        return numpy_helper.from_array(values, name)

    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["r_shape"], name="shape"),
        helper.make_node("Gather", ["r_shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus_one"], ["flat_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "flat_shape"], ["flat"], name="reshape"),
        helper.make_node("MatMul", ["flat", "fc_w"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "fc_b"], ["fc"], name="fc_bias"),
        helper.make_node("LayerNormalization", ["fc", "ln_scale", "ln_bias"], ["ln"],
                         name="layer_norm", axis=-1, epsilon=1e-5),
        helper.make_node("ConstantOfShape", ["one_shape"], ["ones"], name="ones",
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Mul", ["ln", "ones"], ["ln_scaled"], name="scale_ones"),
        helper.make_node("Constant", [], ["temperature"], name="temperature",
                         value=numpy_helper.from_array(np.array(0.8, np.float32))),
        helper.make_node("Mul", ["ln_scaled", "temperature"], ["logits"], name="scale_temp"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    inits = [
        weight("conv_w", (4, 3, 3, 3)), weight("conv_b", (4,)),
        weight("fc_w", (4 * 6 * 6, 10), 0.2), weight("fc_b", (10,)),
        weight("ln_scale", (10,), 1.0), weight("ln_bias", (10,)),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "axes0"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
        numpy_helper.from_array(np.array([10], np.int64), "one_shape"),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, f"{folder}/chain.onnx")
    with open(f"{folder}/island.json", "w") as f:
        json.dump({"format": "kiln-constraints", "version": 1, "precision_constraints": "obey",
                   "layer_precisions": [{"layer": "*", "precision": "fp16"},
                                        {"layer": "matmul", "precision": "fp32"}],
                   "layer_output_types": [], "note": "test: the MatMul stays fp32"}, f)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def value_types(model):
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {}
    g = inferred.graph
    for v in list(g.input) + list(g.output) + list(g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    return types


def run_ort(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    typed = {}
    for i in session.get_inputs():
        dtype = {"tensor(float16)": np.float16, "tensor(bfloat16)": None}.get(i.type, np.float32)
        if dtype is None:
            fail(f"input '{i.name}' is bfloat16: ONNX Runtime's CPU provider cannot feed it")
        typed[i.name] = feeds[i.name].astype(dtype)
    return [np.asarray(o, dtype=np.float32) for o in session.run(None, typed)]


def check(argv):
    orig_path, export_path = argv[0], argv[1]
    islands, reduced, keep_io, dtype, expect_off = [], [], False, "fp16", False
    i = 2
    while i < len(argv):
        if argv[i] == "--island":
            islands.append(argv[i + 1]); i += 2
        elif argv[i] == "--reduced":
            reduced.append(argv[i + 1]); i += 2
        elif argv[i] == "--dtype":
            dtype = argv[i + 1]; i += 2
        elif argv[i] == "--keep-io-types":
            keep_io = True; i += 1
        elif argv[i] == "--expect-off":
            expect_off = True; i += 1
        else:
            fail(f"unknown option {argv[i]}")
    low = TensorProto.FLOAT16 if dtype == "fp16" else TensorProto.BFLOAT16
    orig, export = onnx.load(orig_path), onnx.load(export_path)
    onnx.checker.check_model(export, full_check=True)
    names = {n.name for n in export.graph.node}
    missing = [n.name for n in orig.graph.node if n.name not in names]
    if missing:
        fail(f"node names lost: {missing}")
    meta = {p.key: p.value for p in export.metadata_props}
    if not any(k.startswith("kiln:") for k in meta) or dtype not in meta.get("kiln:precision", ""):
        fail(f"no kiln: metadata naming {dtype}: {meta}")
    types = value_types(export)
    nodes = {n.name: n for n in export.graph.node}
    for name in islands + reduced:
        want = TensorProto.FLOAT if name in islands else low
        floats = [v for v in nodes[name].input
                  if v and types.get(v) in (TensorProto.FLOAT, TensorProto.FLOAT16,
                                            TensorProto.BFLOAT16)]
        wrong = [v for v in floats if types[v] != want]
        if not floats or wrong:
            fail(f"node '{name}' should read {TensorProto.DataType.Name(want)}; "
                 f"inputs {[(v, types.get(v)) for v in nodes[name].input]}")
    io = list(export.graph.input) + list(export.graph.output)
    io_types = {v.name: v.type.tensor_type.elem_type for v in io}
    if keep_io and any(t != TensorProto.FLOAT for t in io_types.values()):
        fail(f"--keep-io-types: graph inputs/outputs must stay float32: {io_types}")
    if not keep_io and dtype == "fp16" and any(t != low for t in io_types.values()):
        fail(f"graph inputs/outputs should be float16 here: {io_types}")
    casts = sum(1 for n in export.graph.node if n.op_type == "Cast")
    if casts == 0 and (islands or keep_io):
        fail("no Cast nodes in the export, though it has float32 nodes or interface")
    if dtype == "bf16":
        print(f"checker passed, {casts} casts (bf16: ONNX Runtime's CPU provider lacks bf16 kernels)")
        return
    rng = np.random.default_rng(11)
    feeds = {}
    for v in orig.graph.input:
        dims = [d.dim_value if d.dim_value > 0 else 2 for d in v.type.tensor_type.shape.dim]
        feeds[v.name] = rng.uniform(-1, 1, size=dims).astype(np.float32)
    ref, got = run_ort(orig_path, feeds), run_ort(export_path, feeds)
    for r, g in zip(ref, got):
        err = np.abs(r - g)
        bound = ATOL + RTOL * np.abs(r)
        if expect_off:
            if np.all(err <= bound):
                fail(f"export expected outside atol {ATOL} rtol {RTOL}, max abs {err.max()}")
            print(f"outside the tolerance as expected: max abs error {np.nanmax(err):.2e}, "
                  f"{int(np.isnan(g).sum())} NaN")
            continue
        if not np.all(err <= bound):
            fail(f"export differs from FP32 beyond atol {ATOL} rtol {RTOL}: max abs {err.max()}")
        if err.max() == 0:
            fail("export equals the FP32 model exactly: nothing ran in reduced precision")
        if np.abs(r).max() == 0:
            fail("reference output is all zeros")
        print(f"checker passed; {casts} casts; max abs error vs FP32 {err.max():.2e} "
              f"(tolerance atol {ATOL} + rtol {RTOL})")


def qdq(orig_path, export_path, data_dir, plan_error):
    import glob
    import onnxruntime as ort
    export = onnx.load(export_path)
    onnx.checker.check_model(export, full_check=True)
    ops = [n.op_type for n in export.graph.node]
    inits = {t.name: t for t in export.graph.initializer}
    weight_dqs = [n for n in export.graph.node if n.op_type == "DequantizeLinear"
                  and inits.get(n.input[0]) is not None
                  and inits[n.input[0]].data_type == TensorProto.INT8
                  and len(inits[n.input[1]].dims) == 1]
    if ops.count("QuantizeLinear") == 0 or not weight_dqs:
        fail(f"no activation Q/DQ or per-channel int8 weights: {ops}")
    if not any(p.key.startswith("kiln:") for p in export.metadata_props):
        fail("no kiln: metadata")
    a = ort.InferenceSession(orig_path, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(export_path, providers=["CPUExecutionProvider"])
    name = a.get_inputs()[0].name
    worst, samples = 0.0, sorted(glob.glob(f"{data_dir}/*.npy"))
    if not samples:
        fail(f"no .npy samples in {data_dir}")
    for f in samples:
        x = np.load(f).astype(np.float32)
        x = x[None] if x.ndim == 3 else x
        r, g = a.run(None, {name: x})[0], b.run(None, {name: x})[0]
        cosine = float((r * g).sum() / np.linalg.norm(r) / np.linalg.norm(g))
        if cosine < 0.999 or (r.argmax(-1) != g.argmax(-1)).any():
            fail(f"{f}: cosine {cosine:.5f}, top-1 {r.argmax(-1)} vs {g.argmax(-1)}")
        worst = max(worst, float(np.abs(r - g).max()))
    bound = 1.5 * plan_error + 1e-3
    if not 0 < worst <= bound:
        fail(f"max abs error {worst:.4g} against FP32 is not in (0, {bound:.4g}]")
    print(f"{len(weight_dqs)} int8 weight layers; ORT max abs error vs FP32 {worst:.4g} "
          f"(the Kiln INT8 plan's: {plan_error:.4g})")


def node_precisions(path):
    with open(path) as f:
        report = json.load(f)
    out = {}
    for layer in report["Layers"]:
        metadata = layer.get("Metadata", "")  # "[ONNX Layer: a, b]"
        if not metadata.startswith("[ONNX Layer: "):
            continue
        for node in metadata[len("[ONNX Layer: "):-1].split(", "):
            out[node] = layer.get("Precision")
    return out


def tables(a_path, b_path, only):
    a, b = node_precisions(a_path), node_precisions(b_path)
    common = sorted(set(a) & set(b))
    if only:
        missing = [n for n in only if n not in common]
        if missing:
            fail(f"nodes not in both tables: {missing}")
        common = only
    if not common:
        fail("no ONNX node is in both layer tables")
    diff = [(n, a[n], b[n]) for n in common if a[n] != b[n]]
    if diff:
        fail(f"per-node precisions differ: {diff}")
    print(f"{len(common)} ONNX nodes: same precision in both tables")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "check":
        check(sys.argv[2:])
    elif sys.argv[1] == "qdq":
        qdq(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    elif sys.argv[1] == "tables":
        tables(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        fail(f"unknown command {sys.argv[1]}")
