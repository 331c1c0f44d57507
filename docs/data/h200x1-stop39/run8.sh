#!/bin/bash
# stop 39, call 8 (1 x H200, ranks sharing the GPU): the hierarchical engine on GPU ranks with the flat algorithms
# chosen for small calls (CudaHierarchicalGpuTest: 4 ranks as two hosts, every kind, 870 calls)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0 JMSCCLPP_TEST_SHARE_GPUS=1
timeout 200 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $OUT/8-hier-flat.log 2>&1; echo "gpu-tests exit $?" >> $OUT/8-hier-flat.log
grep -E "✘|✔|tests (successful|failed|aborted)|gpu-tests exit|OK coll|algorithms" $OUT/8-hier-flat.log | cut -c1-400 | head -12
