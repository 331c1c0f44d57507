#!/usr/bin/env bash
# stop 44, call 10 (nvidia-h200-x2): the in-place alltoall's copy in the IN and OUT areas (to 128 MiB): coll-mixed
# (alltoall up to 128 MiB a buffer) and bench alltoall 64-256 MiB by x2
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
timeout 120 /tmp/jmscclpp/bin/gpu-tests --select-method 'org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#ranksMayMixInPlaceAndOutOfPlace' > $L/coll-mixed.log 2>&1
echo "mixed exit $? at $SECONDS"; grep -h "tests successful\|tests failed\|OK coll\|failures, the first\|FAIL\|wrong\|expected" $L/coll-mixed.log | cut -c1-600 | sort | uniq -c | head -20
for a in "" ce; do
timeout 45 $J bench coll alltoall --ranks 2 --backend cuda -b 64M -e 256M -f 2 -n 20 -w 5 -c 1 --graph 10 --overhead 0 --baseline nccl ${a:+--algo $a} > $L/alltoall-${a:-table}.log 2>&1
echo "== ${a:-table} exit $?"; grep -hE "^ +[0-9]+ " $L/alltoall-${a:-table}.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
