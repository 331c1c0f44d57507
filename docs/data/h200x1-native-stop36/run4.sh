#!/bin/bash
# stop 36 call 4 (1 x H200, 16 cores): bench native twice (hot driver calls from C, JNA, FFM; idle proxy CPU), bench ethernet twice
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
nvidia-smi -L > $OUT/gpus.txt; nproc > $OUT/nproc.txt
for i in 1 2; do timeout 120 bin/jmscclpp bench native > $OUT/native-$i.log 2>&1; echo "rc=$?" >> $OUT/native-$i.log; done
for i in 1 2; do timeout 150 bin/jmscclpp bench ethernet --max 16M > $OUT/ethernet-$i.log 2>&1; echo "rc=$?" >> $OUT/ethernet-$i.log; done
