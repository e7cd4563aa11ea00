"""Builds a bundled model for the CPU with `import kiln` and runs it with NumPy on its
reference input, against its reference output: the check that an installed Kiln
(the .deb's module: tests/packaging/install_test.sh; a wheel: tests/python/
wheel_test.sh) works. Reads the ONNX backend-test layout (TensorProto files with dims,
name and raw_data) without the onnx package; tolerances of tests/CMakeLists.txt.

    python run_bundled_model.py resources/models/ppocr_mobile_v2_cls/model.onnx
"""
import pathlib, sys
import numpy as np
import kiln

def read_tensor(path):  # TensorProto: dims (1), data_type (2, FLOAT), name (8), raw_data (9)
    data, i, dims, name, raw = path.read_bytes(), 0, [], "", b""
    def varint():
        nonlocal i
        value = shift = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value
    while i < len(data):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
            if field == 1:
                dims.append(value)
            elif field == 2:
                assert value == 1, f"{path}: data_type {value}, not FLOAT"
        elif wire == 2:
            size = varint()
            chunk, i = data[i:i + size], i + size
            if field == 8:
                name = chunk.decode()
            elif field == 9:
                raw = chunk
        else:
            raise ValueError(f"{path}: unexpected wire type {wire}")
    return name, np.frombuffer(raw, np.float32).reshape(dims)

model_path = pathlib.Path(sys.argv[1])
name, x = read_tensor(model_path.parent / "test_data_set_0/input_0.pb")
out_name, expected = read_tensor(model_path.parent / "test_data_set_0/output_0.pb")
model = kiln.load_onnx(str(model_path))
shape = {name: x.shape}
plan = kiln.build(model, backend="cpu", min_shapes=shape, opt_shapes=shape, max_shapes=shape)
print(plan)
got = plan.run({name: x})[out_name]
print(out_name, got.tolist())
np.testing.assert_allclose(got, expected, atol=1e-4, rtol=1e-3)
assert got.argmax(1).tolist() == [0, 1], "upright, then rotated 180 degrees"
