#!/usr/bin/env python3
"""Writes the advisor fixtures (tests/inspector/test_advisor.cpp): small engine exports in
trtexec's --exportLayerInfo layout (Kiln's own keys where a rule reads them), each planting
one rule's problem next to layers that must not trigger it. Run from this folder."""
import json


def tensor(name, dims, fmt):
    return {"Name": name, "Location": "Device", "Dimensions": dims, "Format/Datatype": fmt}


FP32, FP16 = "Row major linear FP32", "Row major linear FP16"
HWC16 = "Channel major FP16 format where channel % 8 == 0 (HWC8)"


def conv(name, c, k, fmt, tactic, groups=1, layer_type="CaskConvolution", ms=0.1):
    return {"Name": name, "LayerType": layer_type,
            "Inputs": [tensor(name + ".in", [8, c, 56, 56], fmt)],
            "Outputs": [tensor(name + ".out", [8, k, 56, 56], fmt)],
            "ParameterType": "Convolution", "Kernel": [3, 3], "Groups": groups, "OutMaps": k,
            "Weights": {"Type": "Half", "Count": k * c // groups * 9},
            "TacticName": tactic, "TimeMs": ms}


def write(name, doc):
    with open(name, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


# host-fallback: a Kiln CUDA plan's report (kiln inspect PLAN --json) where NonZero's winning
# tactic ran on the host when the build timed it; TopK is placed on the host by a
# `kiln run --json` document only.
def kiln_layer(name, op, tactic, detail, ms):
    return {"Name": name, "LayerType": op, "OpType": op, "Precision": "FP32",
            "Inputs": [tensor(name + ".in", [1, 100], FP32)],
            "Outputs": [tensor(name + ".out", [1, 100], FP32)],
            "TacticName": tactic, "TimeMs": ms,
            "Candidates": [{"TacticName": tactic, "Source": "kiln", "Precision": "fp32",
                            "TimeMs": ms, "Detail": detail}]}


write("host_fallback.graph.json", {
    "Origin": "kiln plan", "Backend": "cuda",
    "Layers": [kiln_layer("relu", "Relu", "cuda.kiln", "gpu: kiln:elementwise", 0.01),
               kiln_layer("nonzero", "NonZero", "cuda.kiln",
                          "host-fallback (no GPU kernel for NonZero)", 0.5),
               kiln_layer("topk", "TopK", "cuda.kiln", "gpu: kiln:topk", 0.1)],
    "Bindings": ["relu.in", "topk.out"]})
write("host_fallback.run.json", {
    "backend": "cuda", "host_fallback_layers": 1,
    "layers": [{"name": "relu", "op_type": "Relu", "placement": "gpu", "note": ""},
               {"name": "topk", "op_type": "TopK", "placement": "host-fallback",
                "note": "int64 K on the host"}]})

# slice-changes-type: one Slice converts FP32 -> FP16, the other keeps FP16.
write("slice_changes_type.graph.json", {"Layers": [
    {"Name": "Slice_5", "LayerType": "Slice", "Inputs": [tensor("a", [1, 64, 32], FP32)],
     "Outputs": [tensor("b", [1, 32, 32], FP16)], "TimeMs": 0.02},
    {"Name": "Slice_6", "LayerType": "Slice", "Inputs": [tensor("b", [1, 32, 32], FP16)],
     "Outputs": [tensor("c", [1, 16, 32], FP16)], "TimeMs": 0.01}]})

# unfused-qdq: a Quantize TensorRT ran as a Scale layer and a standalone Dequantize; the
# convolution that folded its Q/DQ and the quantizing input reformat are fine.
int8 = "Thirty-two wide channel vectorized row major Int8 format"
write("unfused_qdq.graph.json", {"Layers": [
    {"Name": "QuantizeLinear_2", "LayerType": "Reformat", "Origin": "QDQ",
     "Inputs": [tensor("x", [1, 32, 8, 8], FP32)], "Outputs": [tensor("xq", [1, 32, 8, 8], int8)],
     "TimeMs": 0.01},
    {"Name": "w + QuantizeLinear_3 + Conv_4", "LayerType": "CaskConvolution",
     "Inputs": [tensor("xq", [1, 32, 8, 8], int8)], "Outputs": [tensor("y", [1, 32, 8, 8], FP32)],
     "ParameterType": "Convolution", "Kernel": [1, 1], "Groups": 1, "OutMaps": 32,
     "Weights": {"Type": "Int8", "Count": 1024}, "TimeMs": 0.02},
    {"Name": "QuantizeLinear_7", "LayerType": "Scale",
     "Inputs": [tensor("y", [1, 32, 8, 8], FP32)], "Outputs": [tensor("yq", [1, 32, 8, 8], int8)],
     "TimeMs": 0.03},
    {"Name": "DequantizeLinear_9", "LayerType": "Dequantize",
     "Inputs": [tensor("yq", [1, 32, 8, 8], int8)], "Outputs": [tensor("z", [1, 32, 8, 8], FP32)],
     "TimeMs": 0.04}]})

# conv-not-on-tensor-cores: a 3-channel FP16 stem (a tensor-core kernel, but C < 8), an FP16
# convolution on a pre-tensor-core kernel, a depthwise one (info), an FP16 convolution on an
# xmma kernel and an FP32 one on a CUDA-core kernel (both fine).
write("conv_tensor_cores.graph.json", {"Layers": [
    conv("stem", 3, 64, FP16, "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_nchwkcrs_nchw", ms=0.3),
    conv("slow", 64, 64, FP16, "implicit_convolve_hhhh_kernel_tiled", ms=0.5),
    conv("dw", 64, 64, FP16, "", groups=64, layer_type="CudaDepthwiseConvolution", ms=0.05),
    conv("fast", 64, 64, HWC16, "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwckrsc_nhwc"),
    conv("fp32", 64, 64, FP32, "implicit_convolve_sgemm")]})

# opt-shape-far: TensorRT 11's I/O Tensors with one profile (batch 1..32, opt 1); the test
# runs it at batch 16 (far) and 2 (within 2x).
write("opt_shape_far.graph.json", {
    "Layers": [{"Name": "conv", "LayerType": "CaskConvolution",
                "Inputs": [{"Name": "images", "Location": "Device", "Dimensions": [-1, 3, 224, 224],
                            "Format": "Row major linear", "DataType": "Float"}],
                "Outputs": [{"Name": "y", "Location": "Device", "Dimensions": [-1, 8, 224, 224],
                             "Format": "Row major linear", "DataType": "Float"}],
                "ParameterType": "Convolution", "Kernel": [3, 3], "Groups": 1, "OutMaps": 8,
                "TimeMs": 0.2}],
    "I/O Tensors": [
        {"Name": "images", "IOMode": "Input", "DataType": "Float", "Dimensions": [-1, 3, 224, 224],
         "Location": "Device", "IsShapeInferenceIO": False,
         "ProfileInfo": [{"MinShape": [1, 3, 224, 224], "OptShape": [1, 3, 224, 224],
                          "MaxShape": [32, 3, 224, 224],
                          "Format": "Row major linear FP32 format (kLINEAR)"}]},
        {"Name": "y", "IOMode": "Output", "DataType": "Float", "Dimensions": [-1, 8, 224, 224],
         "Location": "Device", "IsShapeInferenceIO": False}]})

# below-roofline: an FP16 GEMM of 2.1 GFLOP taking 1 ms (2 TFLOP/s: 0.2% of an H100's) and a
# reformat moving 6 MiB in 0.3 ms (under 1% of its bandwidth), both costly; a ReLU near its
# memory roof; a slow but cheap copy (under 5% of the time).
write("below_roofline.graph.json", {"Layers": [
    {"Name": "gemm", "LayerType": "MatrixMultiply", "Inputs": [tensor("a", [1024, 1024], FP16)],
     "Outputs": [tensor("b", [1024, 1024], FP16)], "ParameterType": "MatrixMultiply",
     "OutMaps": 1024, "Weights": {"Type": "Half", "Count": 1048576}, "TimeMs": 1.0},
    {"Name": "relu", "LayerType": "Activation", "Inputs": [tensor("b", [1024, 1024], FP16)],
     "Outputs": [tensor("c", [1024, 1024], FP16)], "TimeMs": 0.005},
    {"Name": "to_fp32", "LayerType": "Reformat", "Inputs": [tensor("c", [1024, 1024], FP16)],
     "Outputs": [tensor("d", [1024, 1024], FP32)], "TimeMs": 0.3},
    {"Name": "tiny_copy", "LayerType": "Reformat", "Inputs": [tensor("e", [16], FP32)],
     "Outputs": [tensor("f", [16], FP32)], "TimeMs": 0.01}]})
