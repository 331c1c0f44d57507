#!/bin/bash
# call 6 (call 5 compared 20 µs, 1 ms and never): bandwidth over 200 puts of 128 MiB each way (not 20): virtual-thread poller yielding every 20 µs (default),
# every 200 µs and every 1 ms (-Djmscclpp.x.yieldNanos, temporary), alternating, 3 rounds
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; JMSCCLPP_JAVA_OPTS="$X" timeout 100 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for round in 1 2 3; do
  for X in "" -Djmscclpp.x.yieldNanos=200000 -Djmscclpp.x.yieldNanos=1000000; do
    run "round $round variant '$X'" bin/jmscclpp bench proxy --backend cuda --calls 2000 --bw-iters 200
  done
done
grep -E "^== round|round trip|bidirectional|^\| (VIRTUAL|PLATFORM)_THREAD" $OUT/bench.log | sed 's/  */ /g' | awk -F'|' '/^==/{print} /\|/{print $2 "|" $3}' > $OUT/log.txt
