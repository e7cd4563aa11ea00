# One device call's extra INT8 row (issue 8): ResNet-50 b256 INT8 with the 3-channel
# stem kept FP16 by a precision rule (its INT8 convolution runs far below FP16), after
# bench/int8_bench.py made the calibration cache in /tmp/kiln-int8. Prints the GPU
# compute median and the per-layer profile's top.
K=/tmp/kiln/bin/kiln; W=/tmp/kiln-int8; M=/tmp/kiln/models/resnet50.onnx
IN=$(python3 -c "import onnx;m=onnx.load('$M',load_external_data=False);print(m.graph.input[0].name)")
S=$IN:256x3x224x224
[ -f $W/resnet50.cache ] || { echo "no calibration cache in $W"; exit 1; }
timeout 240 $K build $M -o $W/stem16.kiln --backend cuda --int8 --calib-cache $W/resnet50.cache --fp16 \
  --layer-precisions '/conv1/Conv:fp16' --precision-constraints obey --optimization-level 2 \
  --min-shapes $S --opt-shapes $S --max-shapes $S --quiet || exit 1
echo "=== INT8, stem FP16: $($K run $W/stem16.kiln --shapes $S --no-data-transfers --warmup 200 --iterations 10 --duration 1 2>&1 | grep -E 'GPU Compute Time:' | head -1)"
timeout 120 $K run $W/stem16.kiln --shapes $S --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -16
