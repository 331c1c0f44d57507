#!/bin/bash
# stop 38, call 5: the Mono form's overhead, A/B on one machine: the call counted ended by doOnTerminate/doOnCancel
# (62c1fa4, "new") against doFinally (as before, "dofinally"), only jmscclpp-core's jar swapped, alternating
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
for k in 1 2 3; do
  for v in new dofinally; do
    cp $R/.tmp-device/alt/core-$v.jar lib/jmscclpp-core-0.1.0-SNAPSHOT.jar
    for op in allreduce allgather; do
      f=$OUT/5-overhead-$k-$v-$op.log
      timeout 60 bin/jmscclpp bench coll $op --ranks 1 --backend cuda -b 1K -e 1K --overhead 3000 > $f 2>&1; echo "rc=$?" >> $f
      echo "$k $v $op: $(grep -oE 'Mono - stream = [0-9.]+ us' $f)" >> $L
    done
  done
done
cat $L
