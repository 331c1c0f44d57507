#!/bin/bash
# stop 37, call 6 (1 x H200): every GPU test one GPU can run, the Mono form's overhead with one rank, on the final code
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
nvidia-smi -L > $OUT/gpus.txt
timeout 300 bin/gpu-tests > $OUT/6-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/6-gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/6-gpu-tests.log >> $L
for op in allreduce allgather; do
  timeout 120 bin/jmscclpp bench coll $op --ranks 1 --backend cuda -b 1K -e 1K --overhead 3000 > $OUT/6-overhead-$op.log 2>&1; echo "rc=$?" >> $OUT/6-overhead-$op.log
  grep -E "Call overhead|Mono|stream|rc=" $OUT/6-overhead-$op.log >> $L
done
cat $L
