#!/usr/bin/env bash
# stop 43, call 1 (nvidia-h200-x2): the ce allReduce with out-of-place chunks landing in the owner's receive buffer
# (no slots) and in place 4 slots of 16 MiB: bench allreduce --algo ce against push beside NCCL, 16 MiB-1 GiB, two
# rounds; then CudaCollectivesGpuTest on 2 GPUs (ce allreduce in the matrix and the graph)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from round
  timeout 60 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $2 > $L/$1-$2-$4.log 2>&1
  echo "== $1 $2 round $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$2-$4.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-$2-$4.log | head -5
}
for r in 1 2; do ab allreduce ce 16M $r; ab allreduce push 16M $r; done
timeout 260 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL\|ce allreduce" $L/coll-tests.log | cut -c1-400 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
