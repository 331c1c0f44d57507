#!/bin/bash
# stop 36 call 1 (1 x H200): fifo tests, FIFO row A/B (fetch-and-add claim, committed 6c7b1f8, against the previous compare-and-set claim as a temporary kernel), then every gpu test
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
L=$OUT/log.txt
timeout 150 bin/gpu-tests --select-class org.jmscclpp.cuda.FifoAfterTimeoutGpuTest --select-class org.jmscclpp.cuda.CudaBackendGpuTest > $OUT/fifo-tests.log 2>&1; echo "fifo tests rc=$?" >> $L
grep -E "✘|tests (successful|failed|aborted)" $OUT/fifo-tests.log >> $L
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; JMSCCLPP_JAVA_OPTS="$X" timeout 100 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for round in 1 2 3; do
  for X in "" -Djmscclpp.x.fifoKernel=fifoPushTimedCas; do
    run "round $round variant '$X'" bin/jmscclpp bench proxy --backend cuda --calls 2000 --bw-iters 20
  done
done
grep -E "^== round|FIFO push|^== exit" $OUT/bench.log | sed 's/  */ /g' >> $L
timeout 280 bin/gpu-tests > $OUT/gpu-tests.log 2>&1; echo "gpu-tests rc=$?" >> $L
grep -E "✘|tests (successful|failed|aborted)" $OUT/gpu-tests.log >> $L
