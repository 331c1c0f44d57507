#!/bin/bash
# stop 38, call 2: bench native (11 rounds) three more times; bench ethernet twice on this 16-core host
set -u
cd dist && tar xzf bundle.tgz && cd ..
B=dist/jmscclpp/bin/jmscclpp
for k in 1 2 3; do
  timeout 150 $B bench native --idle-seconds 0 --rounds 11 > $OUT/2-native-$k.log 2>&1; echo "rc=$?" >> $OUT/2-native-$k.log
done
grep -h "cuCtxSetCurrent (\|nothing (\|own cost\|rc=" $OUT/2-native-*.log
for k in 1 2; do
  timeout 100 $B bench ethernet --max 16M --iters 100 > $OUT/2-ethernet-$k.log 2>&1; echo "rc=$?" >> $OUT/2-ethernet-$k.log
done
tail -25 $OUT/2-ethernet-*.log
