#!/bin/bash
# stop 37, call 2: bench native (cuda: driver calls, idle proxy with the poller threads' CPU) and bench proxy (host backend: busy proxy CPU), twice each
set -u
cd dist && tar xzf bundle.tgz && cd ..
B=dist/jmscclpp/bin/jmscclpp
nvidia-smi -L > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
for k in 1 2; do
  timeout 200 $B bench native > $OUT/2-native-$k.log 2>&1; echo "rc=$?" >> $OUT/2-native-$k.log
  timeout 150 $B bench proxy > $OUT/2-proxy-host-$k.log 2>&1; echo "rc=$?" >> $OUT/2-proxy-host-$k.log
done
tail -n 12 $OUT/2-native-1.log; tail -n 8 $OUT/2-proxy-host-1.log
