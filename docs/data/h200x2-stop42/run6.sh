#!/usr/bin/env bash
# stop 42, call 6 (nvidia-h200-x2): sends by the copy engines (sendrecv --algo ce against direct, 1 MiB-1 GiB);
# gpu-sweep of allgather, alltoall, broadcast, sendrecv with the new table rows (ce from 64 MiB / 16 MiB up);
# then CudaCollectivesGpuTest on 2 GPUs (the matrix with ce for allgather, alltoall, broadcast and sends)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from round
  timeout 70 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $2 > $L/$1-$2-$4.log 2>&1
  echo "== $1 $2 round $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$2-$4.log | awk '{printf "%s: oop %s %s | #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $9, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-$2-$4.log | head -5
}
for r in 1 2; do ab sendrecv ce 1M $r; ab sendrecv direct 1M $r; done
timeout 150 /tmp/jmscclpp/bin/gpu-sweep $L/sweep-2 2 allgather alltoall broadcast sendrecv > $L/sweep.out 2>&1
echo "sweep exit $? at $SECONDS"
for f in $L/sweep-2/*-float-graph.log; do echo "-- $(basename $f)"; grep -hE "^ +[0-9]+ " $f | awk '{printf "%s:%s ", $1, $NF} END {print ""}'; grep -hE "^ +[0-9]+ " $f | awk '{w+=$9+$13} END {print "wrong " w}'; grep -hE "^ +1073741824 " $f | awk '{print "1G busbw " $8 " nccl " $(NF-1) " algo " $5}'; done
timeout 400 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/coll-tests.log 2>&1
echo "coll tests exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first\|256 MiB" $L/coll-tests.log | cut -c1-300 | sort | uniq -c | head -40
cd $OUT && tar czf logs.tgz logs && rm -rf logs
