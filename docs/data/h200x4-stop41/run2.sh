#!/usr/bin/env bash
# stop 41, call 2 (nvidia-h200-x4): the push algorithms (allreduce, reduce, broadcast: stores only, rounds of chunks)
# against rsag / rs / memory, 4 ranks and 2, beside NCCL; then CudaCollectivesGpuTest on the 4 GPUs
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # ranks op algo from
  timeout 45 $J bench coll $2 --ranks $1 --backend cuda -b $4 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $3 > $L/ab$1-$2-$3.log 2>&1
  echo "== $1 ranks $2 $3 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/ab$1-$2-$3.log | awk '{printf "%s: %s %s %s #%s | %s %s\n", $1, $6, $8, $(NF-1), $9, $(NF-2), $NF}'
  grep -h "rror\|xception" $L/ab$1-$2-$3.log | head -5
}
ab 4 allreduce push 1M; ab 4 allreduce rsag 1M
ab 4 reduce push 1M; ab 4 reduce rs 1M
ab 4 broadcast push 1M; ab 4 broadcast memory 1M
export CUDA_VISIBLE_DEVICES=0,1
ab 2 reduce push 16M; ab 2 reduce rs 16M
ab 2 allreduce push 16M; ab 2 allreduce rsag 16M
unset CUDA_VISIBLE_DEVICES
timeout $((590 - SECONDS)) /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|256 MiB" $L/coll-tests.log | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
