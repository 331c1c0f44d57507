#!/bin/bash
# stop 38, call 1: bench native with C's loops also timed in FFM's JVM and the empty-function floor, three times
set -u
cd dist && tar xzf bundle.tgz && cd ..
B=dist/jmscclpp/bin/jmscclpp
nvidia-smi -L > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
for k in 1 2 3; do
  timeout 170 $B bench native --idle-seconds 0 > $OUT/1-native-$k.log 2>&1; echo "rc=$?" >> $OUT/1-native-$k.log
done
grep -h "FFM ≤\|(.*) |\|own cost\|warm-up\|rc=" $OUT/1-native-*.log
