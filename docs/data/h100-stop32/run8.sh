#!/usr/bin/env bash
# stop 32, call 8 (2 GPUs): CudaCollectivesGpuTest after Comm lost its unused slot (216 -> 208 bytes); the Mono overhead once
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 220 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "tests rc=$?"
grep -E "✔|✘|tests successful|tests failed" $OUT/tests.txt
for k in allreduce sendrecv; do echo "== $k"; timeout 40 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://'; done
