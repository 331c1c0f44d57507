#!/usr/bin/env bash
# stop 33, call 2: both ends write their descriptors at once (boxes by message parity), inline messages end the
# sender without "done": CudaCollectivesGpuTest, then sendrecv against NCCL: new (inline to 64K, 16K a block),
# new with inline off (X_INLINE_MAX=0), base
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cp -r /tmp/jmscclpp /tmp/base && cp $R/.tmp-device/base/*.jar /tmp/base/lib/
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp && timeout 250 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error" $OUT/tests.txt | head -20 >> $L
tail -4 $OUT/tests.txt >> $L
for round in 1 2; do
 for v in new off base; do
  b=jmscclpp; [ $v = base ] && b=base
  if [ $v = off ]; then export X_INLINE_MAX=0; else unset X_INLINE_MAX; fi
  echo "== $v round $round" >> $L
  (cd /tmp/$b && timeout 50 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1M -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$v-$round.txt 2>&1; echo "rc=$?" >> $L)
  grep -E "^ +[0-9]+ " $OUT/bench-$v-$round.txt | awk '{print $1, $6, $14, $NF}' >> $L
 done
done
unset X_INLINE_MAX
cd /tmp/jmscclpp && timeout 40 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror|wrong" >> $L
