#!/bin/bash
# call 7: the bundle of the commit (virtual thread yields every 200 µs, bench defaults warm-up 20000 and 200 puts):
# bench proxy twice, then every test tagged gpu
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
for round in 1 2; do
  echo "== round $round $(date +%T)" >> $OUT/bench.log
  timeout 100 bin/jmscclpp bench proxy --backend cuda >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log
done
grep -E "^== round|^\| [A-Z]" $OUT/bench.log | sed 's/  */ /g' > $OUT/log.txt
timeout 400 bin/gpu-tests > $OUT/gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> $OUT/gpu-tests.log
grep -E "✘|tests (successful|failed|aborted)|Test run finished|gpu-tests exit" $OUT/gpu-tests.log >> $OUT/log.txt
