#!/bin/bash
# stop 37, call 3: bench native with each Java binding in a JVM of its own, three times
set -u
cd dist && tar xzf bundle.tgz && cd ..
B=dist/jmscclpp/bin/jmscclpp
for k in 1 2 3; do
  timeout 180 $B bench native --idle-seconds 0 > $OUT/3-native-$k.log 2>&1; echo "rc=$?" >> $OUT/3-native-$k.log
done
grep -h "FFM ≤\|(.*) |\|warm-up\|rc=" $OUT/3-native-*.log
