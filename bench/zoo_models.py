"""The benchmark zoo's models (issue 22, item 1; docs/benchmarks.md, "The zoo").

Each model is built without downloads (torchvision, timm and transformers with their
default configs, sizes set only where the default config is another size of the same
family), random weights, and BatchNorm running statistics measured on random data (a few
train-mode passes with a cumulative average) so activations have realistic scale. It is
exported the way a user would: `torch.onnx.export` with the TorchScript exporter
(`dynamo=False`, opset 17, constant folding, dynamic batch through `dynamic_axes`), and
transformers models also through the dynamo exporter (`dynamo=True`, opset 18, dynamic
batch through `dynamic_shapes`) as a separate entry named `MODEL@dynamo`.

Everything here runs on the CPU (construction, calibration, export): the same weights
come out on any machine, so a cached ONNX file matches a model rebuilt in a later run.
"""
import os
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

SEED = 0
EXPORT_BATCH = 2  # torch.export specializes a dimension of size 1: export at 2, mark it dynamic
TORCHSCRIPT_OPSET = 17
DYNAMO_OPSET = 18


@dataclass(frozen=True)
class Input:
    """One model input: its shape after the batch dimension, dtype, and id range."""
    name: str
    shape: tuple
    dtype: str = "float32"
    high: int = 0  # integer inputs: values in [0, high); 0 with int64 means all ones (masks)


@dataclass
class Model:
    """A zoo architecture: how to build it, its inputs and the batch that fills the GPU."""
    name: str
    source: str  # torchvision | timm | transformers
    make: Callable[[], torch.nn.Module]
    inputs: tuple
    outputs: tuple
    batch: int  # GPU-bound batch (text: batch x sequence 128)
    cnn: bool = False  # the PyTorch baseline runs channels-last
    # transformers: the attention implementation in the export (None: the library default,
    # SDPA); the PyTorch baseline always runs the default.
    export_attention: str | None = None
    exporters: tuple = ("torchscript",)
    notes: str = ""


@dataclass(frozen=True)
class Entry:
    """One row of the zoo: a model through one exporter."""
    model: Model
    exporter: str  # torchscript | dynamo

    @property
    def name(self):
        return self.model.name + ("@dynamo" if self.exporter == "dynamo" else "")


# ---------------------------------------------------------------- constructors


def _torchvision(name):
    def make():
        import torchvision
        return getattr(torchvision.models, name)(weights=None)
    return make


def _timm(name):
    def make():
        import timm
        return timm.create_model(name, pretrained=False)
    return make


class HFOutputs(torch.nn.Module):
    """Calls a transformers model with its inputs by name and returns the named outputs
    (a tuple), so both exporters and the baseline see plain tensors."""

    def __init__(self, model, input_names, output_names, **call_kwargs):
        super().__init__()
        self.model = model
        self.input_names = tuple(input_names)
        self.output_names = tuple(output_names)
        self.call_kwargs = call_kwargs

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)), **self.call_kwargs)
        return tuple(out[n] for n in self.output_names)


def _hf(model_fn, inputs, outputs, **call_kwargs):
    def make():
        return HFOutputs(model_fn(), [i.name for i in inputs], outputs, **call_kwargs)
    return make


def _bert():
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig())  # bert-base-uncased sizes: 12 x 768, 12 heads


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    return DistilBertModel(DistilBertConfig())  # distilbert-base: 6 x 768


def _gpt2():
    from transformers import GPT2Config, GPT2Model
    return GPT2Model(GPT2Config())  # gpt2 (small): 12 x 768


def _whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    # WhisperConfig() is whisper-tiny's size; whisper-base: d_model 512, 6 layers, 8 heads.
    return WhisperEncoder(WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                        encoder_ffn_dim=2048, decoder_layers=6,
                                        decoder_attention_heads=8, decoder_ffn_dim=2048))


def _clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel
    return CLIPVisionModel(CLIPVisionConfig())  # ViT-B/32: 12 x 768, patch 32, 224 px


def _t5_encoder():
    from transformers import T5Config, T5EncoderModel
    # T5Config() is t5-small's size; t5-base: d_model 768, d_ff 3072, 12 layers, 12 heads.
    return T5EncoderModel(T5Config(d_model=768, d_ff=3072, num_layers=12, num_heads=12, d_kv=64))


