#!/usr/bin/env bash
# stop 41, call 3 (nvidia-h200-x4): chains (reduce from rank 0 to the last; broadcast from the root) against rs / memory
# on 4 ranks beside NCCL; then CudaCollectivesGpuTest on the 4 GPUs (push checks on every root in turn)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # ranks op algo from [extra]
  timeout 45 $J bench coll $2 --ranks $1 --backend cuda -b $4 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $3 ${5:-} > $L/ab$1-$2-$3${5:+-r}.log 2>&1
  echo "== $1 ranks $2 $3 ${5:-} exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/ab$1-$2-$3${5:+-r}.log | awk '{printf "%s: %s %s %s #%s | %s %s\n", $1, $6, $8, $(NF-1), $9, $(NF-2), $NF}'
  grep -h "rror\|xception" $L/ab$1-$2-$3${5:+-r}.log | head -5
}
ab 4 reduce push 64K; ab 4 reduce rs 64K
ab 4 broadcast push 64K; ab 4 broadcast memory 64K
ab 4 reduce push 16M "-r 3"
timeout $((580 - SECONDS)) /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first" $L/coll-tests.log | cut -c1-600 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
