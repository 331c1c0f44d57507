#!/usr/bin/env bash
# stop 32, call 2 (4 GPUs): CudaCollectivesGpuTest on 180ee49 (+ a temporary switch); then where the Mono form's overhead goes:
# the stream form with a done word written by its kernel (device memory after a GPU fence; host memory after a GPU fence;
# host memory, no fence) beside the plain stream form and the Mono form
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
timeout 320 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
tail -15 $OUT/tests.txt >> $L
for round in 1 2; do
for x in none host nofence; do
 if [ $x = none ]; then unset JMSCCLPP_X_STREAMDONE; else export JMSCCLPP_X_STREAMDONE=$x; fi
 for k in allreduce sendrecv; do
  echo "== $x $k round $round" >> $L
  timeout 40 bin/jmscclpp bench coll $k --ranks 4 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://' >> $L
 done
done
done