IMAGE = (Input("input", (3, 224, 224)),)
TEXT = (Input("input_ids", (128,), "int64", 30522), Input("attention_mask", (128,), "int64"))
# With input_ids alone, transformers' causal-mask code looks for packed sequences with
# torch.diff, which the TorchScript exporter cannot export (aten::diff): a user passes the
# attention mask too.
GPT2_IN = (Input("input_ids", (128,), "int64", 50257), Input("attention_mask", (128,), "int64"))
T5_IN = (Input("input_ids", (128,), "int64", 32128), Input("attention_mask", (128,), "int64"))
WHISPER_IN = (Input("input_features", (80, 3000)),)  # 30 s of log-mel frames (fixed length)
CLIP_IN = (Input("pixel_values", (3, 224, 224)),)
HIDDEN = ("last_hidden_state",)
BOTH = ("torchscript", "dynamo")


def _vision(name, batch, cnn=True, source="torchvision", notes=""):
    make = _torchvision(name) if source == "torchvision" else _timm(name)
    return Model(name, source, make, IMAGE, ("logits",), batch, cnn=cnn, notes=notes)


MODELS = [
    _vision("resnet50", 256),
    _vision("mobilenet_v3_large", 256),
    _vision("efficientnet_b0", 256),
    _vision("convnext_tiny", 128),
    _vision("regnet_y_1_6gf", 256),
    _vision("densenet121", 256),
    _vision("vit_b_16", 64, cnn=False),
    _vision("swin_t", 128, cnn=False),
    _vision("deit_small_patch16_224", 128, cnn=False, source="timm"),
    _vision("levit_128", 256, cnn=False, source="timm", notes="attention bias; BatchNorm"),
    Model("bert_base_sdpa", "transformers", _hf(_bert, TEXT, HIDDEN + ("pooler_output",)), TEXT,
          HIDDEN + ("pooler_output",), 128, exporters=BOTH),
    Model("bert_base_eager", "transformers", _hf(_bert, TEXT, HIDDEN + ("pooler_output",)), TEXT,
          HIDDEN + ("pooler_output",), 128, export_attention="eager", exporters=BOTH),
    Model("distilbert", "transformers", _hf(_distilbert, TEXT, HIDDEN), TEXT, HIDDEN, 128,
          exporters=BOTH),
    Model("gpt2", "transformers", _hf(_gpt2, GPT2_IN, HIDDEN, use_cache=False), GPT2_IN, HIDDEN,
          128, exporters=BOTH, notes="prefill, causal mask, no KV cache"),
    Model("whisper_base_encoder", "transformers", _hf(_whisper_encoder, WHISPER_IN, HIDDEN),
          WHISPER_IN, HIDDEN, 16, exporters=BOTH, notes="1500 positions"),
    Model("clip_vit_b32_vision", "transformers",
          _hf(_clip_vision, CLIP_IN, HIDDEN + ("pooler_output",)), CLIP_IN,
          HIDDEN + ("pooler_output",), 128, exporters=BOTH),
    Model("t5_base_encoder", "transformers", _hf(_t5_encoder, T5_IN, HIDDEN), T5_IN, HIDDEN, 128,
          exporters=BOTH),
]



def _llama_decoder():
    from transformers import LlamaConfig, LlamaModel
    # A LLaMA-family decoder at ~1/4 of TinyLlama's width: RMSNorm, rotary positions,
    # grouped-query attention (16 query heads, 4 key/value heads), SwiGLU MLP.
    return LlamaModel(LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                                  num_attention_heads=16, num_key_value_heads=4,
                                  vocab_size=32000, max_position_embeddings=2048))


def _wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    return Wav2Vec2Model(Wav2Vec2Config())  # wav2vec2-base: conv feature encoder, 12 x 768


def _segformer():
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    return SegformerForSemanticSegmentation(SegformerConfig())  # mit-b0 sizes, 150 classes


def _deberta_v3():
    from transformers import DebertaV2Config, DebertaV2Model
    # deberta-v3-base's sizes (DebertaV2Config() is the xlarge): disentangled attention with
    # 256 log-bucketed relative positions, shared key projections, no absolute positions.
    return DebertaV2Model(DebertaV2Config(
        vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, relative_attention=True, position_buckets=256,
        norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
        max_relative_positions=-1, position_biased_input=False))


