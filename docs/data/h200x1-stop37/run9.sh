#!/bin/bash
# stop 37, call 8 (1 x H200): every GPU test one GPU can run, on the final code (5b6b331)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
timeout 300 bin/gpu-tests > $OUT/9-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/9-gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/9-gpu-tests.log >> $L
timeout 100 bin/jmscclpp run -n 1 sendrecv --backend cuda --bytes 1M > $OUT/9-sendrecv-self.log 2>&1; echo "rc=$?" >> $OUT/9-sendrecv-self.log
tail -n 2 $OUT/9-sendrecv-self.log >> $L
cat $L
