"""The Python API (docs/python.md) against the `kiln` command on the same models and data.

Run by tests/python/run_pytest.sh (ctest python_api), which sets KILN_CLI,
KILN_EXAMPLE_PLUGINS, KILN_SOURCE_DIR and PYTHONPATH.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kiln

CLI = os.environ["KILN_CLI"]
SOURCE = Path(os.environ["KILN_SOURCE_DIR"])
DATA = SOURCE / "tests" / "data"
CNN = DATA / "quant" / "small_cnn.onnx"  # input "input" [N, 3, 16, 16], 10 classes
CALIB = DATA / "quant" / "calib"  # 8 samples [3, 16, 16]
PLUGINS = os.environ["KILN_EXAMPLE_PLUGINS"]
COPY_CONCAT = SOURCE / "examples" / "plugins" / "models" / "copy_concat" / "model.onnx"


def cli(*args, plugins=False):
    """Runs `kiln ARGS`, returns stdout; fails the test on a non-zero exit."""
    argv = [CLI] + (["--plugins", PLUGINS] if plugins else []) + [str(a) for a in args]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


def batch(seed, n=2):
    """Non-zero random inputs of the CNN's shape."""
    return np.random.default_rng(seed).uniform(-1, 1, (n, 3, 16, 16)).astype(np.float32)


CNN_PROFILE = dict(min_shapes={"input": (1, 3, 16, 16)}, opt_shapes={"input": (2, 3, 16, 16)},
                   max_shapes={"input": (4, 3, 16, 16)})


@pytest.fixture(scope="module")
def cnn_plan():
    return kiln.build(kiln.load_onnx(CNN), optimization_level=1, **CNN_PROFILE)


def test_version_names_the_release_and_commit():
    first = cli("--version").splitlines()[0]  # "kiln 0.1.0 (git 1c1981333947)"
    release = first.split()[1]
    revision = kiln.__git_revision__  # the CLI may be linked at another commit of the tree
    assert kiln.__version__ == f"{release}+git{revision.replace('-', '.')}"
    assert kiln.version_report().splitlines()[0] == f"kiln {release} (git {revision})"
    assert len(kiln.version_report().splitlines()) == len(cli("--version").splitlines())


def test_model_inputs_outputs_and_ops():
    model = kiln.load_onnx(CNN)
    assert model.inputs == [{"name": "input", "dtype": "float32", "shape": ["N", 3, 16, 16]}]
    assert [o["name"] for o in model.outputs] == [o["name"] for o in model.inspect()["outputs"]]
    assert model.op_counts["Conv"] >= 3 and model.op_counts["Gemm"] == 1
    assert model.parameter_count > 0


def test_inspect_equals_the_cli():
    model = kiln.load_onnx(CNN)
    assert model.inspect() == json.loads(cli("inspect", CNN, "--json"))
    at = model.inspect(shapes={"input": (2, 3, 16, 16)})
    assert at == json.loads(cli("inspect", CNN, "--shapes", "input:2x3x16x16", "--json"))


def test_run_equals_the_cli_on_the_same_inputs(cnn_plan, tmp_path):
    x = batch(1)
    np.save(tmp_path / "x.npy", x)
    cnn_plan.save(tmp_path / "cnn.kiln")
    cli("run", tmp_path / "cnn.kiln", "--load-inputs", f"input:{tmp_path / 'x.npy'}",
        "--iterations", 1, "--export-output", tmp_path / "out.json", "--json")
    expected = {o["name"]: o for o in json.loads((tmp_path / "out.json").read_text())}
    ours = cnn_plan.run({"input": x})
    reloaded = kiln.load_plan(tmp_path / "cnn.kiln").run({"input": x})
    assert set(ours) == set(expected)
    for name, out in ours.items():
        assert out.dtype == np.float32 and list(out.shape) == expected[name]["shape"]
        assert np.abs(out).max() > 0  # values, not zeros against zeros
        np.testing.assert_array_equal(out.ravel(), np.array(expected[name]["values"], np.float32))
        np.testing.assert_array_equal(out, reloaded[name])
    # The plan's FP32 CPU tactics agree with the reference run of the model.
    for name, out in kiln.load_onnx(CNN).run({"input": x}).items():
        np.testing.assert_allclose(ours[name], out, rtol=1e-4, atol=1e-5)