class TorchvisionSegmentation(torch.nn.Module):
    """torchvision's segmentation models return {"out": logits}: the tensor alone."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def _segmentation(name):
    def make():
        import torchvision
        return TorchvisionSegmentation(getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None))
    return make


LLAMA_IN = (Input("input_ids", (128,), "int64", 32000), Input("attention_mask", (128,), "int64"))
DEBERTA_IN = (Input("input_ids", (128,), "int64", 128100), Input("attention_mask", (128,), "int64"))
AUDIO_IN = (Input("input_values", (16000,)),)  # one second at 16 kHz
SEG_IN = (Input("pixel_values", (3, 512, 512)),)
IMAGE_256 = (Input("input", (3, 256, 256)),)

# The holdout set: architectures no pass or kernel was tuned on, benchmarked the same way to
# show how Kiln does on a model it has not seen (docs/benchmarks.md, "holdout"). Not part
# of issue 22's acceptance zoo ("all").
HOLDOUT_MODELS = [
    _vision("resnext50_32x4d", 256, notes="grouped 3x3 convolutions"),
    _vision("shufflenet_v2_x1_0", 256, notes="channel shuffle, split"),
    _vision("convnextv2_tiny", 128, source="timm", notes="global response normalization"),
    _vision("efficientnetv2_rw_t", 256, source="timm", notes="fused MBConv"),
    _vision("mobilevit_s", 256, source="timm", notes="unfold/fold attention blocks"),
    _vision("beit_base_patch16_224", 64, cnn=False, source="timm",
            notes="relative position bias, layer scale"),
    _vision("mixer_b16_224", 64, cnn=False, source="timm", notes="token-mixing MLP"),
    Model("swinv2_tiny_window8_256", "timm", _timm("swinv2_tiny_window8_256"), IMAGE_256,
          ("logits",), 128, notes="cosine attention, continuous position bias"),
    Model("deeplabv3_mobilenet_v3_large", "torchvision",
          _segmentation("deeplabv3_mobilenet_v3_large"), IMAGE, ("logits",), 64, cnn=True,
          notes="atrous convolutions, bilinear upsampling"),
    Model("llama_decoder", "transformers", _hf(_llama_decoder, LLAMA_IN, HIDDEN, use_cache=False),
          LLAMA_IN, HIDDEN, 128, exporters=BOTH, notes="8 x 1024, GQA 16/4, prefill"),
    Model("wav2vec2_base", "transformers", _hf(_wav2vec2, AUDIO_IN, HIDDEN), AUDIO_IN, HIDDEN,
          64, notes="1 s of audio: 49 frames"),
    Model("segformer_b0", "transformers", _hf(_segformer, SEG_IN, ("logits",)), SEG_IN,
          ("logits",), 32, notes="efficient attention, Mix-FFN"),
    Model("deberta_v3_base", "transformers", _hf(_deberta_v3, DEBERTA_IN, HIDDEN), DEBERTA_IN,
          HIDDEN, 128, notes="disentangled attention"),
]

# The breadth set: more architectures no pass was tuned on, for the CPU check (`zoo_bench.py
# --cpu --models breadth`: a b1 float32 CPU plan against PyTorch FP32; docs/benchmarks.md,
# eleventh session; it found ALBERT's shared weights copied per layer and Einsum without a shape
# rule). The text entries are small configurations; the image entries are timm's and
# torchvision's own, at batch 128 on the GPU (group "breadth_images", twelfth session; cnn=True
# for the convolutional ones, whose eager baseline then runs channels-last). Not part of the
# acceptance zoo.
def _transformers(model_class, config_class, module=None, **config):
    def make():
        import importlib
        mod = importlib.import_module(module or "transformers")
        cfg = getattr(importlib.import_module("transformers"), config_class)(**config)
        return getattr(mod, model_class)(cfg)
    return make


def _text(vocab):
    return (Input("input_ids", (128,), "int64", vocab), Input("attention_mask", (128,), "int64"))


def _breadth_text(name, model_class, config_class, vocab, module=None, call=None, **config):
    inputs = _text(vocab)
    make = _hf(_transformers(model_class, config_class, module, vocab_size=vocab, **config),
               inputs, HIDDEN, **(call or {}))
    return Model(name, "transformers", make, inputs, HIDDEN, 128)


def _breadth_image(name, size=224, source="timm", cnn=False, exporters=("torchscript",)):
    make = _torchvision(name) if source == "torchvision" else _timm(name)
    return Model(name, source, make, (Input("input", (3, size, size)),), ("logits",), 128, cnn=cnn,
                 exporters=exporters)


_SMALL = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024)
BREADTH_MODELS = [
    _breadth_text("roberta", "RobertaModel", "RobertaConfig", 50265, **_SMALL),
    _breadth_text("albert", "AlbertModel", "AlbertConfig", 30000, embedding_size=128, **_SMALL),
    _breadth_text("electra", "ElectraModel", "ElectraConfig", 30522, **_SMALL),
    _breadth_text("mpnet", "MPNetModel", "MPNetConfig", 30527, **_SMALL),
    _breadth_text("convbert", "ConvBertModel", "ConvBertConfig", 30522, **_SMALL),
    _breadth_text("mobilebert", "MobileBertModel", "MobileBertConfig", 30522, num_hidden_layers=4),
    _breadth_text("squeezebert", "SqueezeBertModel", "SqueezeBertConfig", 30528,
                  num_hidden_layers=2),
    _breadth_text("funnel", "FunnelBaseModel", "FunnelConfig", 30522, block_sizes=[1, 1, 1],
                  d_model=256, n_head=4, d_inner=1024),
    _breadth_text("xlnet", "XLNetModel", "XLNetConfig", 32000, call={"use_mems": False},
                  d_model=256, n_layer=2, n_head=4, d_inner=1024),
    _breadth_text("bigbird", "BigBirdModel", "BigBirdConfig", 50358,
                  attention_type="original_full", **_SMALL),
    _breadth_text("esm", "EsmModel", "EsmConfig", 33, pad_token_id=1,
                  position_embedding_type="rotary", **_SMALL),
    _breadth_text("qwen2", "Qwen2Model", "Qwen2Config", 32000, call={"use_cache": False},
                  num_key_value_heads=2, **_SMALL),
    _breadth_text("opt", "OPTModel", "OPTConfig", 50272, call={"use_cache": False},
                  hidden_size=256, num_hidden_layers=2, ffn_dim=1024, num_attention_heads=4,
                  word_embed_proj_dim=256),
    _breadth_text("bloom", "BloomModel", "BloomConfig", 32000, call={"use_cache": False},
                  hidden_size=256, n_layer=2, n_head=4),
    _breadth_text("gpt_neo", "GPTNeoModel", "GPTNeoConfig", 50257, call={"use_cache": False},
                  hidden_size=256, num_layers=2, num_heads=4,
                  attention_types=[[["global", "local"], 1]], window_size=64),
    # Gemma's heads of 256 (multi-query: one key/value head), past the 128 of most exports.
    _breadth_text("gemma", "GemmaModel", "GemmaConfig", 32000, call={"use_cache": False},
                  hidden_size=512, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=256, intermediate_size=1024),
    _breadth_text("bart_encoder", "BartEncoder", "BartConfig", 50265,
                  module="transformers.models.bart.modeling_bart", d_model=256, encoder_layers=2,
                  encoder_attention_heads=4, encoder_ffn_dim=1024),
    _breadth_image("inception_v3", 299, "torchvision", cnn=True),
    _breadth_image("squeezenet1_1", source="torchvision", cnn=True),
    _breadth_image("poolformer_s12", cnn=True),
    _breadth_image("efficientformer_l1", cnn=True),
    _breadth_image("regnetx_016", cnn=True),
    _breadth_image("nfnet_l0", cnn=True),
    _breadth_image("cait_xxs24_224"),
    _breadth_image("repvgg_a0", cnn=True),
    _breadth_image("ghostnet_100", cnn=True),
    _breadth_image("hrnet_w18_small", cnn=True),
    _breadth_image("crossvit_tiny_240", 240),
    _breadth_image("fastvit_t8", 256, cnn=True),
    _breadth_image("mobileone_s0", cnn=True),
    _breadth_image("efficientvit_b0", cnn=True),
    _breadth_image("repvit_m1", cnn=True),
    _breadth_image("tiny_vit_5m_224"),
    _breadth_image("maxvit_nano_rw_256", 256),
    _breadth_image("gmlp_s16_224"),
    _breadth_image("edgenext_xx_small", 256),
    _breadth_image("davit_tiny"),
    _breadth_image("pvt_v2_b0"),
    # The twelfth session's sweep (31 more timm models, and VOLO through the dynamo exporter:
    # the TorchScript exporter refuses its col2im (F.fold) at opset 17; ONNX's Col2Im is opset 18).
    _breadth_image("volo_d1_224", exporters=("dynamo",)),
    _breadth_image("resmlp_12_224"),
    _breadth_image("xcit_nano_12_p16_224"),
    _breadth_image("coat_lite_tiny"),
    _breadth_image("visformer_tiny"),
    _breadth_image("pit_ti_224"),
    _breadth_image("dla34", cnn=True),
    _breadth_image("res2net50_14w_8s", cnn=True),
    _breadth_image("skresnet18", cnn=True),
    _breadth_image("rexnet_100", cnn=True),
    _breadth_image("lcnet_050", cnn=True),
    _breadth_image("hgnet_tiny", cnn=True),
    _breadth_image("focalnet_tiny_srf"),
    _breadth_image("gcvit_xxtiny"),
    _breadth_image("efficientformerv2_s0", cnn=True),
    _breadth_image("inception_next_tiny", cnn=True),
    _breadth_image("starnet_s1", cnn=True),
    _breadth_image("sequencer2d_s"),
    _breadth_image("nest_tiny"),
    _breadth_image("mvitv2_tiny"),
    _breadth_image("hiera_tiny_224"),
    _breadth_image("twins_svt_small"),
    _breadth_image("tnt_s_patch16_224"),
    _breadth_image("cspresnet50", cnn=True),
    _breadth_image("dpn68", cnn=True),
    _breadth_image("vovnet39a", cnn=True),
    _breadth_image("tresnet_m", cnn=True),
    _breadth_image("ghostnetv2_100", cnn=True),
    _breadth_image("fastvit_sa12", cnn=True),
    _breadth_image("levit_conv_128s", cnn=True),
    _breadth_image("mobilevitv2_050", cnn=True),
    _breadth_image("resnest14d", cnn=True),
]


# The attention forms the twelfth session's passes took (GPT-Neo's causal `where`, BLOOM's
# heads flattened into the batch with ALiBi, MPNet's two additive masks) and OPT, at their
# published base sizes, for the GPU (group "breadth_text"; the "breadth" CPU check keeps its
# small configurations). BLOOM-560m's vocabulary is cut to 32,000 so its export stays under
# protobuf's 2 GB; the layers are the published model's.
BREADTH_TEXT_MODELS = [
    _breadth_text("gpt_neo_125m", "GPTNeoModel", "GPTNeoConfig", 50257, call={"use_cache": False},
                  hidden_size=768, num_layers=12, num_heads=12,
                  attention_types=[[["global", "local"], 6]], window_size=256),
    _breadth_text("bloom_560m", "BloomModel", "BloomConfig", 32000, call={"use_cache": False},
                  hidden_size=1024, n_layer=24, n_head=16),
    _breadth_text("mpnet_base", "MPNetModel", "MPNetConfig", 30527),
    _breadth_text("opt_125m", "OPTModel", "OPTConfig", 50272, call={"use_cache": False}),
]

ENTRIES = [Entry(m, e) for m in MODELS for e in m.exporters]
HOLDOUT = [Entry(m, e) for m in HOLDOUT_MODELS for e in m.exporters]
BREADTH = [Entry(m, e) for m in BREADTH_MODELS for e in m.exporters]
BREADTH_TEXT = [Entry(m, e) for m in BREADTH_TEXT_MODELS for e in m.exporters]
BY_NAME = {e.name: e for e in ENTRIES + HOLDOUT + BREADTH + BREADTH_TEXT}
GROUPS = {
    "all": [e.name for e in ENTRIES],
    "holdout": [e.name for e in HOLDOUT],
    "breadth": [e.name for e in BREADTH],
    "breadth_images": [e.name for e in BREADTH if e.model.inputs[0].name == "input"],
    "breadth_text": [e.name for e in BREADTH_TEXT],
    "torchscript": [e.name for e in ENTRIES if e.exporter == "torchscript"],
    "dynamo": [e.name for e in ENTRIES if e.exporter == "dynamo"],
    "cnn": [m.name for m in MODELS if m.cnn],
    "vit": [m.name for m in MODELS if m.source != "transformers" and not m.cnn],
    "transformers": [m.name for m in MODELS if m.source == "transformers"],
}


def select(spec):
    """Entries named by a comma-separated list of entry names and group names (GROUPS)."""
    names = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        for name in GROUPS.get(item, [item]):
            if name not in BY_NAME:
                raise SystemExit(f"unknown zoo entry '{name}'; known: {', '.join(BY_NAME)}; "
                                 f"groups: {', '.join(GROUPS)}")
            if name not in names:
                names.append(name)
    return [BY_NAME[n] for n in names]


# ---------------------------------------------------------------- building


def get_attention(model):
    """A transformers model's attention implementation (None for other models)."""
    config = getattr(getattr(model, "model", model), "config", None)
    return getattr(config, "_attn_implementation", None)


