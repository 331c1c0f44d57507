#!/usr/bin/env bash
# stop 32, call 3 (4 GPUs): issue 16's GPU runs from this stop's bundle: the split-host collectives test, the
# hierarchical allreduce beside NCCL on sockets (P2P and SHM off), the VMM buffer shared across two non-root users,
# and bench ethernet on this host
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt; nproc >> $OUT/gpus.txt
L=$OUT/log.txt
timeout 170 bin/gpu-tests --select-class org.jmscclpp.cuda.collective.CudaHierarchicalGpuTest > $OUT/gpu-tests-hier.txt 2>&1; echo "hier tests rc=$?" >> $L
timeout 60 bin/gpu-tests --select-class org.jmscclpp.cuda.CudaIpcAcrossUsersGpuTest > $OUT/gpu-tests-across-users.txt 2>&1; echo "across-users tests rc=$?" >> $L
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 timeout 150 bin/jmscclpp bench coll allreduce --ranks 4 --hosts 2 --backend cuda --baseline nccl -b 1K -e 64M -f 4 -n 100 -w 100 -c 1 --overhead 0 > $OUT/bench-hier-allreduce-nccl-sockets.txt 2>&1; echo "hier bench rc=$?" >> $L

grep -E "✔|✘|tests successful|tests failed" $OUT/gpu-tests-*.txt >> $L
tail -30 $OUT/bench-hier-allreduce-nccl-sockets.txt >> $L
