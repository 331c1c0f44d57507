#!/usr/bin/env bash
# stop 32, call 4 (2 GPUs' host, 32 cores): bench ethernet with the transports paired per transfer, three runs
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
for i in 1 2 3; do timeout 100 bin/jmscclpp bench ethernet --max 16M > $OUT/bench-ethernet-32core-$i.txt 2>&1; echo "ethernet $i rc=$?"; grep -E "^\|  *[0-9]|^\| [wp]" $OUT/bench-ethernet-32core-$i.txt; done