def set_attention(model, implementation):
    """Switches a transformers model (inside HFOutputs) to an attention implementation."""
    inner = getattr(model, "model", model)
    if hasattr(inner, "set_attn_implementation"):
        inner.set_attn_implementation(implementation)
    else:  # older transformers
        for m in inner.modules():
            if hasattr(m, "config") and hasattr(m.config, "_attn_implementation"):
                m.config._attn_implementation = implementation


def calibrate_batch_norm(model, spec, passes=4, batch=8):
    """Running statistics from random data: train-mode passes with a cumulative average
    (momentum None), so they are the mean over all passes rather than 1 - 0.9^passes of
    the way from the init values (mean 0, variance 1)."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return 0
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for _ in range(passes):
            model(*make_inputs(spec, batch, generator=generator).values())
    for m, momentum in zip(norms, saved):
        m.momentum = momentum
    return len(norms)


PLACEHOLDER_STD = 0.2  # trained layer scales and branch gammas are about this size


def _is_norm(module):
    """BatchNorm, LayerNorm, GroupNorm, RMSNorm and the libraries' own norm classes."""
    return "Norm" in type(module).__name__


def _is_constant(p):
    """Every element the same value (a default or placeholder initialization)."""
    v = p.detach().flatten()
    return v.numel() > 0 and bool((v == v[0]).all())


