#!/usr/bin/env bash
# stop 31, call 3: how the done word is written: V0 sys fence per block, V1 gpu fence per block + one sys fence, V2 no fence (bound), memop
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
for round in 1 2 3; do
for v in V0 V1 V2 memop; do
 unset JMSCCLPP_X_STREAM_DONE JMSCCLPP_X_DONE
 case $v in V0) export JMSCCLPP_X_DONE=0;; V1) export JMSCCLPP_X_DONE=1;; V2) export JMSCCLPP_X_DONE=2;; memop) export JMSCCLPP_X_STREAM_DONE=1;; esac
 for k in allreduce broadcast sendrecv; do
  [ $k = sendrecv ] && [ $round = 3 ] && continue
  echo "== $v $k round $round" >> $L
  timeout 60 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" | sed -e 's/.*per form, the median of 5 rounds)://' >> $L
 done
done
done
