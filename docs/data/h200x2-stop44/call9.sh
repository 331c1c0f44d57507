#!/usr/bin/env bash
# stop 44, call 9 (nvidia-h200-x2): an alltoall in place on registered buffers sends from a copy of its data in the
# IN area (direct, as its peers out of place), staged only beyond it: coll-mixed (allreduce and now alltoall with
# one rank or every rank in place), bench alltoall 1-256 MiB with this bundle (B) and with the landed main's core and
# native-bridge jars in its place (A), alternating, two rounds; then the whole CudaCollectivesGpuTest
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
mkdir -p /tmp/B /tmp/A && tar xzf dist/bundle.tgz -C /tmp/B && tar xzf dist/bundle.tgz -C /tmp/A && cp .tmp-device/oldjars/*.jar /tmp/A/jmscclpp/lib/
timeout 90 /tmp/B/jmscclpp/bin/gpu-tests --select-method 'org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#ranksMayMixInPlaceAndOutOfPlace' > $L/coll-mixed.log 2>&1
echo "mixed exit $? at $SECONDS"; grep -h "tests successful\|tests failed\|OK coll\|failures, the first\|FAIL\|wrong\|expected" $L/coll-mixed.log | cut -c1-600 | sort | uniq -c | head -20
for round in 1 2; do for v in A B; do
  timeout 45 /tmp/$v/jmscclpp/bin/jmscclpp bench coll alltoall --ranks 2 --backend cuda -b 1M -e 256M -f 4 -n 20 -w 5 -c 1 --graph 10 --overhead 0 > $L/alltoall-$v-$round.log 2>&1
  echo "== $v round $round exit $?"; grep -hE "^ +[0-9]+ " $L/alltoall-$v-$round.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
done; done
timeout 330 /tmp/B/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|FAIL" $L/coll-tests.log | cut -c1-600 | sort | uniq -c | head -30
cd $OUT && tar czf logs.tgz logs && rm -rf logs
