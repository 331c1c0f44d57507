#!/usr/bin/env bash
# stop 43, call 9 (nvidia-h200-x2), the committed ce allReduce (out of place: two chunks a share into the owner's
# receive buffer, one copy stream, words behind the last copies only, 16 blocks; in place it runs push):
# bench allreduce --algo ce and push beside NCCL 64 MiB-1 GiB, the table's choice 1 KiB-1 GiB, CudaCollectivesGpuTest
# on 2 GPUs, allgather --algo ce (the proxy's change), and ce with 24 blocks
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from round [java opts]
  JMSCCLPP_JAVA_OPTS="${5:-}" timeout 60 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl ${2:+--algo $2} > $L/$1-${2:-table}-$4.log 2>&1
  echo "== $1 ${2:-table} round $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-${2:-table}-$4.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-${2:-table}-$4.log | head -5
}
ab allreduce ce 64M 1; ab allreduce push 64M 1; ab allreduce ce 64M 2; ab allreduce push 64M 2
ab allreduce "" 1K 1
timeout 260 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL" $L/coll-tests.log | cut -c1-400 | sort | uniq -c | head -30
ab allgather ce 256M 1
ab allreduce ce 256M b24 -Djmscclpp.collectives.ceReduceBlocks=24
cd $OUT && tar czf logs.tgz logs && rm -rf logs
