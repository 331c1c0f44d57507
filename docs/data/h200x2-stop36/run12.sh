#!/bin/bash
# call 12 (2 GPUs): the bundle of 4d95909: gpu-sweep's allreduce and allgather (1 KiB-1 GiB, float, CUDA graphs,
# NCCL in the same job, the Mono overhead at 1 KiB)
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > $OUT/gpus.txt
timeout 450 bin/gpu-sweep /tmp/sweep 2 allreduce allgather > /tmp/sweep.out 2>&1; echo "gpu-sweep rc=$?" >> $OUT/log.txt
for f in /tmp/sweep/*.log; do grep -E "^#|^ +[0-9]+ |^==" $f > $OUT/$(basename $f); done
cp /tmp/sweep/*.json $OUT/ 2>/dev/null
for f in $OUT/*-graph.log; do echo "== $f" >> $OUT/log.txt; grep -E "^ +[0-9]+ " $f | awk '{print $1, $6, $8, $14, $NF}' | tr '\n' ';' >> $OUT/log.txt; echo >> $OUT/log.txt; grep "Call overhead" $f >> $OUT/log.txt; done
