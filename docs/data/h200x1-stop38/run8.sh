#!/bin/bash
# stop 38, call 8 (final code): every GPU test with JMSCCLPP_TEST_SHARE_GPUS=1 on the one GPU; a rank's send/recv with itself
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0 JMSCCLPP_TEST_SHARE_GPUS=1
timeout 480 bin/gpu-tests > $OUT/8-gpu-tests-shared.log 2>&1; echo "gpu-tests exit $?" >> $OUT/8-gpu-tests-shared.log
timeout 60 bin/jmscclpp run -n 1 sendrecv --backend cuda --bytes 1M > $OUT/8-sendrecv-self.log 2>&1; echo "rc=$?" >> $OUT/8-sendrecv-self.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/8-gpu-tests-shared.log
grep -E "■" $OUT/8-gpu-tests-shared.log | cut -c1-200
grep -E "OK coll-hosts:|OK vmm-across|coll-matrix" $OUT/8-gpu-tests-shared.log | sort | uniq | head
tail -n 2 $OUT/8-sendrecv-self.log
