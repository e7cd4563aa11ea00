#!/usr/bin/env python3
"""Writes a TensorRT 11.x IEngineInspector layout of a 10.x trtexec --exportLayerInfo export.

  python3 make_trt11_fixture.py IN.graph.json OUT.graph.json

TensorRT 11 changed the JSON (NVIDIA's "Migrating IEngineInspector Usage from TensorRT 10.x
to 11.x" page): the flat "Bindings" list of names became "I/O Tensors", objects with Name,
IOMode, DataType ("Float"), Dimensions, Location, IsShapeInferenceIO and ProfileInfo
(MinShape, OptShape, MaxShape, Format); a tensor's format and data type are separate fields
("Format" and "DataType") instead of one "Format/Datatype" string. The layers are the 10.x
export's, so Kiln must read both files into the same layer table (test_engine_report).
"""
import json
import sys

# Words of the 10.x "Format/Datatype" strings that name the type, and 11.x's DataType names.
TYPES = {"FP32": "Float", "Float": "Float", "FP16": "Half", "Half": "Half", "Int8": "Int8",
         "INT8": "Int8", "Int32": "Int32", "BF16": "BFloat16", "FP8": "FP8", "Bool": "Bool",
         "UInt8": "UInt8", "Int64": "Int64"}


def split_format(text):
    words = text.split()
    kept, data_type = [], ""
    for w in words:
        if not data_type and w in TYPES:
            data_type = TYPES[w]
        else:
            kept.append(w)
    return " ".join(kept), data_type


def convert_tensor(t):
    out = {k: v for k, v in t.items() if k != "Format/Datatype"}
    if "Format/Datatype" in t:
        out["Format"], out["DataType"] = split_format(t["Format/Datatype"])
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    graph = json.load(open(src))
    produced, consumed, seen = set(), set(), {}
    for layer in graph["Layers"]:
        if not isinstance(layer, dict):
            continue
        for key in ("Inputs", "Outputs"):
            for t in layer.get(key, []):
                seen.setdefault(t["Name"], t)
                (consumed if key == "Inputs" else produced).add(t["Name"])
        for key in ("Inputs", "Outputs"):
            if key in layer:
                layer[key] = [convert_tensor(t) for t in layer[key]]
    io = []
    for name in graph.pop("Bindings"):
        t = seen[name]
        _, data_type = split_format(t["Format/Datatype"])
        dims = t["Dimensions"]
        io.append({"Name": name, "IOMode": "Output" if name in produced else "Input",
                   "DataType": data_type, "Dimensions": dims, "Location": t.get("Location", "Device"),
                   "IsShapeInferenceIO": False,
                   "ProfileInfo": [{"MinShape": dims, "OptShape": dims, "MaxShape": dims,
                                    "Format": t["Format/Datatype"] + " format (kLINEAR)"}]})
    graph["I/O Tensors"] = io
    json.dump(graph, open(dst, "w"), indent=1)


if __name__ == "__main__":
    main()
