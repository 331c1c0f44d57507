#!/usr/bin/env bash
# stop 33, call 3: inline sizes and blocks: X_INLINE_MAX (bytes up to which a send goes inline), X_INLINE_BLOCK
# (bytes per block of an inline message); sendrecv against NCCL, 2 rounds
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp
for round in 1 2; do
 for v in 65536:16384 65536:8192 65536:4096 262144:16384 262144:32768 262144:8192; do
  export X_INLINE_MAX=${v%:*} X_INLINE_BLOCK=${v#*:}
  echo "== $v round $round" >> $L
  timeout 50 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1M -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$v-$round.txt 2>&1; echo "rc=$?" >> $L
  grep -E "^ +[0-9]+ " $OUT/bench-$v-$round.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
 done
done
