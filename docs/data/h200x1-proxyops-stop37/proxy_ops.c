/* Experiment (not in the build): per-trigger latency of the proxy's driver-call sequences on one GPU.
 * Each iteration issues a sequence, then spins on a host-mapped flush mark until the stream wrote i:
 * what one proxy trigger of a ping-pong costs (issue + GPU execution + visibility on the host).
 * usage: proxy_ops ITERS ROUNDS */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int CUresult; typedef uint64_t CUdeviceptr; typedef void *H;
typedef union { int operation;
  struct { int operation; CUdeviceptr address; union { uint32_t value; uint64_t value64; }; unsigned flags; CUdeviceptr alias; } writeValue;
  struct { int operation; unsigned flags; } memoryBarrier;
  uint64_t pad[6]; } Op;
static CUresult (*cuInit)(unsigned), (*cuDeviceGet)(int*,int), (*cuDevicePrimaryCtxRetain)(H*,int), (*cuCtxSetCurrent)(H),
  (*cuStreamCreate)(H*,unsigned), (*cuMemAlloc_v2)(CUdeviceptr*,size_t), (*cuMemHostAlloc)(void**,size_t,unsigned),
  (*cuMemHostGetDevicePointer_v2)(CUdeviceptr*,void*,unsigned), (*cuStreamWriteValue64_v2)(H,CUdeviceptr,uint64_t,unsigned),
  (*cuMemcpyDtoDAsync_v2)(CUdeviceptr,CUdeviceptr,size_t,H), (*cuMemcpyHtoDAsync_v2)(CUdeviceptr,const void*,size_t,H),
  (*cuStreamBatchMemOp_v2)(H,unsigned,Op*,unsigned), (*cuStreamSynchronize)(H), (*cuStreamQuery)(H);
static void *lib;
static void *sym(const char *n){ void *p=dlsym(lib,n); if(!p){fprintf(stderr,"no %s\n",n);exit(1);} return p; }
static void ck(CUresult r,const char*w){ if(r){fprintf(stderr,"%s failed %d\n",w,r);exit(1);} }
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec; }
static H s; static CUdeviceptr src,dst,sig,markDev,sigHostDev; static volatile uint64_t *mark,*sigHost; static uint64_t tokenHost[1024];
static double issueNs;
enum { TODAY, BATCH2, BATCH_SIGNAL_ONLY, TODAY_SIGNAL_ONLY, COPY_MARK, MSCCLPP_LIKE, BATCH_CHECK, NV };
static const char *NAME[]={"memcpy+write(signal)+write(mark) [today put+signal+flush]","memcpy+batch[signal,mark]",
 "batch[signal,mark] [signal+flush]","write(signal)+write(mark) [today signal+flush]","memcpy+write(mark) [put+flush, floor]",
 "memcpy+HtoD token+streamSync [MSCCL++ way]","memcpy+batch[signal(host),mark] ordering check"};
static int bad;
static void one(int v, uint64_t i){
  double t0=now(); Op op[2]; memset(op,0,sizeof op);
  switch(v){
  case TODAY: ck(cuMemcpyDtoDAsync_v2(dst,src,4,s),"cp"); ck(cuStreamWriteValue64_v2(s,sig,i,0),"w1"); ck(cuStreamWriteValue64_v2(s,markDev,i,0),"w2"); break;
  case BATCH2: case BATCH_CHECK:
    ck(cuMemcpyDtoDAsync_v2(dst,src,4,s),"cp"); /* fallthrough */
  case BATCH_SIGNAL_ONLY:
    op[0].writeValue.operation=5; op[0].writeValue.address=v==BATCH_CHECK?sigHostDev:sig; op[0].writeValue.value64=i;
    op[1].writeValue.operation=5; op[1].writeValue.address=markDev; op[1].writeValue.value64=i;
    ck(cuStreamBatchMemOp_v2(s,2,op,0),"batch"); break;
  case TODAY_SIGNAL_ONLY: ck(cuStreamWriteValue64_v2(s,sig,i,0),"w1"); ck(cuStreamWriteValue64_v2(s,markDev,i,0),"w2"); break;
  case COPY_MARK: ck(cuMemcpyDtoDAsync_v2(dst,src,4,s),"cp"); ck(cuStreamWriteValue64_v2(s,markDev,i,0),"w2"); break;
  case MSCCLPP_LIKE: tokenHost[i%1024]=i; ck(cuMemcpyDtoDAsync_v2(dst,src,4,s),"cp"); ck(cuMemcpyHtoDAsync_v2(sig,&tokenHost[i%1024],8,s),"tok");
    ck(cuStreamSynchronize(s),"sync"); *mark=i; break;
  }
  issueNs+=now()-t0;
  while(*mark<i){ }
  if(v==BATCH_CHECK && *sigHost<i) bad++;
}
static int cmp(const void*a,const void*b){ double x=*(double*)a,y=*(double*)b; return x<y?-1:x>y; }
int main(int argc,char**argv){
  long iters=atol(argv[1]); int rounds=atoi(argv[2]);
  lib=dlopen("libcuda.so.1",RTLD_NOW); if(!lib){fprintf(stderr,"%s\n",dlerror());return 1;}
#define S(n) *(void**)&n=sym(#n)
  S(cuInit);S(cuDeviceGet);S(cuDevicePrimaryCtxRetain);S(cuCtxSetCurrent);S(cuStreamCreate);S(cuMemAlloc_v2);S(cuMemHostAlloc);
  S(cuMemHostGetDevicePointer_v2);S(cuStreamWriteValue64_v2);S(cuMemcpyDtoDAsync_v2);S(cuMemcpyHtoDAsync_v2);S(cuStreamBatchMemOp_v2);S(cuStreamSynchronize);S(cuStreamQuery);
  int d; H ctx; ck(cuInit(0),"init"); ck(cuDeviceGet(&d,0),"dev"); ck(cuDevicePrimaryCtxRetain(&ctx,d),"ctx"); ck(cuCtxSetCurrent(ctx),"cur");
  ck(cuStreamCreate(&s,1),"stream"); ck(cuMemAlloc_v2(&src,4096),"a"); ck(cuMemAlloc_v2(&dst,4096),"a"); ck(cuMemAlloc_v2(&sig,4096),"a");
  void *h; ck(cuMemHostAlloc(&h,4096,0x2|0x1),"host"); memset(h,0,4096); mark=h; sigHost=(uint64_t*)h+64;
  ck(cuMemHostGetDevicePointer_v2(&markDev,(void*)mark,0),"dp"); ck(cuMemHostGetDevicePointer_v2(&sigHostDev,(void*)sigHost,0),"dp");
  uint64_t i=0; double lat[NV][64], iss[NV][64];
  for(int v=0;v<NV;v++) for(long k=0;k<iters;k++) one(v,++i);   /* warm-up */
  for(int r=0;r<rounds&&r<64;r++) for(int v=0;v<NV;v++){
    issueNs=0; double t0=now(); for(long k=0;k<iters;k++) one(v,++i);
    lat[v][r]=(now()-t0)/iters; iss[v][r]=issueNs/iters; }
  for(int v=0;v<NV;v++){ qsort(lat[v],rounds,sizeof(double),cmp); qsort(iss[v],rounds,sizeof(double),cmp);
    printf("%-58s per trigger median %7.0f ns (min %7.0f, max %7.0f); issuing the calls median %6.0f ns\n",NAME[v],
      lat[v][rounds/2],lat[v][0],lat[v][rounds-1],iss[v][rounds/2]); }
  printf("ordering check: %d of %ld*%d saw the mark before the signal\n",bad,iters,rounds+1);
  return 0;
}
