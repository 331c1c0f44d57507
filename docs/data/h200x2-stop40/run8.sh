#!/usr/bin/env bash
# stop 40, call 8 (nvidia-h200-x2): the 2-GPU sweep with ll16's new default (64 blocks at least on two ranks),
# then CudaCollectivesGpuTest on the two GPUs
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
timeout 200 /tmp/jmscclpp/bin/gpu-sweep $L/sweep-2 2 allreduce allgather reducescatter broadcast reduce alltoall sendrecv > $L/sweep.out 2>&1
echo "sweep exit $?"
for f in $L/sweep-2/*-float-graph.log; do echo "-- $(basename $f)"; grep -hE "^ +[0-9]+ " $f | awk '{printf "%s:%s ", $1, $NF} END {print ""}'; grep -h "Mono - stream" $f | head -1 | sed 's/.*Mono - stream = /Mono-stream /'; done
timeout 280 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/8-coll-tests.log 2>&1
echo "coll tests exit $?"
grep -h "tests successful\|tests failed\|matrix:\|OK coll" $L/8-coll-tests.log | sort | uniq -c | head -20
cd $OUT && tar czf logs.tgz logs && rm -rf logs
