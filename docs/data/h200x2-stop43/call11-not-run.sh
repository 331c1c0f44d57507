#!/usr/bin/env bash
# stop 43, call 11 (nvidia-h200-x2; refused: the device time was spent; for the next session): the ce allReduce deciding in the kernel (push where either rank is in place,
# from both ranks' descriptors; the push grid launched, 16 blocks reducing): the new coll-mixed scenario (allreduce
# with one rank in place, every algorithm), bench allreduce --algo ce and the table's choice 64 MiB-1 GiB
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
timeout 60 /tmp/jmscclpp/bin/gpu-tests --select-method 'org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#ranksMayMixInPlaceAndOutOfPlace' > $L/coll-mixed.log 2>&1
echo "mixed exit $? at $SECONDS"; grep -h "tests successful\|tests failed\|OK coll\|failures, the first\|FAIL" $L/coll-mixed.log | cut -c1-600 | sort | uniq -c | head
for a in ce ""; do
  timeout 40 $J bench coll allreduce --ranks 2 --backend cuda -b 64M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 ${a:+--algo $a} > $L/allreduce-${a:-table}.log 2>&1
  echo "== ${a:-table} exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/allreduce-${a:-table}.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
