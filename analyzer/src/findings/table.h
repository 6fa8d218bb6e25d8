// The one table of finding rules. Everything else derives from it: FindingId, the names
// (--fail-on, JSON `id`, SARIF `ruleId`), severities, titles and help texts (SARIF rules), and
// each rule's hooks (findings/rule.h), which the rule's own file defines.
// Adding a rule: a row here, its file under findings/ (defining `const Rule <hooks>`), its
// source in analyzer/CMakeLists.txt and its section in docs/findings.md. Rows are in id order
// (SARIF `ruleIndex`, ties of the ranking); append new rules at the end.
#pragma once

// X(Id, "name", Severity, hooks, "title", "help")
#define ASYNCWATCH_FINDINGS(X)                                                                                     \
  X(PageableAsyncCopy, "pageable-async-copy", Warning, pageable_async_copy,                                        \
    "An asynchronous copy between the device and pageable host memory ran synchronously.",                         \
    "Allocate the host buffer with cudaMallocHost/cudaHostAlloc, or register it with cudaHostRegister, so the "    \
    "copy can run asynchronously. Device-to-host copies into pageable memory wait for all earlier work in the "    \
    "stream; host-to-device copies from pageable memory block while the driver stages the data.")                  \
  X(HostToHostAsyncCopy, "host-to-host-async-copy", Warning, host_to_host_async_copy,                              \
    "An asynchronous copy between two host buffers, which is always synchronous.",                                 \
    "Copy on the host with memcpy/std::copy, or keep the data on the device.")                                     \
  X(ManagedMemoryCopy, "managed-memory-copy", Warning, managed_memory_copy,                                        \
    "An asynchronous copy involving managed memory blocked the host.",                                             \
    "Prefetch managed memory with cudaMemPrefetchAsync, or copy between device memory and pinned host memory.")    \
  X(BlockingMemset, "blocking-memset", Warning, blocking_memset, "A memset blocked the host.",                     \
    "Memsets of pinned host or managed memory are synchronous: set host memory with memset, device memory with "   \
    "cudaMemsetAsync.")                                                                                            \
  X(BlockingLaunch, "blocking-launch", Warning, blocking_launch, "A kernel launch blocked the host.",              \
    "First launches under lazy module loading: warm kernels up or set CUDA_MODULE_LOADING=EAGER. A full launch "   \
    "queue: fewer, larger kernels or CUDA graphs. CUDA_LAUNCH_BLOCKING=1: unset it outside debugging.")            \
  X(LongHostCallback, "long-host-callback", Warning, long_host_callback,                                           \
    "A host function or stream callback held its stream back while it ran (a warning when it ran long).",          \
    "Keep host functions short: have them signal a host thread that does the work.")                               \
  X(DeprecatedStreamCallback, "deprecated-stream-callback", Note, deprecated_stream_callback,                      \
    "cudaStreamAddCallback is deprecated.", "Use cudaLaunchHostFunc (cuLaunchHostFunc with the driver API).")      \
  X(ExplicitSync, "explicit-sync", Note, explicit_sync, "Time the host waited in explicit synchronization.",       \
    "Check that the host needs the result at this point; wait on an event for just the work it needs, or move "    \
    "the wait later.")                                                                                             \
  X(ImplicitSync, "implicit-sync", Warning, implicit_sync,                                                         \
    "Memory management calls that may synchronize the device, repeated at one call site.",                         \
    "Allocate once outside the loop and reuse the memory, or use cudaMallocAsync/cudaFreeAsync with a pool.")      \
  X(InFlightCall, "in-flight-call", Warning, in_flight_call,                                                       \
    "A call was still in flight when the process ended (killed, crashed, or exited while another thread waited).", \
    "Find out what the call waited for: the work before it on its stream (a hung or very long kernel), a "         \
    "pageable copy behind a long kernel, or a synchronization that never completes.")                              \
  X(HiddenSync, "hidden-sync", Warning, hidden_sync,                                                               \
    "A synchronization the code did not write: a framework or library call waited for the GPU.",                   \
    "Keep results on the device (no .item(), .cpu(), .tolist() or printing inside the loop), accumulate on the "   \
    "GPU and read once; copy to pinned memory with non_blocking=True and wait on an event where the value is needed.")

// X(Cause, "name"): the `cause` of a finding (JSON, and part of its group key); None has no name.
#define ASYNCWATCH_FINDING_CAUSES(X)                                       \
  X(WaitedForStream, "waited-for-stream") /* pageable-async-copy DtoH */   \
  X(Staged, "staged")                     /* pageable-async-copy HtoD */   \
  X(FirstLaunch, "first-launch")          /* blocking-launch */            \
  X(ContextInit, "context-init")                                           \
  X(LaunchQueueFull, "launch-queue-full")                                  \
  X(LaunchBlockingEnv, "launch-blocking-env")                              \
  X(PinnedHostMemory, "host-memory") /* blocking-memset */                 \
  X(ManagedMemory, "managed-memory")                                       \
  X(GraphHostMemcpy, "graph-host-memcpy") /* blocking-launch of a graph */ \
  X(GraphUpload, "graph-upload")                                           \
  X(GraphMemoryNodes, "graph-memory-nodes")                                \
  X(OtherThreadCall, "other-thread-call")                                  \
  X(HostFunctionRunning, "host-function-running")                          \
  X(Unknown, "unknown")
