#!/usr/bin/env bash
# stop 32, call 6 (2 GPUs): CudaCollectivesGpuTest after the kernels' part() (share and byteSlice merged); the Mono form's
# overhead as landed, two more rounds
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
timeout 220 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
grep -E "✔|✘|tests successful|tests failed" $OUT/tests.txt >> $L
for round in 1 2; do for k in allreduce broadcast sendrecv; do
  echo "== $k round $round" >> $L
  timeout 40 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://' >> $L
done; done
