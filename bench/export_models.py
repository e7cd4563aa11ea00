#!/usr/bin/env python3
"""Exports the benchmark models with random weights to ONNX (dynamic batch).

Runs on the device machine (it has torch, torchvision and transformers; nothing
is downloaded: weights are random, configs are the libraries' defaults).
Usage: export_models.py OUT_DIR [model ...]   (models: resnet50 mobilenet_v2 vit_b_16 bert_base)
"""
import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore")


def export(model, args, path, input_names, output_names, dynamic_axes, opset=17):
    model.eval()
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, path, input_names=input_names,
                              output_names=output_names, dynamic_axes=dynamic_axes,
                              opset_version=opset, do_constant_folding=True, dynamo=False)
        except TypeError:
            torch.onnx.export(model, args, path, input_names=input_names,
                              output_names=output_names, dynamic_axes=dynamic_axes,
                              opset_version=opset, do_constant_folding=True)
    print(f"exported {path} ({os.path.getsize(path) / 1e6:.1f} MB)", flush=True)


def vision(name, out_dir):
    import torchvision
    torch.manual_seed(0)
    # The fused multi-head-attention fast path (ViT in eval mode) has no ONNX export.
    torch.backends.mha.set_fastpath_enabled(False)
    model = getattr(torchvision.models, name)(weights=None)
    x = torch.randn(1, 3, 224, 224)
    export(model, (x,), os.path.join(out_dir, f"{name}.onnx"), ["input"], ["logits"],
           {"input": {0: "batch"}, "logits": {0: "batch"}})


def bert(out_dir):
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    config = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads
    config.attn_implementation = "eager"
    model = BertModel(config, add_pooling_layer=True)
    try:
        model.set_attn_implementation("eager")
    except Exception:
        pass
    ids = torch.randint(0, config.vocab_size, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    export(model, (ids, mask), os.path.join(out_dir, "bert_base.onnx"),
           ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
           {"input_ids": {0: "batch"}, "attention_mask": {0: "batch"},
            "last_hidden_state": {0: "batch"}, "pooler_output": {0: "batch"}})


def main():
    out_dir = sys.argv[1]
    models = sys.argv[2:] or ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base"]
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    for m in models:
        try:
            bert(out_dir) if m == "bert_base" else vision(m, out_dir)
        except Exception as error:  # one model failing must not hide the others
            print(f"export of {m} failed: {error}", flush=True)
            failed.append(m)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
