#!/bin/bash
# call 13 (2 GPUs): the bundle of 4d95909: the whole gpu-sweep (samples, every collective, types, ops)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
timeout 400 bin/gpu-sweep /tmp/sweep 2 > /tmp/sweep.out 2>&1; echo "gpu-sweep rc=$?" >> $OUT/log.txt
grep "^==" /tmp/sweep.out >> $OUT/log.txt
mkdir -p $OUT/s
for f in /tmp/sweep/*-graph.log; do grep -E "^#|^ +[0-9]+ |^==" $f > $OUT/s/$(basename $f); done
for f in /tmp/sweep/sample-*.log; do tail -5 $f > $OUT/s/$(basename $f); done
cp /tmp/sweep/*.json $OUT/s/ 2>/dev/null
cd $OUT && tar czf sweep.tgz s && rm -rf s