def test_build_options_reach_the_record():
    model = kiln.load_onnx(CNN)
    plan = kiln.build(model, fp16=True, layer_precisions={"*": "fp16", "conv0": "fp32"},
                      precision_constraints="obey", optimization_level=1, **CNN_PROFILE)
    record = plan.record
    assert record["config"]["fp16"] is True
    precisions = {layer["name"]: layer["precision"] for layer in record["layers"]}
    fp16, fp32 = 10, 1  # ONNX TensorProto codes, as the plan stores them
    conv0 = [name for name in precisions if "conv0" in name.split(" + ")]
    assert conv0 and all(precisions[name] == fp32 for name in conv0)
    assert sum(p == fp16 for p in precisions.values()) >= 3
    assert plan.profiles == [{"input": {"min": [1, 3, 16, 16], "opt": [2, 3, 16, 16],
                                        "max": [4, 3, 16, 16]}}]
    # The same options on the command line give the same precision per layer.
    cli_plan = Path(os.environ.get("TMPDIR", "/tmp")) / f"kiln_pytest_{os.getpid()}.kiln"
    try:
        cli("build", CNN, "-o", cli_plan, "--fp16", "--layer-precisions", "*:fp16,conv0:fp32",
            "--precision-constraints", "obey", "--optimization-level", 1, "--min-shapes",
            "input:1x3x16x16", "--opt-shapes", "input:2x3x16x16", "--max-shapes",
            "input:4x3x16x16", "--quiet")
        theirs = {layer["name"]: layer["precision"]
                  for layer in kiln.load_plan(cli_plan).record["layers"]}
        assert theirs == precisions
    finally:
        cli_plan.unlink(missing_ok=True)


def test_report_and_profile(cnn_plan, tmp_path):
    cnn_plan.save(tmp_path / "cnn.kiln")
    assert cnn_plan.report() == json.loads(cli("inspect", tmp_path / "cnn.kiln", "--json"))
    profile = cnn_plan.profile(iterations=3)
    assert profile[0] == {"count": 3}
    layer_names = {layer["name"] for layer in cnn_plan.record["layers"]}
    assert {row["name"] for row in profile[1:]} <= layer_names and len(profile) > 3
    assert all(row["averageMs"] >= 0 for row in profile[1:])
    timed = cnn_plan.layer_report(profile=profile)
    assert timed != cnn_plan.layer_report()  # the profile's times replace the build's


def test_compare_a_plan_with_its_network(cnn_plan):
    report = kiln.compare(cnn_plan, inputs={"input": batch(2)})
    assert report["pass"] is True
    assert kiln.compare(cnn_plan, kiln.load_onnx(CNN), runs=2)["pass"] is True


def test_errors_name_the_file_and_the_tensor(cnn_plan, tmp_path):
    with pytest.raises(kiln.Error, match="no/such.onnx") as missing:
        kiln.load_onnx("no/such.onnx")
    assert isinstance(missing.value, RuntimeError) and missing.value.code == "not found"
    with pytest.raises(kiln.Error, match="truncated.onnx"):
        kiln.load_onnx(DATA / "truncated.onnx")
    with pytest.raises(kiln.Error, match="'input'") as shape:
        cnn_plan.run({"input": np.ones((2, 3, 8, 8), np.float32)})
    assert str(CNN) in str(shape.value)
    with pytest.raises(kiln.Error, match="'input'.*int32|int32.*'input'"):
        cnn_plan.run({"input": np.ones((2, 3, 16, 16), np.int32)})
    with pytest.raises(kiln.Error, match="no graph input named 'image'"):
        cnn_plan.run({"image": batch(1)})
    with pytest.raises(kiln.Error, match="--optimization-level 9 is outside 0..5"):
        kiln.build(CNN, optimization_level=9)
    with pytest.raises(TypeError, match="fp61"):
        kiln.build(CNN, fp61=True)
    with pytest.raises(TypeError, match="plan.save"):
        kiln.build(CNN, output="x.kiln")
    (tmp_path / "bad.kiln").write_bytes(b"KILNPLAN" + b"\0" * 100)
    with pytest.raises(kiln.Error, match="bad.kiln"):
        kiln.load_plan(tmp_path / "bad.kiln")


def test_errors_carry_the_node_they_are_about():
    with pytest.raises(kiln.Error, match="conv0") as refused:
        kiln.build(CNN, layer_precisions={"conv0": "int8"}, precision_constraints="obey",
                   **CNN_PROFILE)
    assert refused.value.node_name == "conv0"
    with pytest.raises(kiln.Error) as missing:
        kiln.load_onnx("no/such.onnx")
    assert missing.value.node_name is None and missing.value.node_index is None


def test_progress_callback_and_cancel():
    steps = []
    kiln.build(CNN, optimization_level=1, progress=steps.append, **CNN_PROFILE)
    assert any(s["phase"] == "timing" for s in steps)

    class Stop(Exception):
        pass

    def stop(step):
        raise Stop(step["phase"])

    with pytest.raises(Stop):  # the callback's exception ends the build
        kiln.build(CNN, optimization_level=1, progress=stop, **CNN_PROFILE)