def randomize_placeholder_parameters(model):
    """Parameters a library initializes to a constant that no trained model holds get random
    values, so the accuracy check compares the paths a trained model uses; returns how many.
    - Linear and convolution weights of zeros (torchvision ViT's head), and zero biases of
      those and of norms (transformers zeroes every Linear bias; every norm's default):
      N(0, 0.02). A zero bias is dropped on the way (the exporter's optimizer, Kiln's
      remove_no_op_nodes), which would time a bias-free layer no trained model has
      (docs/benchmarks.md, tenth session).
    - Norm weights of one nonzero value (ones by default): 1 + N(0, 0.1).
    - Any other parameter of one value below 0.01: N(0, PLACEHOLDER_STD). These scale a
      residual branch (the zero gammas of a branch's last BatchNorm in timm's ResNets,
      RegNets and LeViT, SwinV2's zero post-norm gammas, layer scales of 1e-6 to 1e-4 in
      ConvNeXt, CaiT, PoolFormer, NFNet's zero skip gains) or add to attention logits
      (LeViT's zero attention biases), or are zero class tokens: with them the branch
      counts in the output. Gammas near 1 there instead make LeViT-128 ill-conditioned:
      a tenth of its inputs grow block by block until PyTorch FP32 and FP64 disagree
      (cosine 0.98), and no engine can then be checked on them."""
    # transformers' Conv1D (GPT-2's projections) is a Linear with its weight transposed.
    layers = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d)
    count = 0
    with torch.no_grad():
        for m in model.modules():
            linear = isinstance(m, layers) or type(m).__name__ == "Conv1D"
            norm = _is_norm(m)
            for name, p in m.named_parameters(recurse=False):
                if not p.dtype.is_floating_point or not _is_constant(p):
                    continue
                value = float(p.detach().flatten()[0])
                bias = name in ("bias", "beta")
                if (linear or norm) and bias:
                    if value != 0:
                        continue
                    p.normal_(0, 0.02)
                elif norm and name == "weight" and value != 0:
                    p.normal_(1, 0.1)
                elif linear and name == "weight":
                    if value != 0:
                        continue
                    p.normal_(0, 0.02)
                elif abs(value) < 0.01:
                    p.normal_(0, PLACEHOLDER_STD)
                else:
                    continue
                count += 1
    return count


