#!/usr/bin/env bash
# stop 31, call 7: a done word per block (no atomic) against d780bd8's count (V5); tests with a word per block
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
for round in 1 2; do
for v in perblock V5; do
 if [ $v = perblock ]; then export JMSCCLPP_X_PERBLOCK=1; else unset JMSCCLPP_X_PERBLOCK; fi
 for k in allreduce broadcast allgather sendrecv; do
  echo "== $v $k round $round" >> $L
  timeout 40 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://' >> $L
 done
done
done
export JMSCCLPP_X_PERBLOCK=1
echo "== gpu-tests with a word per block" >> $L
timeout 100 bin/gpu-tests --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#groupsMixSendsReceivesAndCollectives --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#mismatchedCallsFailEveryRank --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#externalPointersAndStreams --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#graphCaptureReplaysOnFreshInputs > $OUT/tests.txt 2>&1; echo "rc=$?" >> $L
grep -E "OK coll|✘" $OUT/tests.txt | sort | uniq -c >> $L
tail -5 $OUT/tests.txt >> $L
