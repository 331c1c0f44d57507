#!/bin/bash
# stop 36 call 7 (1 x H200): JMSCCLPP_SCRATCH_BYTES on the CUDA engine (one rank), then every gpu test, from the bundle of 0ae2000
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
for s in 4M 1M; do
  echo "== JMSCCLPP_SCRATCH_BYTES=$s" >> $L
  JMSCCLPP_SCRATCH_BYTES=$s timeout 100 bin/jmscclpp run -n 1 allreduce --backend cuda --bytes 16M --iters 5 >> $L 2>&1; echo "rc=$?" >> $L
done
timeout 400 bin/gpu-tests > $OUT/gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/gpu-tests.log >> $L
