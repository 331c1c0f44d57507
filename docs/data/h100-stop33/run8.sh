#!/usr/bin/env bash
# stop 33, call 8 (4 GPUs): the bundle of calls 5-7 (ba0e2fa): the split-host collectives test (the CUDA engine's
# sends and receives inside each pretend host), then the sendrecv Mono overhead at 1 KiB on 2 ranks
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
timeout 200 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $OUT/gpu-tests-hier.txt 2>&1; echo "hier tests rc=$?" >> $L
grep -E "across hosts|✔|✘|tests successful|tests failed" $OUT/gpu-tests-hier.txt >> $L
timeout 60 bin/jmscclpp bench coll sendrecv --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror|wrong" >> $L
