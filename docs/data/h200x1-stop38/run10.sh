#!/bin/bash
# stop 38, call 10 (7b06a51, 2 x H200, the session's last 286 s of device time): the Mono form's overhead on two GPUs, then the collective GPU tests
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/10-gpus.txt
for op in allreduce allgather; do
  timeout 40 bin/jmscclpp bench coll $op --ranks 2 --backend cuda -b 1K -e 1K --overhead 3000 > $OUT/10-overhead-$op.log 2>&1; echo "rc=$?" >> $OUT/10-overhead-$op.log
  grep -E "Call overhead|rc=" $OUT/10-overhead-$op.log
done
timeout 120 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest --select-class org.jmscclpp.cuda.CudaIpcAcrossUsersGpuTest > $OUT/10-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/10-gpu-tests.log
grep -E "✘|✔|tests (successful|failed|aborted)|gpu-tests exit" $OUT/10-gpu-tests.log | tail -15
