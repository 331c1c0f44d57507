#!/bin/bash
# call 1: proxy bench on 2 GPUs, plain and under async-profiler (cpu, 50 us, stacks with ProxyLoop only), summarised here
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
AP=$R/.tmp-device/libasyncProfiler.so
nvidia-smi -L > $OUT/gpus.txt; nvidia-smi topo -m >> $OUT/gpus.txt; nproc >> $OUT/gpus.txt
cat /proc/sys/kernel/perf_event_paranoid >> $OUT/gpus.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; timeout 170 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
run plain bin/jmscclpp bench proxy --backend cuda --calls 20000
mkdir -p /tmp/prof
JAVA_TOOL_OPTIONS="-agentpath:$AP=start,event=cpu,interval=50us,threads,include=*ProxyLoop*,file=/tmp/prof/prof-%p.collapsed" run prof bin/jmscclpp bench proxy --backend cuda --calls 20000
ls -la /tmp/prof >> $OUT/bench.log
for f in /tmp/prof/*.collapsed; do
  b=$(basename $f .collapsed)
  bash $R/.tmp-device/summ.sh $f > $OUT/summ-$b.txt 2>&1
  gzip -c $f > $OUT/$b.collapsed.gz
done
ls -la $OUT >> $OUT/bench.log
