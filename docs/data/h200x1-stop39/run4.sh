#!/bin/bash
# stop 39, call 4 (1 x H200): crossed send/receive against a collective on the CUDA engine, ranks sharing the GPU
# (2 and 3 ranks), then the other collective GPU scenarios after the change
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0 JMSCCLPP_TEST_SHARE_GPUS=1
nvidia-smi -L > $OUT/gpus.txt
C=org.jmscclpp.cuda.collective.CudaCollectivesGpuTest
timeout 200 bin/gpu-tests --select-method $C#aSendOrReceiveAgainstACollectiveFailsEveryRankAtOnce --select-method $C#mismatchedCallsFailEveryRank --select-method $C#groupsMixSendsReceivesAndCollectives --select-method $C#graphCaptureReplaysOnFreshInputs > $OUT/4-crossing.log 2>&1; echo "gpu-tests exit $?" >> $OUT/4-crossing.log
grep -E "✘|✔|■|tests (successful|failed|aborted)|gpu-tests exit|crossed calls reported" $OUT/4-crossing.log | cut -c1-400 | head -30
timeout 330 bin/gpu-tests --select-method $C#everyKindTypeCountOffsetPlacementAndAlgorithm > $OUT/4-matrix.log 2>&1; echo "gpu-tests exit $?" >> $OUT/4-matrix.log
grep -E "✘|■|tests (successful|failed|aborted)|gpu-tests exit|OK coll" $OUT/4-matrix.log | head