def test_calibration_from_a_generator_equals_kiln_calibrate(tmp_path):
    cli("calibrate", CNN, "--data", CALIB, "-o", tmp_path / "cli.cache", "--batch", 4,
        "--backend", "cpu", "--quiet")
    files = sorted(CALIB.glob("*.npy"))

    def batches():  # any iterator: here a generator reading the same files
        for i in range(0, len(files), 4):
            yield {"input": np.stack([np.load(f) for f in files[i:i + 4]])}

    cache = kiln.calibrate(CNN, batches(), method="entropy", backend="cpu")
    assert cache.text == (tmp_path / "cli.cache").read_text()
    assert cache.samples == 8 and cache.method == "entropy" and cache.ranges["input"] > 0
    cache.save(tmp_path / "py.cache")
    assert kiln.load_calibration_cache(tmp_path / "py.cache").text == cache.text
    plan = kiln.build(CNN, int8=True, calib_cache=cache, optimization_level=1, **CNN_PROFILE)
    from_file = kiln.build(CNN, int8=True, calib_cache=tmp_path / "cli.cache",
                           optimization_level=1, **CNN_PROFILE)
    int8 = 3
    assert any(layer["precision"] == int8 for layer in plan.record["layers"])
    assert ([layer["precision"] for layer in plan.record["layers"]] ==
            [layer["precision"] for layer in from_file.record["layers"]])
    x = batch(3)
    np.testing.assert_array_equal(list(plan.run({"input": x}).values())[0],
                                  list(from_file.run({"input": x}).values())[0])


def test_a_plugin_library(tmp_path):
    creators = kiln.load_plugins(PLUGINS)
    assert any(c["name"] == "CopyConcat" and c["namespace"] == "kiln.examples" for c in creators)
    model = kiln.load_onnx(COPY_CONCAT)
    plan = kiln.build(model, min_shapes={"A": (1, 4), "B": (1, 4)},
                      opt_shapes={"A": (3, 4), "B": (5, 4)}, max_shapes={"A": (8, 4), "B": (8, 4)})
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    out = plan.run({"A": a, "B": b})
    reference = model.run({"A": a, "B": b})
    assert set(out) == set(reference)
    for name in out:
        np.testing.assert_array_equal(out[name], reference[name])
    # The model: Mul(A, 2) -> CopyConcat(2A, B) -> (copy of B, Relu of the rows of both).
    np.testing.assert_array_equal(out["copy"], b)
    np.testing.assert_array_equal(out["relu"], np.maximum(np.concatenate([2 * a, b]), 0))
    plan.save(tmp_path / "cc.kiln")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    cli("run", tmp_path / "cc.kiln", "--load-inputs", f"A:{tmp_path / 'a.npy'},B:{tmp_path / 'b.npy'}",
        "--iterations", 1, "--export-output", tmp_path / "out.json", "--json", plugins=True)
    for o in json.loads((tmp_path / "out.json").read_text()):
        np.testing.assert_array_equal(out[o["name"]].ravel(), np.array(o["values"], np.float32))


class HostDlpack:
    """A CPU tensor that offers only the DLPack protocol (as a CPU torch tensor does)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_host_dlpack_tensors_run_as_numpy(cnn_plan):
    x = batch(4)
    np.testing.assert_array_equal(list(cnn_plan.run({"input": HostDlpack(x)}).values())[0],
                                  list(cnn_plan.run({"input": x}).values())[0])


def test_gpu_dlpack_from_pytorch_without_copies():
    """On a GPU: PyTorch CUDA tensors in and preallocated CUDA outputs, bound by address."""
    try:
        import torch
    except ImportError:
        pytest.skip("GPU DLPack test SKIPPED: PyTorch is not installed (run it on the device)")
    if not torch.cuda.is_available():
        pytest.skip("GPU DLPack test SKIPPED: no CUDA device visible to PyTorch")
    if "built without CUDA" in kiln.version_report():
        pytest.skip("GPU DLPack test SKIPPED: this Kiln build has no CUDA backend")
    plan = kiln.build(CNN, backend="cuda", **CNN_PROFILE)
    x = batch(6)
    expected = kiln.build(CNN, **CNN_PROFILE).run({"input": x})
    name = plan.outputs[0]["name"]
    ours = plan.run({"input": torch.from_numpy(x).cuda()})
    np.testing.assert_allclose(ours[name], expected[name], rtol=1e-3, atol=1e-3)
    out = torch.full(tuple(expected[name].shape), float("nan"), device="cuda")
    result = plan.run({"input": torch.from_numpy(x).cuda()}, outputs={name: out})
    assert result[name] is out
    np.testing.assert_allclose(out.cpu().numpy(), expected[name], rtol=1e-3, atol=1e-3)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out.fill_(float("nan"))
        plan.run({"input": torch.from_numpy(x).cuda()}, outputs={name: out},
                 stream=stream.cuda_stream)
    stream.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), expected[name], rtol=1e-3, atol=1e-3)
