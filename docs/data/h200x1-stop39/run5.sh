#!/bin/bash
# stop 39, call 5 (1 x H200, ranks sharing the GPU): two wraps of one pointer (coll-external), the hierarchical engine's
# new descriptor streams (coll-hosts: 4 ranks as two hosts), crossed calls again
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0 JMSCCLPP_TEST_SHARE_GPUS=1
C=org.jmscclpp.cuda.collective.CudaCollectivesGpuTest
timeout 400 bin/gpu-tests --select-method $C#externalPointersAndStreams --select-method $C#aSendOrReceiveAgainstACollectiveFailsEveryRankAtOnce --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $OUT/5-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/5-gpu-tests.log
grep -E "✘|✔|■|tests (successful|failed|aborted)|gpu-tests exit|OK coll|Test run finished" $OUT/5-gpu-tests.log | cut -c1-300 | head -30
