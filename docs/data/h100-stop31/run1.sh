#!/usr/bin/env bash
# stop 31, call 1: p2p done-in-kernel correctness + A/B of the Mono overhead; async-profiler on the overhead
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
echo "== gpu-tests CudaCollectivesGpuTest (groups, mismatched, external, graph)" >> $L
timeout 200 bin/gpu-tests --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#groupsMixSendsReceivesAndCollectives --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#mismatchedCallsFailEveryRank --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#externalPointersAndStreams --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#graphCaptureReplaysOnFreshInputs > $OUT/tests.txt 2>&1; echo "rc=$?" >> $L
tail -25 $OUT/tests.txt >> $L
for round in 1 2; do
for v in new old; do
 for k in sendrecv allreduce; do
  if [ $v = old ]; then export JMSCCLPP_X_STREAM_DONE=1; else unset JMSCCLPP_X_STREAM_DONE; fi
  echo "== $v $k round $round" >> $L
  timeout 60 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 2000 2>&1 | grep -E "Call overhead|^ +1024|rror" >> $L
 done
done
done
unset JMSCCLPP_X_STREAM_DONE
mkdir -p /tmp/prof
for k in allreduce sendrecv; do
 echo "== profiled $k" >> $L
 JAVA_TOOL_OPTIONS="-agentpath:$R/.tmp-device/libasyncProfiler.so=start,event=cpu,interval=100000,threads,collapsed,file=/tmp/prof/$k-%p.collapsed" timeout 120 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 20000 2>&1 | grep -E "Call overhead|^ +1024|rror|rofil|arn" >> $L
done
cd /tmp/prof && ls -la >> $L && tar czf $OUT/prof.tgz . 
echo "== gpu-tests everyKind matrix (2 GPUs)" >> $L
cd /tmp/jmscclpp && timeout 280 bin/gpu-tests --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#everyKindTypeCountOffsetPlacementAndAlgorithm > $OUT/matrix.txt 2>&1; echo "rc=$?" >> $L
tail -15 $OUT/matrix.txt >> $L
