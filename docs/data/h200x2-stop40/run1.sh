#!/usr/bin/env bash
# stop 40, call 1 (nvidia-h200-x2): the hierarchical GPU test with flat and hier forced for small calls,
# then an A/B of the direct kernels' block cap (jmscclpp.collectives.directBlocks 64 = landed, 128) at 16 MiB-1 GiB
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
(nvidia-smi topo -m; nproc; date) > $L/host.txt 2>&1
JMSCCLPP_TEST_SHARE_GPUS=1 timeout 180 /tmp/jmscclpp/bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $L/1-hier-test.log 2>&1
echo "hier test exit $?" >> $L/1-hier-test.log
grep -h "allReduce runs\|across hosts\|tests successful\|tests failed" $L/1-hier-test.log
for round in 1 2; do
  for b in 64 128; do
    for op in broadcast reduce sendrecv allreduce allgather; do
      if (( SECONDS > 480 )); then echo 'out of time'; break 3; fi
      JMSCCLPP_JAVA_OPTS="-Djmscclpp.collectives.directBlocks=$b" timeout 60 $J bench coll $op --ranks 2 --backend cuda \
        -b 16M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --overhead 0 --baseline nccl > $L/ab-$op-$b-$round.log 2>&1
      echo "== $op blocks $b round $round exit $?"; grep -E "^ +[0-9]+ " $L/ab-$op-$b-$round.log | awk '{print $1, $6, $8, $9, $14, $15, $16}'
    done
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
