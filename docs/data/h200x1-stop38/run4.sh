#!/bin/bash
# stop 38, call 4 (62c1fa4: close() waits for calls in flight): every one-GPU test, the Mono form's overhead with one rank
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
timeout 300 bin/gpu-tests > $OUT/4-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/4-gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/4-gpu-tests.log >> $L
k=0
for op in allreduce allgather allreduce allgather; do
  k=$((k+1))
  timeout 100 bin/jmscclpp bench coll $op --ranks 1 --backend cuda -b 1K -e 1K --overhead 3000 > $OUT/4-overhead-$k-$op.log 2>&1; echo "rc=$?" >> $OUT/4-overhead-$k-$op.log
  grep -E "Call overhead|rc=" $OUT/4-overhead-$k-$op.log >> $L
done
cat $L
