#!/bin/bash
# stop 36 call 5 (1 x H200): bench native with the JIT-settled warm-up, three runs
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
for i in 1 2 3; do timeout 150 bin/jmscclpp bench native > $OUT/native-$i.log 2>&1; echo "rc=$?" >> $OUT/native-$i.log; done
