#!/usr/bin/env bash
# stop 42, call 7 (nvidia-h200-x2): the ce allReduce on two ranks (copies of the shares into the owner's scratch
# slots and of the results back by the copy engines, reduced as chunks arrive): bench allreduce --algo ce against
# push beside NCCL, 16 MiB-1 GiB; then CudaCollectivesGpuTest on 2 GPUs (ce allreduce in the matrix and the graph)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from
  timeout 45 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $2 > $L/$1-$2.log 2>&1
  echo "== $1 $2 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$2.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-$2.log | head -5
}
ab allreduce ce 16M; ab allreduce push 16M
timeout 250 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL\|ce allreduce" $L/coll-tests.log | cut -c1-400 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
