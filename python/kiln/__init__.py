"""Kiln's Python API: load ONNX models, build plans with the options of `kiln build`,
run them with NumPy arrays (or DLPack tensors on a CUDA plan), read the BuildRecord and
the inspector report as dicts, profile layers, compare, calibrate INT8 from Python
batches and load plugin libraries. docs/python.md has a walk-through.

    import kiln, numpy as np
    model = kiln.load_onnx("model.onnx")
    plan = kiln.build(model, fp16=True, opt_shapes={"x": (1, 3, 224, 224)}, ...)
    outputs = plan.run({"x": np.ones((1, 3, 224, 224), np.float32)})

Errors raise kiln.Error (a RuntimeError) with the one-line message the `kiln` command
prints.
"""

from ._kiln import (  # noqa: F401  (the public API)
    CalibrationCache,
    Error,
    Model,
    Plan,
    __git_revision__,
    __version__,
    build,
    calibrate,
    compare,
    compare_builds,
    list_passes,
    load_calibration_cache,
    load_onnx,
    load_plan,
    load_plugins,
    plugins,
    version_report,
)

__all__ = [
    "CalibrationCache",
    "Error",
    "Model",
    "Plan",
    "build",
    "calibrate",
    "compare",
    "compare_builds",
    "list_passes",
    "load_calibration_cache",
    "load_onnx",
    "load_plan",
    "load_plugins",
    "plugins",
    "version_report",
]
