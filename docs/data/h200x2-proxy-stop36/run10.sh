#!/bin/bash
# call 10: the FIFO row: the device push as committed (compare-and-set of head once the slot is free) against a
# temporary kernel with MSCCL++'s claim (one fetch-and-add of head), alternating, 3 rounds
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; JMSCCLPP_JAVA_OPTS="$X" timeout 100 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for round in 1 2 3; do
  for X in "" -Djmscclpp.x.fifoKernel=fifoPushTimedFetchAdd; do
    run "round $round variant '$X'" bin/jmscclpp bench proxy --backend cuda --calls 2000 --bw-iters 20
  done
done
grep -E "^== round|FIFO push" $OUT/bench.log | sed 's/  */ /g' > $OUT/log.txt
