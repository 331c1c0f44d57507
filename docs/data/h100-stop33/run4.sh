#!/usr/bin/env bash
# stop 33, call 4: every block reads the other end's descriptor itself (no block-0 hand-off, Comm 208 -> 200);
# CudaCollectivesGpuTest; sendrecv against NCCL for inline max:bytes-per-block variants, 2 rounds
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp
timeout 250 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error" $OUT/tests.log | head -20 >> $L
tail -4 $OUT/tests.log >> $L
for round in 1 2; do
 for v in 262144_4096 262144_8192 65536_8192 0_8192; do
  export X_INLINE_MAX=${v%_*} X_INLINE_BLOCK=${v#*_}
  echo "== $v round $round" >> $L
  timeout 50 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1M -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$v-$round.txt 2>&1; echo "rc=$?" >> $L
  grep -E "^ +[0-9]+ " $OUT/bench-$v-$round.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
 done
done
