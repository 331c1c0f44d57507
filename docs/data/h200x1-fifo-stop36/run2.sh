#!/bin/bash
# stop 36 call 2 (1 x H200): the FIFO row (fifoPushTimed, one thread pushing, a Java thread polling, ring of 512),
# the committed fetch-and-add claim (6c7b1f8) against the previous compare-and-set claim (temporary kernel), alternating
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
nvidia-smi -L > $OUT/gpus.txt
timeout 200 runtime/bin/java --enable-native-access=ALL-UNNAMED -cp "lib/*:$R/.tmp-device/fifoab" FifoAB 5 20000 10000 fifoPushTimed fifoPushTimedCas > $OUT/fifo-ab.log 2>&1; echo "rc=$?" >> $OUT/fifo-ab.log
timeout 200 runtime/bin/java --enable-native-access=ALL-UNNAMED -cp "lib/*:$R/.tmp-device/fifoab" FifoAB 5 20000 10000 fifoPushTimedCas fifoPushTimed >> $OUT/fifo-ab.log 2>&1; echo "rc=$?" >> $OUT/fifo-ab.log
