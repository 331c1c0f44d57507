#!/bin/bash
# stop 37, call 8 (1 x H200): the Mono form's overhead with one rank, twice per kind, without the extra subscription per call (calls 6, 7 followed each call with one, cached)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
nvidia-smi -L > $OUT/gpus.txt
k=0
for op in allreduce allgather allreduce allgather; do
  k=$((k+1))
  timeout 120 bin/jmscclpp bench coll $op --ranks 1 --backend cuda -b 1K -e 1K --overhead 3000 > $OUT/8-overhead-$k-$op.log 2>&1; echo "rc=$?" >> $OUT/8-overhead-$k-$op.log
  grep -E "Call overhead|rc=" $OUT/8-overhead-$k-$op.log >> $L
done
cat $L
