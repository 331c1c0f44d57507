#!/usr/bin/env bash
# stop 44, call 1 (nvidia-h200-x2): stop 43's unrun kernel-side ce/push decision: bench allreduce --algo ce and the
# table 64 MiB-1 GiB, then the whole CudaCollectivesGpuTest (includes the new coll-mixed scenario)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv > $L/gpus.txt 2>&1
for a in ce ""; do
  timeout 45 $J bench coll allreduce --ranks 2 --backend cuda -b 64M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl ${a:+--algo $a} > $L/allreduce-${a:-table}.log 2>&1
  echo "== ${a:-table} exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/allreduce-${a:-table}.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/allreduce-${a:-table}.log | head -5
done
timeout 330 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL\|coll-mixed" $L/coll-tests.log | cut -c1-600 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
