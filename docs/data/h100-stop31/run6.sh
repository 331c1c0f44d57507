#!/usr/bin/env bash
# stop 31, call 6: d780bd8 on 4 GPUs: Mono overhead of every kind on 4 and 2 ranks; CudaCollectivesGpuTest whole
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/overhead.txt
for ranks in 4 2; do
 for k in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
  echo "== $k --ranks $ranks" >> $L
  timeout 60 bin/jmscclpp bench coll $k --ranks $ranks --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror|wrong" >> $L
 done
done
timeout 400 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "rc=$?" >> $L
grep -E "OK coll|✘|failed|Error" $OUT/tests.txt | head -30 >> $L
tail -14 $OUT/tests.txt >> $L
