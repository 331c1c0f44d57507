#!/bin/bash
# stop 39, call 2 (4 x H200, bundle of 7b06a51): tuning sweeps of each algorithm on 4 and on 3 ranks (1 KiB - 4 MiB),
# bench tune over each, then every GPU test on the four GPUs (each rank its own GPU)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
start=$SECONDS
for n in 4 3; do
  mkdir -p /tmp/t$n; devs=$([ $n = 3 ] && echo 0,1,2 || echo 0,1,2,3)
  for ka in allreduce:ll16 allreduce:rsag allgather:ll16 allgather:memory reducescatter:ll16 reducescatter:rs broadcast:ll16 broadcast:memory reduce:ll16 reduce:rs alltoall:ll16 alltoall:memory; do
    k=${ka%:*}; a=${ka#*:}; e=4M; [ $a = ll16 ] && e=1M
    CUDA_VISIBLE_DEVICES=$devs timeout 40 bin/jmscclpp bench coll $k --ranks $n --backend cuda -b 1K -e 4M -f 4 -n 40 -w 10 -c 1 --graph 10 --overhead 0 --json /tmp/t$n/$k-$a.json --algo $a -e $e > /tmp/t$n/$k-$a.log 2>&1
    echo "$n $k $a rc=$? at $((SECONDS-start)) s" >> $OUT/log.txt
  done
  bin/jmscclpp bench tune $(for f in /tmp/t$n/*.json; do echo --json $f; done) > /tmp/t$n/tune.txt 2>&1; echo "tune $n rc=$?" >> $OUT/log.txt
done
left=$((585 - (SECONDS-start)))
echo "gpu-tests with ${left} s left" >> $OUT/log.txt
timeout $left bin/gpu-tests > /tmp/gpu-tests.log 2>&1; echo "gpu-tests exit $?" >> /tmp/gpu-tests.log
grep -E "✘|■|tests (successful|failed|aborted)|containers aborted|gpu-tests exit|Test run finished" /tmp/gpu-tests.log | head -40 >> $OUT/log.txt
mkdir -p $OUT/t; cp -r /tmp/t4 /tmp/t3 $OUT/t/; cp /tmp/gpu-tests.log $OUT/t/
cd $OUT && tar czf t.tgz t && rm -rf t
