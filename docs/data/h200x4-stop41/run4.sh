#!/usr/bin/env bash
# stop 41, call 4 (nvidia-h200-x4): 128 blocks by default, push kernels on every block; 4 ranks: push 1M-1G and every
# other op's default 64M-1G beside NCCL; then the collective matrix on GPUs 0,1 while GPUs 2,3 run the 2-rank push A/B
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # ranks op algo from
  local a=(); [[ $3 != default ]] && a=(--algo $3)
  timeout 45 $J bench coll $2 --ranks $1 --backend cuda -b $4 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl "${a[@]}" > $L/ab$1-$2-$3.log 2>&1
  echo "== $1 ranks $2 $3 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/ab$1-$2-$3.log | awk '{printf "%s: %s %s %s #%s #%s | %s %s\n", $1, $6, $8, $(NF-1), $9, $13, $(NF-2), $NF}'
  grep -h "rror\|xception" $L/ab$1-$2-$3.log | head -5
}
ab 4 allreduce push 1M; ab 4 reduce push 1M; ab 4 broadcast push 1M
for op in allgather alltoall reducescatter sendrecv; do ab 4 $op default 64M; done
ab 4 allreduce rsag 64M; ab 4 reduce rs 64M; ab 4 broadcast memory 64M
echo "4-rank part done at $SECONDS"
CUDA_VISIBLE_DEVICES=0,1 timeout 330 /tmp/jmscclpp/bin/gpu-tests --select-method org.jmscclpp.cuda.collective.CudaCollectivesGpuTest#everyKindTypeCountOffsetPlacementAndAlgorithm > $L/matrix-2.log 2>&1 &
M=$!
export CUDA_VISIBLE_DEVICES=2,3
ab 2 broadcast push 16M; ab 2 broadcast memory 16M
ab 2 allreduce push 1M; ab 2 allreduce rsag 1M; ab 2 reduce push 1M; ab 2 reduce rs 1M
unset CUDA_VISIBLE_DEVICES
wait $M; echo "matrix on 2 GPUs exit $? at $SECONDS"
grep -h "tests successful\|tests failed\|matrix:\|OK coll\|failures, the first" $L/matrix-2.log | cut -c1-600 | sort | uniq -c | head -20
cd $OUT && tar czf logs.tgz logs && rm -rf logs
