#!/bin/bash
# stop 37, call 4 (1 x H200): every GPU test one GPU can run; self send/recv on the CUDA engine; bench native x3 (each binding in its own JVM)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
nvidia-smi -L > $OUT/gpus.txt
timeout 300 bin/gpu-tests > $OUT/4-gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/4-gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|containers aborted|gpu-tests exit" $OUT/4-gpu-tests.log >> $L
timeout 100 bin/jmscclpp run -n 1 sendrecv --backend cuda --bytes 1M > $OUT/4-sendrecv-self.log 2>&1; echo "rc=$?" >> $OUT/4-sendrecv-self.log
timeout 100 bin/jmscclpp bench coll sendrecv --ranks 1 --backend cuda -b 1K -e 16M -f 16 -n 5 -w 2 > $OUT/4-bench-sendrecv-self.log 2>&1; echo "rc=$?" >> $OUT/4-bench-sendrecv-self.log
tail -n 2 $OUT/4-sendrecv-self.log >> $L; grep -E "Collective test|wrong|rc=" $OUT/4-bench-sendrecv-self.log >> $L
for k in 1 2 3; do
  timeout 150 bin/jmscclpp bench native --idle-seconds 0 > $OUT/4-native-$k.log 2>&1; echo "rc=$?" >> $OUT/4-native-$k.log
  grep -E "\(.*\) \||rc=|warm-up" $OUT/4-native-$k.log >> $L
done
cat $L