def build(spec, calibration_batch=8):
    """The model with its random weights (seeded), BatchNorm calibrated, in eval mode, CPU."""
    torch.manual_seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = spec.make()
    randomize_placeholder_parameters(model)
    calibrate_batch_norm(model, spec, batch=calibration_batch)
    return model.eval()


def make_inputs(spec, batch, seed=SEED + 2, generator=None):
    """Random inputs by name: images N(0, 1), ids uniform in [0, high), masks all ones."""
    g = generator or torch.Generator().manual_seed(seed)
    out = {}
    for i in spec.inputs:
        shape = (batch,) + tuple(i.shape)
        if i.dtype == "int64":
            out[i.name] = (torch.randint(0, i.high, shape, generator=g) if i.high
                           else torch.ones(shape, dtype=torch.int64))
        else:
            out[i.name] = torch.randn(shape, generator=g)
    return out


def shapes_arg(spec, batch):
    """Kiln's --shapes value: 'input_ids:128x128,attention_mask:128x128'."""
    return ",".join(f"{i.name}:" + "x".join(str(d) for d in (batch,) + tuple(i.shape))
                    for i in spec.inputs)


def exported_entries(work, models):
    """The selected entries a zoo run left in WORK, for tools that time their plans again
    (pass_ab.py, env_ab.py): (entry, onnx path, --shapes value, {input: .npy path}) at the
    entry's GPU-bound batch; an entry without an export is named and skipped."""
    for entry in select(models):
        spec = entry.model
        onnx = os.path.join(work, "onnx", entry.name + ".onnx")
        if not os.path.exists(onnx):
            print(f"{entry.name}: no export in {work}/onnx (run the zoo first)", flush=True)
            continue
        # The zoo's inputs at the GPU-bound batch (zoo_kiln.save_inputs' names).
        inputs = {i.name: os.path.join(work, "inputs", f"{spec.name}_b{spec.batch}_{i.name}.npy")
                  for i in spec.inputs}
        yield entry, onnx, shapes_arg(spec, spec.batch), inputs


