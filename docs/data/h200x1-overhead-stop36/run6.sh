#!/bin/bash
# stop 36 call 6 (1 x H200): the Mono form's call overhead with one rank (its kernels trivial, its completion path the same)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
for k in allreduce allgather allreduce allgather; do
  echo "== $k $(date +%T)" >> $OUT/overhead.log
  timeout 100 bin/jmscclpp bench coll $k --ranks 1 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 >> $OUT/overhead.log 2>&1; echo "rc=$?" >> $OUT/overhead.log
done
