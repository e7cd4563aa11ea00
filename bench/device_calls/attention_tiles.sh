#!/bin/bash
# Session 2026-11-29, device call 1: GPU tests of the moved LN / FusedConv fixes / attention
# tiles (each tile under KILN_ATTENTION_TILE), the attention layer probe per tile, memcheck,
# and ViT/BERT zoo rows with profiles.
set -u
mkdir -p /tmp/kiln /tmp/logs; tar xJf .device/bundle.tar.xz -C /tmp/kiln
export LD_LIBRARY_PATH=/tmp/kiln/lib:/usr/local/cuda/lib64:$(python3 -c "import nvidia.cudnn,os;print(os.path.join(nvidia.cudnn.__path__[0],'lib'))")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/logs/gpu.txt
B=/tmp/kiln/bin
for t in test_cuda_reduce_norm test_cuda_fused_conv; do
  timeout 120 $B/$t > /tmp/logs/$t.txt 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/logs/$t.txt | tr '\n' ' ')"
done
for tile in 1x64 2x64 1x128 2x128; do
  KILN_ATTENTION_TILE=$tile timeout 120 $B/test_cuda_fused_attention > /tmp/logs/attn_$tile.txt 2>&1
  echo "attention tests tile $tile rc=$? $(grep -E '^\[  (PASSED|FAILED) |FAILED  \]' /tmp/logs/attn_$tile.txt | tr '\n' ' ')"
done
for tile in 1x64 2x64 1x128 2x128; do
  echo "== probe tile $tile"
  KILN_ATTENTION_TILE=$tile timeout 150 python3 bench/layer_probe.py --kiln $B/kiln --work /tmp/probe_$tile \
    --cases attn_vit_b16,attn_deit_s,attn_bert_base,attn_long_1024,attn_levit_like 2>&1 | grep "^| attn" | cut -c1-220
done | tee /tmp/logs/probe.txt
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 $B/test_cuda_fused_attention > /tmp/logs/memcheck_attn.txt 2>&1
echo "memcheck attention rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' /tmp/logs/memcheck_attn.txt | tr '\n' ' ' | cut -c1-300)"
OUT=/tmp/logs/zoo ZOO_TIMEOUT=200 sh bench/zoo_device.sh vit_b_16,bert_base_sdpa --budget 150 --profile > /tmp/logs/zoo_stdout.txt 2>&1
grep -E "eager|ms total|FusedAttention|MatMul|Gemm|LayerNorm|Transpose|Gelu|Add " /tmp/logs/zoo_stdout.txt | head -40 | cut -c1-250
tar czf $OUT/logs.tgz -C /tmp logs
