#!/bin/bash
# call 4: the virtual-thread poller's bandwidth: default scheduler against one carrier (parallelism=1), alternating, 3 rounds
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; timeout 100 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for round in 1 2 3; do
  run "round $round default" bin/jmscclpp bench proxy --backend cuda --calls 2000
  JAVA_TOOL_OPTIONS=-Djdk.virtualThreadScheduler.parallelism=1 run "round $round parallelism=1" bin/jmscclpp bench proxy --backend cuda --calls 2000
done
grep -E "^== round|round trip|bidirectional|^\| (VIRTUAL|PLATFORM)_THREAD" $OUT/bench.log | sed 's/  */ /g' | awk -F'|' '/^==/{print} /\|/{print $2 "|" $3 "|" $4}' > $OUT/log.txt
