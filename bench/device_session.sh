# One device call: selected GPU tests, the builder bench, and the channels-last A/B.
# Usage: sh bench/device_session.sh "test_a test_b" MODELS [extra|rtf|bert1|int8]
tests=$1; models=$2; part=${3:-}
out=/tmp/kiln-logs; mkdir -p $out /tmp/kiln
tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
d=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))" 2>/dev/null)
[ -n "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
export KILN_TEST_DATA_DIR=$(pwd)/tests/data KILN_MODELS_DIR=$(pwd)/resources/models
export KILN_EXAMPLE_PLUGINS=/tmp/kiln/lib/libkiln_example_plugins.so KILN_EXAMPLE_MODELS_DIR=$(pwd)/examples/plugins/models
if [ -n "${PROBE:-}" ]; then
  echo "=== cuDNN INT8 probe"
  timeout 120 /tmp/kiln/bin/kiln_cudnn_int8_probe 256 > $out/cudnn_int8_probe.txt 2>&1
  tail -9 $out/cudnn_int8_probe.txt; cp $out/cudnn_int8_probe.txt $OUT/ 2>/dev/null
fi
if [ -n "${MMA_PROBE:-}" ]; then
  echo "=== Kiln int8 MMA kernel probe"
  # KILN_INT8_WGMMA_TILES=1: the wgmma tiles (not raced by default) join the probe.
  KILN_INT8_WGMMA_TILES=1 timeout 120 /tmp/kiln/bin/kiln_int8_mma_probe 256 > $out/int8_mma_probe.txt 2>&1
  cat $out/int8_mma_probe.txt; cp $out/int8_mma_probe.txt $OUT/ 2>/dev/null
fi
# ATTN_NCU=1 (e.g. `ATTN_NCU=1 sh bench/device_session.sh "" ""`): Nsight Compute on the
# attention race at model scale (issue 22's short-sequence
# attention: BERT-base B128 S128 with the SDPA mask, ViT-B/16 B64, B8 H12 S1024; the bundle
# needs test_cuda_attention_cudnn): Kiln's flash kernel (attentionTensorCore) and cuDNN's
# SDPA kernel, each case's fp16 launches, with the stall reasons. What to read: duration
# against the DRAM floor (BERT: ~105 MB a layer), achieved occupancy, long-scoreboard
# (memory) against barrier and math stalls.
if [ -n "${ATTN_NCU:-}" ]; then
  echo "=== ncu: attention kernels at model scale"
  m=""; for r in long_scoreboard barrier short_scoreboard mio_throttle lg_throttle math_pipe_throttle wait not_selected selected; do
    m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
  timeout 300 ncu --clock-control none --kernel-name regex:"attentionTensorCore|sdpa|flash_fprop" --launch-count 24 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --metrics "${m#,}" \
    /tmp/kiln/bin/test_cuda_attention_cudnn --gtest_also_run_disabled_tests \
    --gtest_filter='*RaceAtModelScale' > $out/ncu_attention.txt 2>&1
  grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|stalled|^[A-Z].*: " $out/ncu_attention.txt | cut -c1-160 | head -150
  cp $out/ncu_attention.txt $OUT/ 2>/dev/null
fi
# NCU_PROBE="layer tile|layer tile": Nsight Compute on one layer of the probe each
# (the kernel's 24th launch: after the stream kernel's 23 and 3 warm-ups).
echo "${NCU_PROBE:-}" | tr '|' '\n' | while read -r layer tile; do
  [ -n "$layer" ] || continue
  echo "=== ncu: probe layer $layer tile $tile"
  m=""; for r in long_scoreboard barrier short_scoreboard mio_throttle lg_throttle math_pipe_throttle wait not_selected selected dispatch_stall drain membar no_instruction tex_throttle branch_resolving; do
    m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
  timeout 200 ncu --clock-control none --kernel-name regex:"int8Conv(Mma|Wgmma)" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section SchedulerStats --metrics ${m#,} \
    /tmp/kiln/bin/kiln_int8_mma_probe 256 $layer $tile > $out/ncu_$layer.txt 2>&1
  grep -vE "^==PROF==|^ +-+ +-+|^ *$|Metric Name" $out/ncu_$layer.txt | grep -vE "^    [A-Z][a-z]+ .*(rule|section)" | cut -c1-150 | head -70
  cp $out/ncu_$layer.txt $OUT/ 2>/dev/null
done
for t in $tests; do
  timeout 300 /tmp/kiln/bin/$t --gtest_brief=1 > $out/$t.log 2>&1
  echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED)' $out/$t.log | tr '\n' ' ')"
  cp $out/$t.log $OUT/ 2>/dev/null  # now: a call cut at its limit still returns it
  grep -A8 "Failure" $out/$t.log | head -30
done
K=/tmp/kiln/bin/kiln
if [ -n "$models" ]; then
  python3 bench/export_models.py /tmp/kiln/models $(echo $models | tr , ' ') > $out/export.log 2>&1 || tail -5 $out/export.log
  PYTHONUNBUFFERED=1 python3 bench/build_bench.py $K /tmp/kiln/models $out --only=$models ${BUILD_BENCH_CASES:+--cases=$BUILD_BENCH_CASES} 2>&1 | tee $out/build_bench.log | python3 -c "
import sys, json
for line in sys.stdin:
    if not line.startswith('{'): print(line.rstrip()); continue
    r = json.loads(line); c = r.get('cold', {}); w = r.get('warm', {})
    print(r['model'], r['mode'], 'cold', c.get('build_seconds', c.get('error')), 'warm', w.get('build_seconds'), w.get('timing_cache', {}).get('hit_rate'),
          'layers', c.get('layers'), 'fusions', c.get('fusions'), 'kiln', r.get('kiln'), 'torch', r.get('torch_ms'), 'ratio', r.get('speed_ratio'))"
  cp $out/build_bench.json $OUT/ 2>/dev/null
fi
if [ "$part" = extra ]; then
  M=/tmp/kiln/models/resnet50.onnx
  [ -f $M ] || python3 bench/export_models.py /tmp/kiln/models resnet50 > /dev/null 2>&1
  IN=$(python3 -c "import onnx;m=onnx.load('$M',load_external_data=False);print(m.graph.input[0].name)")
  S=$IN:256x3x224x224; SH="--min-shapes $S --opt-shapes $S --max-shapes $S"
  echo "=== profile fp16 plan"
  $K run $out/resnet50_b256_fp16.kiln --shapes $S --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -24
  echo "=== A/B: fp16 without channels_last_layout, then with"
  $K build $M -o /tmp/nchw.kiln --backend cuda --fp16 --optimization-level 2 --disable-pass channels_last_layout $SH > /dev/null 2>&1 || echo build failed
  $K run /tmp/nchw.kiln --shapes $S --no-data-transfers 2>&1 | grep -iE "GPU Compute" | head -2
  $K run $out/resnet50_b256_fp16.kiln --shapes $S --no-data-transfers 2>&1 | grep -iE "GPU Compute" | head -2
fi
if [ "$part" = extra ]; then
  echo "=== tf32 with channels-last forced (KILN_CHANNELS_LAST=1)"
  KILN_CHANNELS_LAST=1 $K build $M -o /tmp/tf32nhwc.kiln --backend cuda --optimization-level 2 $SH > /dev/null 2>&1 || echo build failed
  $K run /tmp/tf32nhwc.kiln --shapes $S --no-data-transfers 2>&1 | grep -iE "GPU Compute" | head -1
  $K run $out/resnet50_b256_tf32.kiln --shapes $S --no-data-transfers 2>&1 | grep -iE "GPU Compute" | head -1
  $K run /tmp/tf32nhwc.kiln --shapes $S --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -8
fi
if [ "$part" = rtf ]; then
  M=/tmp/kiln/models/resnet50.onnx
  [ -f $M ] || python3 bench/export_models.py /tmp/kiln/models resnet50 > /dev/null 2>&1
  IN=$(python3 -c "import onnx;m=onnx.load('$M',load_external_data=False);print(m.graph.input[0].name)")
  S=$IN:256x3x224x224; SH="--min-shapes $S --opt-shapes $S --max-shapes $S"
  echo "=== runtime fusion experiment"
  ( time env KILN_CUDNN_RUNTIME_FUSION=1 timeout 400 $K build $M -o /tmp/rtf.kiln --backend cuda --fp16 --optimization-level 2 $SH > /tmp/rtf.log 2>&1 ) 2>&1 | tail -3
  tail -2 /tmp/rtf.log
  ( time env KILN_CUDNN_RUNTIME_FUSION=1 timeout 300 $K run /tmp/rtf.kiln --shapes $S --no-data-transfers 2>&1 | grep -iE "GPU Compute" | head -2 ) 2>&1
  KILN_CUDNN_RUNTIME_FUSION=1 timeout 300 $K run /tmp/rtf.kiln --shapes $S --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -20
fi
if [ "$part" = int8 ]; then
  # Issue 8: ResNet-50 INT8 b256 vs our FP16 and eager FP16, top-1 vs FP32, the ORT QDQ
  # MobileNetV2 (bench/int8_bench.py; work files in /tmp/kiln-int8, results in $out).
  fp=""; case ",$models," in *,resnet50,*) fp=--fp16-plan=$out/resnet50_b256_fp16.kiln;; esac
  echo "=== int8"
  # The script bounds itself (--budget, 220 s); INT8_BENCH_ARGS adds options (e.g. --skip=qdq).
  PYTHONUNBUFFERED=1 timeout 560 python3 bench/int8_bench.py $K /tmp/kiln/models $out $fp ${INT8_BENCH_ARGS:-} 2>&1 | tee $out/int8_bench.log
  cp $out/int8_bench.json $OUT/ 2>/dev/null
  IN=$(python3 -c "import onnx;m=onnx.load('/tmp/kiln/models/resnet50.onnx',load_external_data=False);print(m.graph.input[0].name)" 2>/dev/null)
  if [ -f /tmp/kiln-int8/resnet50_b256_int8.kiln ]; then
    echo "=== int8 plan profile"
    timeout 120 $K run /tmp/kiln-int8/resnet50_b256_int8.kiln --shapes $IN:256x3x224x224 --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -30
    timeout 60 $K inspect /tmp/kiln-int8/resnet50_b256_int8.kiln --layers > $out/int8_layers.txt 2>&1
    grep -c "cudnn int8" $out/int8_layers.txt; grep "generated kernels" $out/int8_layers.txt
    echo "=== int8 plan: load and first run from the file (cuDNN plans restored, nothing compiled)"
    bash -c "time timeout 120 $K run /tmp/kiln-int8/resnet50_b256_int8.kiln --shapes $IN:256x3x224x224 --no-data-transfers --warmup 0 --iterations 1 --duration 0 > /dev/null 2>&1" 2>&1 | grep real
    timeout 120 $K run /tmp/kiln-int8/resnet50_b256_int8.kiln --shapes $IN:256x3x224x224 --no-data-transfers --profile --json > $out/int8_profile.json 2>/dev/null
    # STEM_NCU=1: Nsight Compute on the fused stem kernel (conv_max_pool_impl.cu), third launch.
    if [ -n "${STEM_NCU:-}" ]; then
      echo "=== ncu: the stem kernel"
      timeout 150 ncu --clock-control none --kernel-name regex:convMaxPool --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
        $K run /tmp/kiln-int8/resnet50_b256_int8.kiln --shapes $IN:256x3x224x224 --no-data-transfers \
        --warmup 0 --iterations 4 --duration 0 > $out/ncu_stem.txt 2>&1
      grep -vE "^==PROF==|^ +-+ +-+|^ *$|Metric Name" $out/ncu_stem.txt | grep -vE "^    [A-Z][a-z]+ .*(rule|section)" | cut -c1-150 | head -60
    fi
  fi
  # The same INT8 build under other settings: INT8_AB="ENV=V ...|ENV=V ..." (one build
  # and run per '|'-separated entry; INT8_AB_FLAGS: flags for all of them).
  echo "${INT8_AB:-}" | tr '|' '\n' | while read -r ab; do
    [ -n "$ab" ] || continue
    S=$IN:256x3x224x224
    echo "=== int8 A/B: $ab ${INT8_AB_FLAGS:-}"
    bash -c "time env $ab timeout 300 $K build /tmp/kiln/models/resnet50.onnx -o /tmp/kiln-int8/ab.kiln --backend cuda --int8 --calib-cache /tmp/kiln-int8/resnet50.cache --fp16 ${INT8_AB_FLAGS:-} --optimization-level 2 --min-shapes $S --opt-shapes $S --max-shapes $S --quiet" 2>&1 | grep -E "real|rror"
    env $ab $K run /tmp/kiln-int8/ab.kiln --shapes $S --no-data-transfers --warmup 200 --iterations 10 --duration 1 2>&1 | grep -E "GPU Compute Time:" | head -1
  done
fi
tar cf - -C $out --exclude='*.kiln' . | xz -6 > $OUT/logs.tar.xz
if [ "$part" = bert1 ]; then
  M=/tmp/kiln/models/bert_base.onnx
  [ -f $M ] || python3 bench/export_models.py /tmp/kiln/models bert_base > /dev/null 2>&1
  S=input_ids:1x128,attention_mask:1x128; SH="--min-shapes $S --opt-shapes $S --max-shapes $S"
  for d in none fuse_pointwise_chain fuse_gelu; do
    flag=""; [ $d != none ] && flag="--disable-pass $d"
    $K build $M -o /tmp/b1_$d.kiln --backend cuda --fp16 --optimization-level 2 $flag $SH > /tmp/b1_$d.log 2>&1 || tail -2 /tmp/b1_$d.log
    echo "=== bert b1 fp16 disable=$d: $($K run /tmp/b1_$d.kiln --shapes $S --no-data-transfers --cuda-graph 2>&1 | grep -E 'GPU Compute Time:' | head -1)"
  done
  $K run /tmp/b1_none.kiln --shapes $S --no-data-transfers --profile --json 2>/dev/null | python3 bench/profile_summary.py | head -26
fi
