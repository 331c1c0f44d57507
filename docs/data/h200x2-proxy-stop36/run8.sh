#!/bin/bash
# call 8: where the Mono form's time goes at 1 KiB: bench coll sendrecv and allreduce, --overhead 3000, each plain
# and under async-profiler (cpu, 20 us, threads), summarised on the host
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
AP=$R/.tmp-device/libasyncProfiler.so
nvidia-smi -L > $OUT/gpus.txt
for op in sendrecv allreduce; do
  timeout 100 bin/jmscclpp bench coll $op --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 > $OUT/$op-plain.txt 2>&1
  mkdir -p /tmp/prof-$op
  JAVA_TOOL_OPTIONS="-agentpath:$AP=start,event=cpu,interval=20us,threads,file=/tmp/prof-$op/p-%p.collapsed" \
    timeout 120 bin/jmscclpp bench coll $op --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 > $OUT/$op-prof.txt 2>&1
  for f in /tmp/prof-$op/*.collapsed; do
    b=$(basename $f .collapsed); bash $R/.tmp-device/summ2.sh $f > $OUT/summ-$op-$b.txt 2>&1
  done
  grep -h "Call overhead\|waiting for each" $OUT/$op-plain.txt $OUT/$op-prof.txt >> $OUT/log.txt
done
