#!/usr/bin/env bash
# stop 44, call 11 (nvidia-h200-x2): in place, the alltoall copies only the slots its peers overwrite (its own stays,
# copied onto itself by the memory kernel): bench alltoall 1-128 MiB (table) and 64-128 MiB --algo ce, then the whole
# CudaCollectivesGpuTest (matrix: alltoall in place on every rank; coll-mixed: one rank in place)
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
timeout 45 $J bench coll alltoall --ranks 2 --backend cuda -b 1M -e 128M -f 2 -n 20 -w 5 -c 1 --graph 10 --overhead 0 > $L/alltoall-table.log 2>&1
echo "== table exit $?"; grep -hE "^ +[0-9]+ " $L/alltoall-table.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
timeout 45 $J bench coll alltoall --ranks 2 --backend cuda -b 64M -e 128M -f 2 -n 20 -w 5 -c 1 --graph 10 --overhead 0 --algo ce > $L/alltoall-ce.log 2>&1
echo "== ce exit $?"; grep -hE "^ +[0-9]+ " $L/alltoall-ce.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
timeout 330 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL" $L/coll-tests.log | cut -c1-600 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
