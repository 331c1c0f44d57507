#!/usr/bin/env bash
# stop 33, call 1: inline small point-to-point messages: CudaCollectivesGpuTest, then sendrecv against NCCL, new vs base
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cp -r /tmp/jmscclpp /tmp/base && cp $R/.tmp-device/base/*.jar /tmp/base/lib/
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
for round in 1 2; do
 for b in jmscclpp base; do
  echo "== $b round $round" >> $L
  (cd /tmp/$b && timeout 60 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 4M -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$b-$round.txt 2>&1; echo "rc=$?" >> $L)
  grep -E "^\|" $OUT/bench-$b-$round.txt | head -12 >> $L
  (cd /tmp/$b && timeout 40 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror|wrong" >> $L)
 done
done
cd /tmp/jmscclpp && timeout 250 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error" $OUT/tests.txt | head -20 >> $L
tail -15 $OUT/tests.txt >> $L
