#!/bin/bash
# stop 39, call 1 (4 x H200, bundle of 7b06a51 = main 0a89436's code): every op's sweep on 4 GPUs beside NCCL,
# then the same on GPUs 0 and 1 of the same host, then the Mono form's overhead on 2 GPUs three times a kind
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
start=$SECONDS
{ nvidia-smi -L; nproc; free -g | head -2; nvidia-smi topo -m; } > $OUT/host.txt 2>&1
ops="allreduce allgather reducescatter broadcast reduce alltoall sendrecv"
timeout 330 bin/gpu-sweep /tmp/s4 4 $ops > /tmp/s4.out 2>&1; echo "gpu-sweep 4 rc=$? at $((SECONDS-start)) s" >> $OUT/log.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 170 bin/gpu-sweep /tmp/s2 2 $ops > /tmp/s2.out 2>&1; echo "gpu-sweep 2 rc=$? at $((SECONDS-start)) s" >> $OUT/log.txt
mkdir -p /tmp/ov
for i in 1 2 3; do for op in allreduce allgather; do
  [ $((SECONDS-start)) -gt 540 ] && break 2
  CUDA_VISIBLE_DEVICES=0,1 timeout 30 bin/jmscclpp bench coll $op --ranks 2 --backend cuda -b 1K -e 1K --overhead 3000 > /tmp/ov/ov2-$op-$i.log 2>&1; echo "rc=$?" >> /tmp/ov/ov2-$op-$i.log
done; done
echo "done at $((SECONDS-start)) s" >> $OUT/log.txt
grep "^==" /tmp/s4.out /tmp/s2.out >> $OUT/log.txt
mkdir -p $OUT/s/4 $OUT/s/2
for n in 4 2; do
  for f in /tmp/s$n/*-graph.log; do grep -E "^#|^ +[0-9]+ |^==|overhead|Call|Exception|ERROR|rror" $f > $OUT/s/$n/$(basename $f); done
  cp /tmp/s$n/*.json $OUT/s/$n/ 2>/dev/null
done
cp /tmp/ov/* $OUT/s/
cd $OUT && tar czf sweep.tgz s && rm -rf s
