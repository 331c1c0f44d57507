#!/usr/bin/env bash
# stop 31, call 4: V3 (gpu fence per block, last block gpu fence + relaxed sys store) against V2, V0; tests on V3
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
for round in 1 2 3; do
for v in V5 V3 V2; do
 unset JMSCCLPP_X_STREAM_DONE JMSCCLPP_X_DONE
 case $v in V5) export JMSCCLPP_X_DONE=5;; V2) export JMSCCLPP_X_DONE=2;; V3) export JMSCCLPP_X_DONE=3;; esac
 for k in allreduce broadcast sendrecv allgather; do
  echo "== $v $k round $round" >> $L
  timeout 60 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://' >> $L
 done
done
done
unset JMSCCLPP_X_DONE
