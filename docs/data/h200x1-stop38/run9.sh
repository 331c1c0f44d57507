#!/bin/bash
# stop 38, call 9 (after the review mends): the one-GPU tests and the shared-GPU collective classes
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
timeout 150 bin/gpu-tests > $OUT/9-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/9-gpu-tests.log
JMSCCLPP_TEST_SHARE_GPUS=1 timeout 150 bin/gpu-tests --select-class org.jmscclpp.cuda.CudaAbortGpuTest > $OUT/9-abort-shared.log 2>&1; echo "exit $?" >> $OUT/9-abort-shared.log
grep -E "tests (successful|failed|aborted)|gpu-tests exit" $OUT/9-gpu-tests.log
grep -E "tests (successful|failed|aborted)|^exit" $OUT/9-abort-shared.log
