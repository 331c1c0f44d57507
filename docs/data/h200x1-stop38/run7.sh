#!/bin/bash
# stop 38, call 7: every GPU test with JMSCCLPP_TEST_SHARE_GPUS=1 on the one GPU (ranks share it: correctness only)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0 JMSCCLPP_TEST_SHARE_GPUS=1
timeout 560 bin/gpu-tests > $OUT/7-gpu-tests-shared.log 2>&1; echo "gpu-tests exit $?" >> $OUT/7-gpu-tests-shared.log
grep -E "✘|■|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/7-gpu-tests-shared.log | head -40
grep -E "^OK |FAIL|Exception" $OUT/7-gpu-tests-shared.log | cut -c1-220 | head -60
