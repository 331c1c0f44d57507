#!/usr/bin/env bash
# stop 33, call 5 (4 GPUs): the landed form (inline up to 256 KiB, 4 KiB a block): CudaCollectivesGpuTest whole (the new
# send/recv mismatch scenario included), then sendrecv on 4 ranks against NCCL, new (2 rounds) and base (72b8e7e's jars)
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cp -r /tmp/jmscclpp /tmp/base && cp $R/.tmp-device/base/*.jar /tmp/base/lib/
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
cd /tmp/jmscclpp
timeout 380 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error|mismatch reported" $OUT/tests.log | head -20 >> $L
tail -4 $OUT/tests.log >> $L
for v in new base new; do
  echo "== $v" >> $L
  (cd /tmp/${v/new/jmscclpp} && timeout 60 bin/jmscclpp bench coll sendrecv --ranks 4 --backend cuda -b 1K -e 1M -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-$v.txt 2>&1; echo "rc=$?" >> $L)
  grep -E "^ +[0-9]+ " $OUT/bench-$v.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
done
