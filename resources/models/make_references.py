#!/usr/bin/env python3
"""Records reference outputs for the models in this folder with onnxruntime.

Run once by hand when a model is added (needs onnx, onnxruntime, numpy, Pillow and
a TrueType font; the silero speech input comes from espeak-ng):
    make_references.py MODELS_DIR
Each model folder gets test_data_set_N/{input,output}_K.pb. The inputs are
described in README.md; they are deterministic (seeded or rendered).
"""
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def session(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def record(model_dir, index, feeds):
    sess = session(os.path.join(model_dir, "model.onnx"))
    outputs = sess.run(None, feeds)
    data_dir = os.path.join(model_dir, f"test_data_set_{index}")
    os.makedirs(data_dir, exist_ok=True)
    for k, inp in enumerate(sess.get_inputs()):
        with open(os.path.join(data_dir, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(feeds[inp.name]), inp.name).SerializeToString())
    for k, (out, value) in enumerate(zip(sess.get_outputs(), outputs)):
        with open(os.path.join(data_dir, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, out.name).SerializeToString())
    return outputs


def normalize(image):
    """HWC uint8 -> NCHW float32, (x/255 - 0.5) / 0.5 as PaddleOCR preprocesses."""
    a = (np.asarray(image, np.float32) / 255.0 - 0.5) / 0.5
    return a.transpose(2, 0, 1)[None].copy()


def text_image(width, height, lines):
    font = ImageFont.truetype(FONT, 32)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for (x, y), text in lines:
        draw.text((x, y), text, fill="black", font=font)
    return image


def magika_bytes(path):
    data = open(path, "rb").read()
    begin, end = data.lstrip()[:1024], data.rstrip()[-1024:]
    a = np.full(2048, 256, np.int32)
    a[: len(begin)] = np.frombuffer(begin, np.uint8)
    tail = np.frombuffer(end, np.uint8)
    a[2048 - len(tail):] = tail
    return a[None]


def speech_16k():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "speech.wav")
        subprocess.run(["espeak-ng", "-w", path, "Kiln builds inference engines for the GPU."], check=True)
        w = wave.open(path)
        rate = w.getframerate()
        a = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768
    t = np.arange(0, len(a) / rate, 1 / 16000)
    a = np.interp(t, np.arange(len(a)) / rate, a).astype(np.float32)
    return np.concatenate([np.zeros(8000, np.float32), a])


def silero(model_dir):
    rng = np.random.default_rng(0)
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(576) / 16000) + 0.02 * rng.standard_normal(576)
    sr = np.array(16000, np.int64)
    record(model_dir, 0, {"input": tone.astype(np.float32)[None], "state": np.zeros((2, 1, 128), np.float32), "sr": sr})
    # Stream speech chunk by chunk with the carried state; keep the most speech-like chunk.
    sess = session(os.path.join(model_dir, "model.onnx"))
    audio, state, context, best = speech_16k(), np.zeros((2, 1, 128), np.float32), np.zeros((1, 64), np.float32), None
    for i in range(0, len(audio) - 511, 512):
        x = np.concatenate([context, audio[None, i:i + 512]], 1)
        feeds = {"input": x, "state": state, "sr": sr}
        prob, state_next = sess.run(None, feeds)
        if best is None or prob[0, 0] > best[0]:
            best = (prob[0, 0], {k: v.copy() for k, v in feeds.items()})
        state, context = state_next, x[:, -64:]
    record(model_dir, 1, best[1])


def main():
    root = sys.argv[1]
    silero(os.path.join(root, "silero_vad"))
    page = text_image(320, 320, [((20, 60), "Hello World"), ((20, 180), "ONNX 2024")])
    record(os.path.join(root, "ppocrv4_det"), 0, {"x": normalize(page)})
    record(os.path.join(root, "ppocrv4_rec"), 0, {"x": normalize(text_image(320, 48, [((4, 4), "Hello World")]))})
    line = text_image(192, 48, [((4, 4), "Hello Wo")])
    record(os.path.join(root, "ppocr_mobile_v2_cls"), 0,
           {"x": np.concatenate([normalize(line), normalize(line.rotate(180))])})
    record(os.path.join(root, "magika_standard_v3_3"), 0, {"bytes": magika_bytes(__file__)})


if __name__ == "__main__":
    main()
