# One device call's extra INT8 row (issue 8): ResNet-50 b256 INT8 with the 3-channel
# stem kept FP16 by a precision rule (its INT8 convolution runs far below FP16), and
# the FP16 plan in the same run. Calibrates (32 random-normal samples, entropy) when
# /tmp/kiln-int8 has no cache yet. Prints GPU compute medians and the INT8 profile's top.
K=/tmp/kiln/bin/kiln; W=/tmp/kiln-int8; M=/tmp/kiln/models/resnet50.onnx
mkdir -p $W/calib
[ -f $M ] || python3 bench/export_models.py /tmp/kiln/models resnet50 > /dev/null 2>&1
IN=$(python3 -c "import onnx;m=onnx.load('$M',load_external_data=False);print(m.graph.input[0].name)")
S=$IN:256x3x224x224; SH="--min-shapes $S --opt-shapes $S --max-shapes $S"
if [ ! -f $W/resnet50.cache ]; then
  python3 -c "
import numpy as np
rng = np.random.default_rng(20261124)
for i in range(32): np.save('$W/calib/s%02d.npy' % i, rng.standard_normal((3, 224, 224)).astype(np.float32))"
  $K calibrate $M --data $W/calib -o $W/resnet50.cache --batch 8 --quiet || exit 1
fi
timeout 240 $K build $M -o $W/stem16.kiln --backend cuda --int8 --calib-cache $W/resnet50.cache --fp16 \
  --layer-precisions '/conv1/Conv:fp16' --precision-constraints obey --optimization-level 2 $SH --quiet || exit 1
timeout 200 $K build $M -o $W/fp16.kiln --backend cuda --fp16 --optimization-level 2 $SH --quiet || exit 1
for p in stem16 fp16; do
  echo "=== $p: $($K run $W/$p.kiln --shapes $S --no-data-transfers --warmup 200 --iterations 10 --duration 1 2>&1 | grep -E 'GPU Compute Time:' | head -1)"
done
timeout 120 $K run $W/stem16.kiln --shapes $S --no-data-transfers --profile --json > $W/profile.json 2>/dev/null
python3 bench/profile_summary.py < $W/profile.json | head -16
# The engine choices of the slowest INT8 convolutions, every candidate's time.
python3 -c "
import json; d = json.load(open('$W/profile.json')); t = {e['name']: e['averageMs'] for e in d['profile'][1:]}
for l in sorted(d['layers'], key=lambda l: -t.get(l['name'], 0))[:4]: print(round(t.get(l['name'], 0), 3), l['name'][:40], l['implementation'][:400])"
