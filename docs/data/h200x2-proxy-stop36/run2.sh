#!/bin/bash
# call 2: proxy bench with warm-ups of 1000 and 20000 round trips; CudaCollectivesGpuTest (kernel packet helpers factored); sendrecv sweep
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
L=$OUT/log.txt
run() { local name=$1; shift; echo "== $name $(date +%T)" >> $OUT/bench.log; timeout 170 "$@" >> $OUT/bench.log 2>&1; echo "== exit $? $(date +%T)" >> $OUT/bench.log; }
for w in 1000 20000 1000 20000; do run "warmup $w" bin/jmscclpp bench proxy --backend cuda --calls 20000 --warmup $w; done
grep -E "^==|round trip|VIRTUAL_THREAD|PLATFORM_THREAD|bidirectional|FIFO" $OUT/bench.log >> $L
timeout 250 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaCollectivesGpuTest > $OUT/tests.log 2>&1; echo "tests rc=$?" >> $L
grep -E "✘|failed|Error" $OUT/tests.log | head -20 >> $L
tail -4 $OUT/tests.log >> $L
timeout 150 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $OUT/bench-sendrecv.txt 2>&1; echo "sendrecv rc=$?" >> $L
grep -E "^ +[0-9]+ " $OUT/bench-sendrecv.txt | awk '{print $1, $6, $14, $NF}' | tr '\n' ';' >> $L; echo >> $L
