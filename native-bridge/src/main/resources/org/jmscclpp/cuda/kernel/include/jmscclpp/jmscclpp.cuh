// jmscclpp device API, all of it: include this from a kernel compiled with NVRTC (the headers
// passed as in-memory headers, or their root as -I) or with nvcc -I<include root>. The headers
// include no system or CUDA header and put everything in namespace jmscclpp. One concept per
// header, cut as MSCCL++'s include/mscclpp and named after the Java class whose layout it shares.
#ifndef JMSCCLPP_JMSCCLPP_CUH_
#define JMSCCLPP_JMSCCLPP_CUH_

#include "jmscclpp/atomics.cuh"
#include "jmscclpp/trigger.cuh"
#include "jmscclpp/fifo.cuh"
#include "jmscclpp/semaphore.cuh"
#include "jmscclpp/packet.cuh"
#include "jmscclpp/copy.cuh"
#include "jmscclpp/port_channel.cuh"
#include "jmscclpp/memory_channel.cuh"
#include "jmscclpp/reduce.cuh"

#endif  // JMSCCLPP_JMSCCLPP_CUH_
