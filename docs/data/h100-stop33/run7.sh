#!/usr/bin/env bash
# stop 33, call 7 (4 GPUs): the bundle of calls 5 and 6 (ba0e2fa); sendrecv on 4 ranks against NCCL from 1 KiB to 1 GiB, 2 rounds
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp
for round in 1 2; do
  echo "== round $round" >> $L
  timeout 150 bin/jmscclpp bench coll sendrecv --ranks 4 --backend cuda -b 1K -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$round.txt 2>&1; echo "rc=$?" >> $L
  grep -E "^ +[0-9]+ " $OUT/bench-$round.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
done
