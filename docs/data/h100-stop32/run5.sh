#!/usr/bin/env bash
# stop 32, call 5 (2 GPUs' host, 32 cores): bench ethernet in blocks of 10 with an untimed transfer first, three runs,
# and raw TCP against itself (--tcp-vs-tcp), two runs
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
for i in 1 2 3; do timeout 100 bin/jmscclpp bench ethernet --max 16M > $OUT/bench-ethernet-32core-$i.txt 2>&1; echo "ethernet $i rc=$?"; grep -E "^\|  *[0-9]|^\| [wp]|check" $OUT/bench-ethernet-32core-$i.txt; done
for i in 1 2; do timeout 100 bin/jmscclpp bench ethernet --max 16M --tcp-vs-tcp > $OUT/bench-tcp-vs-tcp-32core-$i.txt 2>&1; echo "tcp-vs-tcp $i rc=$?"; grep -E "^\|  *[0-9]|check" $OUT/bench-tcp-vs-tcp-32core-$i.txt; done
