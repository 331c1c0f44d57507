#!/usr/bin/env bash
# stop 40, call 2 (nvidia-h200-x2): CudaCollectivesGpuTest (2 ranks, own GPUs) with 128 direct blocks by default and
# the whole-message push of sends in pieces; then bench coll of every op 16 MiB-1 GiB (new defaults), sendrecv twice
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
timeout 300 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $L/2-coll-tests.log 2>&1
echo "coll tests exit $?" | tee -a $L/2-coll-tests.log
grep -h "tests successful\|tests failed\|256 MiB\|matrix:\|OK coll" $L/2-coll-tests.log | sort | uniq -c | head -40
for op in sendrecv broadcast reduce allreduce allgather reducescatter alltoall sendrecv; do
  if (( SECONDS > 520 )); then echo 'out of time'; break; fi
  timeout 60 $J bench coll $op --ranks 2 --backend cuda -b 16M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --overhead 0 \
    --baseline nccl > $L/new-$op-$SECONDS.log 2>&1
  echo "== $op exit $?"; grep -hE "^ +[0-9]+ " $L/new-$op-*.log | tail -4 | awk '{print $1, $6, $8, $9, $14, $15, $16}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
