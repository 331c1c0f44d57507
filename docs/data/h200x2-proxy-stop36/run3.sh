#!/bin/bash
# call 3: how the token (signal) is stored after the put: cuStreamWriteValue64 (default), an 8-byte HtoD copy with the
# polled flush kept (x.tokenMemcpy), the write value without its memory barrier (x.noBarrier: information only), and
# the shipped fallback (cuda.tokenCopies: HtoD copies and event flushes); 3 rounds, warm-up 20000
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; JMSCCLPP_JAVA_OPTS="$X" timeout 100 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for round in 1 2 3; do
  for X in "" -Djmscclpp.x.tokenMemcpy=true -Djmscclpp.x.noBarrier=true -Djmscclpp.cuda.tokenCopies=true; do
    run "round $round variant '$X'" bin/jmscclpp bench proxy --backend cuda --calls 2000
  done
done
grep -E "^==|round trip|VIRTUAL_THREAD |PLATFORM_THREAD |bidirectional" $OUT/bench.log > $OUT/log.txt
