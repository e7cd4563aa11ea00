#!/usr/bin/env python3
"""Exports small models with the zoo's structure (the same transformers classes, exporter
and settings as bench/zoo_models.py, a few layers of a few features) into OUT, for
reproducing a device finding on the development machine, which has no PyTorch:
  python3 bench/tiny_exports.py OUT [bert_sdpa,...]
Each model is written as OUT/<name>.onnx (a few hundred KB) with OUT/<name>.npz holding
one input set."""
import os
import sys

import numpy as np
import torch


def tiny_bert_sdpa():
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=64)
    return BertModel(config)  # the library's default attention: SDPA, as the zoo's


MODELS = {"bert_sdpa": (tiny_bert_sdpa, ("input_ids", "attention_mask"),
                        ("last_hidden_state", "pooler_output"))}


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zoo_models  # the zoo's wrapper and export settings
    out = sys.argv[1]
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(MODELS)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        make, inputs, outputs = MODELS[name]
        model = zoo_models.HFOutputs(make().eval(), inputs, outputs)
        ids = torch.randint(0, 100, (zoo_models.EXPORT_BATCH, 16))
        mask = torch.ones(zoo_models.EXPORT_BATCH, 16, dtype=torch.int64)
        mask[1, 12:] = 0
        path = os.path.join(out, name + ".onnx")
        axes = {n: {0: "batch"} for n in list(inputs) + list(outputs)}
        with torch.no_grad():
            torch.onnx.export(model, (ids, mask), path, input_names=list(inputs),
                              output_names=list(outputs), dynamic_axes=axes,
                              opset_version=zoo_models.TORCHSCRIPT_OPSET, do_constant_folding=True,
                              dynamo=False)
        np.savez(os.path.join(out, name + ".npz"), input_ids=ids.numpy(),
                 attention_mask=mask.numpy())
        print(name, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