def export(entry, model, path):
    """Exports as a user would; returns the seconds it took. Raises on failure."""
    import time
    spec = entry.model
    args = tuple(make_inputs(spec, EXPORT_BATCH).values())
    names = [i.name for i in spec.inputs]
    default_attention = get_attention(model)
    if spec.export_attention:
        set_attention(model, spec.export_attention)
    # nn.MultiheadAttention's fused fast path (torchvision ViT in eval) has no ONNX export.
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    started = time.time()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if entry.exporter == "dynamo":
                batch = torch.export.Dim("batch", min=1, max=4096)
                dynamic = tuple({0: batch} for _ in args)
                if isinstance(model, HFOutputs):  # forward(*args): one entry, a tuple
                    dynamic = (dynamic,)
                torch.onnx.export(model, args, path, input_names=names,
                                  output_names=list(spec.outputs), opset_version=DYNAMO_OPSET,
                                  dynamo=True, dynamic_shapes=dynamic)
            else:
                axes = {n: {0: "batch"} for n in names + list(spec.outputs)}
                torch.onnx.export(model, args, path, input_names=names,
                                  output_names=list(spec.outputs), dynamic_axes=axes,
                                  opset_version=TORCHSCRIPT_OPSET, do_constant_folding=True,
                                  dynamo=False)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        if spec.export_attention:
            set_attention(model, default_attention)
    return time.time() - started


def onnx_size_mb(path):
    total = os.path.getsize(path)
    data = path + ".data"
    if os.path.exists(data):
        total += os.path.getsize(data)
    return total / 1e6
