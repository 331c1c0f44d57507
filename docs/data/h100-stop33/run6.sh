#!/usr/bin/env bash
# stop 33, call 6 (the 4-GPU host of call 5, two of its GPUs): the same bundle; CudaCollectivesGpuTest on 2 ranks,
# then sendrecv on 2 ranks against NCCL from 1 KiB to 1 GiB, 2 rounds
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0,1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp
timeout 250 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error|send/recv mismatch reported|OK coll" $OUT/tests.log | head -20 >> $L
tail -4 $OUT/tests.log >> $L
for round in 1 2; do
  echo "== round $round" >> $L
  timeout 120 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$round.txt 2>&1; echo "rc=$?" >> $L
  grep -E "^ +[0-9]+ " $OUT/bench-$round.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
done
