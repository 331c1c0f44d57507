#!/usr/bin/env bash
# stop 40, call 5 (nvidia-h200-x2): CudaHierarchicalGpuTest with tuning-cuda.txt's new hosts rows (4 ranks sharing the
# 2 GPUs as 2 hosts), then an A/B of the flat call's spin before blocking on the peers' descriptors (0 = landed,
# 50, 200 us), 2 GPUs as 2 hosts beside NCCL over sockets
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
JMSCCLPP_TEST_SHARE_GPUS=1 timeout 200 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $L/5-hier-test.log 2>&1
echo "hier test exit $?"
grep -h "allReduce runs\|across hosts\|tests successful\|tests failed" $L/5-hier-test.log | sort | uniq -c
export NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
for round in 1 2; do
  for spin in 0 50 200; do
    for op in allreduce allgather; do
      if (( SECONDS > 480 )); then echo 'out of time'; break 3; fi
      JMSCCLPP_JAVA_OPTS="-Djmscclpp.x.agreementSpinMicros=$spin" timeout 60 $J bench coll $op --ranks 2 --hosts 2 \
        --backend cuda --baseline nccl -b 1K -e 64K -f 4 -n 1000 -w 1000 -c 1 --overhead 0 > $L/spin-$op-$spin-$round.log 2>&1
      echo "== $op spin $spin round $round exit $?"; grep -hE "^ +[0-9]+ " $L/spin-$op-$spin-$round.log | awk '{printf "%s: %s %s %s %s | ", $1, $6, $10, $14, $16} END {print ""}'
    done
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
