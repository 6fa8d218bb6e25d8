// asyncwatch trace format, version 7: the one definition shared by the writer (preload/) and
// the reader (analyzer/). docs/trace-format.md describes it in prose; change both together.
// Everything a reader needs to know about a record type comes from ONE table
// (ASYNCWATCH_RECORD_TYPES): its id, name, struct, fixed size, whether it is a call record
// (starts with CallHead), the first version that may contain it, and (variable-size types) the
// payload size. Every enum of the format has its X-macro and name table here too; nothing else
// hand-writes a switch over them. A change that adds a type or an Api id appends a row and bumps
// kFormatVersion; older traces keep reading (the reader knows each row's since_version).
//
// Layout of a trace file (little-endian, x86-64):
//   [FileHeader, kHeaderSize bytes][Block 0][Block 1]...
// Each block is kBlockSize bytes, started by one thread (BlockHeader::tid), and holds records
// packed back to back, each 8-byte aligned, each starting with a RecordHeader. From version 5 a
// block whose magic is kBlockMagicShared was handed on: each Handoff record in it says that the
// records after it (to the next Handoff) are another thread's (an exited thread's unused rest).
// From version 6 a block whose magic is kBlockMagicRing belongs to the flight recorder's ring
// (ASYNCWATCH_TRACE_LIMIT): copies of completed call records, the block reused oldest-first.
// A record becomes visible when its RecordHeader is stored (release order) after the fields
// known at that point, so a reader that finds `type == kNone` (the zero fill of an unwritten
// file) has reached the end of the valid part of that block. A call record is published
// before the real call with kFlagInFlight set and completed after it (the write protocol in
// docs/trace-format.md). The writer maps the file MAP_SHARED, so every record of a call that
// returned is in the page cache even if the process is SIGKILLed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace asyncwatch::trace {

inline constexpr char kMagic[8] = {'A', 'S', 'Y', 'N', 'C', 'W', 'T', 'R'};
inline constexpr uint32_t kFormatVersion = 7;
inline constexpr uint32_t kOldestReadableVersion = 1;  // version 1 is read through an adapter (analyzer)
inline constexpr uint32_t kHeaderSize = 4096;
inline constexpr uint32_t kBlockSize = 64 * 1024;
inline constexpr uint32_t kBlockMagic = 0x314b4c42;  // "BLK1" (the block framing is unchanged since v1)
// "BLK2" (version 5): the block holds Handoff records (HandoffRecord), found by readers from the magic alone.
inline constexpr uint32_t kBlockMagicShared = 0x324b4c42;
// "BLKR" (version 6): a block of the flight recorder's ring (FileHeader::flight_ring_blocks). Its
// BlockHeader::block_index is the ring's sequence number (claims in order; a block reused gets a
// higher one), not its position. Records in it are copies of completed call records, each followed
// by a zero RecordHeader unless it ends the block: a reused block's old records past the new ones
// never read as records. A block being reused is emptied first (its first record header, then its
// magic, zeroed: it reads as unused), then gets its new tid and sequence, then this magic.
inline constexpr uint32_t kBlockMagicRing = 0x524b4c42;
inline constexpr uint32_t kClosedCleanly = 0x45534f4c;  // "LOSE": written by a clean close
inline constexpr uint32_t kMaxStackDepth = 64;

// ---------------------------------------------------------------------------------------
// The APIs asyncwatch knows by name. `api` in a record is what the application called
// (cudaMemcpyAsync when the runtime was seen, else the driver entry point); `driver_fn` is
// the driver entry point it reached (kNone when the call never reached the driver, e.g. a
// copy recorded during stream capture through the runtime). The numeric ids are part of the
// format: append only, never reorder.
#define ASYNCWATCH_API_LIST(X)                                                             \
  X(None)                                                                                  \
  /* runtime: copies */                                                                    \
  X(cudaMemcpy)                                                                            \
  X(cudaMemcpyAsync)                                                                       \
  X(cudaMemcpy2D)                                                                          \
  X(cudaMemcpy2DAsync)                                                                     \
  X(cudaMemcpy3D)                                                                          \
  X(cudaMemcpy3DAsync)                                                                     \
  X(cudaMemcpyPeer)                                                                        \
  X(cudaMemcpyPeerAsync)                                                                   \
  X(cudaMemcpyToSymbol)                                                                    \
  X(cudaMemcpyToSymbolAsync)                                                               \
  X(cudaMemcpyFromSymbol)                                                                  \
  X(cudaMemcpyFromSymbolAsync)                                                             \
  X(cudaMemcpy2DToArray)                                                                   \
  X(cudaMemcpy2DToArrayAsync)                                                              \
  X(cudaMemcpy2DFromArray)                                                                 \
  X(cudaMemcpy2DFromArrayAsync)                                                            \
  /* runtime: memsets */                                                                   \
  X(cudaMemset)                                                                            \
  X(cudaMemsetAsync)                                                                       \
  X(cudaMemset2D)                                                                          \
  X(cudaMemset2DAsync)                                                                     \
  X(cudaMemset3D)                                                                          \
  X(cudaMemset3DAsync)                                                                     \
  /* runtime: launches */                                                                  \
  X(cudaLaunchKernel)                                                                      \
  X(cudaLaunchKernelExC)                                                                   \
  X(cudaLaunchCooperativeKernel)                                                           \
  X(__cudaLaunchKernel)                                                                    \
  X(cudaGraphLaunch)                                                                       \
  /* runtime: host functions */                                                            \
  X(cudaStreamAddCallback)                                                                 \
  X(cudaLaunchHostFunc)                                                                    \
  /* runtime: synchronization */                                                           \
  X(cudaStreamSynchronize)                                                                 \
  X(cudaEventSynchronize)                                                                  \
  X(cudaDeviceSynchronize)                                                                 \
  X(cudaStreamWaitEvent)                                                                   \
  X(cudaStreamQuery)                                                                       \
  X(cudaEventQuery)                                                                        \
  /* runtime: memory management */                                                         \
  X(cudaMalloc)                                                                            \
  X(cudaFree)                                                                              \
  X(cudaMallocHost)                                                                        \
  X(cudaHostAlloc)                                                                         \
  X(cudaFreeHost)                                                                          \
  X(cudaHostRegister)                                                                      \
  X(cudaHostUnregister)                                                                    \
  X(cudaMallocManaged)                                                                     \
  X(cudaMallocAsync)                                                                       \
  X(cudaFreeAsync)                                                                         \
  /* runtime: streams and capture */                                                       \
  X(cudaStreamCreate)                                                                      \
  X(cudaStreamCreateWithFlags)                                                             \
  X(cudaStreamCreateWithPriority)                                                          \
  X(cudaStreamDestroy)                                                                     \
  X(cudaStreamBeginCapture)                                                                \
  X(cudaStreamEndCapture)                                                                  \
  /* driver: copies */                                                                     \
  X(cuMemcpy)                                                                              \
  X(cuMemcpyAsync)                                                                         \
  X(cuMemcpyHtoD_v2)                                                                       \
  X(cuMemcpyDtoH_v2)                                                                       \
  X(cuMemcpyDtoD_v2)                                                                       \
  X(cuMemcpyHtoDAsync_v2)                                                                  \
  X(cuMemcpyDtoHAsync_v2)                                                                  \
  X(cuMemcpyDtoDAsync_v2)                                                                  \
  X(cuMemcpy2D_v2)                                                                         \
  X(cuMemcpy2DUnaligned_v2)                                                                \
  X(cuMemcpy2DAsync_v2)                                                                    \
  X(cuMemcpy3D_v2)                                                                         \
  X(cuMemcpy3DAsync_v2)                                                                    \
  X(cuMemcpyPeer)                                                                          \
  X(cuMemcpyPeerAsync)                                                                     \
  X(cuMemcpyHtoAAsync_v2)                                                                  \
  X(cuMemcpyAtoHAsync_v2)                                                                  \
  /* driver: memsets */                                                                    \
  X(cuMemsetD8_v2)                                                                         \
  X(cuMemsetD16_v2)                                                                        \
  X(cuMemsetD32_v2)                                                                        \
  X(cuMemsetD8Async)                                                                       \
  X(cuMemsetD16Async)                                                                      \
  X(cuMemsetD32Async)                                                                      \
  X(cuMemsetD2D8_v2)                                                                       \
  X(cuMemsetD2D16_v2)                                                                      \
  X(cuMemsetD2D32_v2)                                                                      \
  X(cuMemsetD2D8Async)                                                                     \
  X(cuMemsetD2D16Async)                                                                    \
  X(cuMemsetD2D32Async)                                                                    \
  /* driver: launches */                                                                   \
  X(cuLaunchKernel)                                                                        \
  X(cuLaunchKernelEx)                                                                      \
  X(cuLaunchCooperativeKernel)                                                             \
  X(cuGraphLaunch)                                                                         \
  /* driver: host functions */                                                             \
  X(cuStreamAddCallback)                                                                   \
  X(cuLaunchHostFunc)                                                                      \
  /* driver: synchronization */                                                            \
  X(cuStreamSynchronize)                                                                   \
  X(cuEventSynchronize)                                                                    \
  X(cuCtxSynchronize)                                                                      \
  X(cuStreamWaitEvent)                                                                     \
  X(cuStreamQuery)                                                                         \
  X(cuEventQuery)                                                                          \
  /* driver: memory management */                                                          \
  X(cuMemAlloc_v2)                                                                         \
  X(cuMemFree_v2)                                                                          \
  X(cuMemAllocHost_v2)                                                                     \
  X(cuMemHostAlloc)                                                                        \
  X(cuMemFreeHost)                                                                         \
  X(cuMemHostRegister_v2)                                                                  \
  X(cuMemHostUnregister)                                                                   \
  X(cuMemAllocManaged)                                                                     \
  X(cuMemAllocAsync)                                                                       \
  X(cuMemFreeAsync)                                                                        \
  /* driver: streams and capture */                                                        \
  X(cuStreamCreate)                                                                        \
  X(cuStreamCreateWithPriority)                                                            \
  X(cuStreamDestroy_v2)                                                                    \
  X(cuStreamBeginCapture_v2)                                                               \
  X(cuStreamEndCapture)                                                                    \
  /* appended later (append-only: ids above are stable) */                                 \
  X(cuCtxSynchronize_v2)                                                                   \
  X(cuStreamBeginCaptureToGraph)                                                           \
  /* trace version 3 APIs: prefetch, batch, 3D peer copies, explicit graph construction */ \
  X(cudaMemPrefetchAsync)                                                                  \
  X(cudaStreamAttachMemAsync)                                                              \
  X(cudaMemcpyBatchAsync)                                                                  \
  X(cudaMemcpy3DBatchAsync)                                                                \
  X(cudaMemcpy3DPeer)                                                                      \
  X(cudaMemcpy3DPeerAsync)                                                                 \
  X(cudaGraphAddMemcpyNode)                                                                \
  X(cudaGraphAddMemcpyNode1D)                                                              \
  X(cudaGraphExecMemcpyNodeSetParams)                                                      \
  X(cudaGraphExecMemcpyNodeSetParams1D)                                                    \
  X(cudaGraphInstantiate)                                                                  \
  X(cudaGraphInstantiateWithFlags)                                                         \
  X(cudaGraphExecUpdate)                                                                   \
  X(cuMemPrefetchAsync)                                                                    \
  X(cuMemPrefetchAsync_v2)                                                                 \
  X(cuStreamAttachMemAsync)                                                                \
  X(cuMemcpyBatchAsync)                                                                    \
  X(cuMemcpyBatchAsync_v2)                                                                 \
  X(cuMemcpy3DBatchAsync)                                                                  \
  X(cuMemcpy3DBatchAsync_v2)                                                               \
  X(cuMemcpy3DPeer)                                                                        \
  X(cuMemcpy3DPeerAsync)                                                                   \
  X(cuGraphAddMemcpyNode)                                                                  \
  X(cuGraphExecMemcpyNodeSetParams)                                                        \
  X(cuGraphInstantiateWithFlags)                                                           \
  X(cuGraphInstantiateWithParams)                                                          \
  X(cuGraphExecUpdate_v2)                                                                  \
  /* trace version 4 */                                                                    \
  X(cuGraphClone)

enum class Api : uint16_t {
#define ASYNCWATCH_API_ENUM(name) name,
  ASYNCWATCH_API_LIST(ASYNCWATCH_API_ENUM)
#undef ASYNCWATCH_API_ENUM
      Count
};

inline constexpr const char* kApiNames[] = {
#define ASYNCWATCH_API_NAME(name) #name,
    ASYNCWATCH_API_LIST(ASYNCWATCH_API_NAME)
#undef ASYNCWATCH_API_NAME
};
static_assert(sizeof(kApiNames) / sizeof(kApiNames[0]) == static_cast<size_t>(Api::Count));

inline const char* api_name(Api api) {
  auto i = static_cast<size_t>(api);
  return i < static_cast<size_t>(Api::Count) ? kApiNames[i] : "unknown-api";
}

// Ids of the APIs present in each version (the table above is append-only): an id at or beyond
// kApiCountInVersion[v] in a version-v trace is an error. Append the new count with a new version.
inline constexpr uint16_t kApiCountV2 = static_cast<uint16_t>(Api::cuStreamBeginCaptureToGraph) + 1;
inline constexpr uint16_t kApiCountV3 = static_cast<uint16_t>(Api::cuGraphExecUpdate_v2) + 1;
inline constexpr uint16_t kApiCountV4 = static_cast<uint16_t>(Api::cuGraphClone) + 1;
inline constexpr uint16_t kApiCountInVersion[] = {0,
                                                  kApiCountV2,
                                                  kApiCountV2,
                                                  kApiCountV3,
                                                  kApiCountV4,
                                                  static_cast<uint16_t>(Api::Count),
                                                  static_cast<uint16_t>(Api::Count),
                                                  static_cast<uint16_t>(Api::Count)};
static_assert(sizeof(kApiCountInVersion) / sizeof(kApiCountInVersion[0]) == kFormatVersion + 1);

// ---- the small enums: X(Name, value, "text printed by dump/report/JSON") ---------------------
// What cudaPointerGetAttributes / cuPointerGetAttributes say of one side of a copy.
#define ASYNCWATCH_MEMORY_KINDS(X)                                                               \
  X(Unknown, 0, "unknown")   /* not classified (query failed, or not applicable) */              \
  X(Pageable, 1, "pageable") /* cudaMemoryTypeUnregistered: malloc, new, stack, mmap */          \
  X(Pinned, 2, "pinned")     /* cudaMemoryTypeHost: cudaMallocHost, cudaHostAlloc, registered */ \
  X(Device, 3, "device")     /* cudaMemoryTypeDevice */                                          \
  X(Managed, 4, "managed")   /* cudaMemoryTypeManaged */                                         \
  X(Array, 5, "array")       /* a CUDA array (2D/3D copies) */

#define ASYNCWATCH_DIRECTIONS(X) \
  X(Unknown, 0, "unknown")       \
  X(HtoD, 1, "HtoD")             \
  X(DtoH, 2, "DtoH")             \
  X(DtoD, 3, "DtoD")             \
  X(HtoH, 4, "HtoH")             \
  X(Peer, 5, "Peer") /* device to device across devices */

// How the stream argument reached the driver. Explicit streams are resolved by the analyzer
// through the StreamCreate record of that handle (blocking or cudaStreamNonBlocking).
#define ASYNCWATCH_STREAM_KINDS(X)                                                                     \
  X(Unknown, 0, "unknown")                                                                             \
  X(LegacyDefault, 1, "legacy-default")        /* handle 0 (legacy entry point) or cudaStreamLegacy */ \
  X(PerThreadDefault, 2, "per-thread-default") /* handle 0 (_ptsz/_ptds) or cudaStreamPerThread */     \
  X(Explicit, 3, "explicit")                   /* a created stream */

// Why records were lost (LostRecord.reason).
#define ASYNCWATCH_LOST_REASONS(X)                                                                  \
  X(Unknown, 0, "unknown")                                                                          \
  X(NoBlock, 1, "no-block")             /* no block could be claimed (tracing stopped or closed) */ \
  X(FileLimit, 2, "file-limit")         /* the file could not grow: disk full, RLIMIT_FSIZE */      \
  X(SignalHandler, 3, "signal-handler") /* a handler interrupted the library: nowhere to write */   \
  X(TooLarge, 4, "too-large")           /* the record does not fit a block */

#define ASYNCWATCH_ENUM_ROW(name, value, text)  name = value,
#define ASYNCWATCH_ENUM_TEXT(name, value, text) text,
#define ASYNCWATCH_ENUM_ONE(name, value, text)  +1

enum class MemoryKind : uint8_t { ASYNCWATCH_MEMORY_KINDS(ASYNCWATCH_ENUM_ROW) };
enum class Direction : uint8_t { ASYNCWATCH_DIRECTIONS(ASYNCWATCH_ENUM_ROW) };
enum class StreamKind : uint8_t { ASYNCWATCH_STREAM_KINDS(ASYNCWATCH_ENUM_ROW) };
enum class LostReason : uint32_t { ASYNCWATCH_LOST_REASONS(ASYNCWATCH_ENUM_ROW) };
// The values of each of these enums are 0..N-1 (checked below): a value < kXxxCount is valid.
inline constexpr uint8_t kMemoryKindCount = 0 ASYNCWATCH_MEMORY_KINDS(ASYNCWATCH_ENUM_ONE);
inline constexpr uint8_t kDirectionCount = 0 ASYNCWATCH_DIRECTIONS(ASYNCWATCH_ENUM_ONE);
inline constexpr uint8_t kStreamKindCount = 0 ASYNCWATCH_STREAM_KINDS(ASYNCWATCH_ENUM_ONE);
inline constexpr uint32_t kLostReasonCount = 0 ASYNCWATCH_LOST_REASONS(ASYNCWATCH_ENUM_ONE);
inline constexpr const char* kMemoryKindNames[] = {ASYNCWATCH_MEMORY_KINDS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* kDirectionNames[] = {ASYNCWATCH_DIRECTIONS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* kStreamKindNames[] = {ASYNCWATCH_STREAM_KINDS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* kLostReasonNames[] = {ASYNCWATCH_LOST_REASONS(ASYNCWATCH_ENUM_TEXT)};
static_assert(static_cast<uint8_t>(MemoryKind::Array) + 1 == kMemoryKindCount);
static_assert(static_cast<uint8_t>(Direction::Peer) + 1 == kDirectionCount);
static_assert(static_cast<uint8_t>(StreamKind::Explicit) + 1 == kStreamKindCount);
static_assert(static_cast<uint32_t>(LostReason::TooLarge) + 1 == kLostReasonCount);

inline constexpr const char* memory_kind_text(MemoryKind k) {
  return static_cast<uint8_t>(k) < kMemoryKindCount ? kMemoryKindNames[static_cast<uint8_t>(k)] : "unknown";
}
inline constexpr const char* direction_text(Direction d) {
  return static_cast<uint8_t>(d) < kDirectionCount ? kDirectionNames[static_cast<uint8_t>(d)] : "unknown";
}
inline constexpr const char* stream_kind_text(StreamKind k) {
  return static_cast<uint8_t>(k) < kStreamKindCount ? kStreamKindNames[static_cast<uint8_t>(k)] : "unknown";
}
inline constexpr const char* lost_reason_text(LostReason r) {
  return static_cast<uint32_t>(r) < kLostReasonCount ? kLostReasonNames[static_cast<uint32_t>(r)] : "unknown";
}

// ---- the one definition of a copy's direction --------------------------------------------
// Host = Pageable or Pinned; device side = Device, Managed or Array; Unknown on either side gives
// Unknown (an entry point whose name fixes the direction, cuMemcpyHtoD..., states it instead).
inline constexpr bool is_host_memory(MemoryKind k) { return k == MemoryKind::Pageable || k == MemoryKind::Pinned; }
inline constexpr bool is_device_memory(MemoryKind k) {
  return k == MemoryKind::Device || k == MemoryKind::Managed || k == MemoryKind::Array;
}
inline constexpr Direction infer_direction(MemoryKind src, MemoryKind dst) {
  if (is_host_memory(src) && is_device_memory(dst)) return Direction::HtoD;
  if (is_device_memory(src) && is_host_memory(dst)) return Direction::DtoH;
  if (is_device_memory(src) && is_device_memory(dst)) return Direction::DtoD;
  if (is_host_memory(src) && is_host_memory(dst)) return Direction::HtoH;
  return Direction::Unknown;
}
// The host side of a copy of direction `d` (the side whose kind decides whether it can be
// asynchronous): the source of HtoD, the destination of DtoH; for HtoH pageable when either side
// is, else the source; Unknown for device-to-device copies and unknown directions.
inline constexpr MemoryKind host_side(Direction d, MemoryKind src, MemoryKind dst) {
  switch (d) {
    case Direction::HtoD: return src;
    case Direction::DtoH: return dst;
    case Direction::HtoH:
      return src == MemoryKind::Pageable || dst == MemoryKind::Pageable ? MemoryKind::Pageable : src;
    default: return MemoryKind::Unknown;
  }
}
static_assert(infer_direction(MemoryKind::Pinned, MemoryKind::Managed) == Direction::HtoD);
static_assert(infer_direction(MemoryKind::Array, MemoryKind::Pageable) == Direction::DtoH);
static_assert(infer_direction(MemoryKind::Unknown, MemoryKind::Device) == Direction::Unknown);

// ---- flags: X(Name, bit) -> kFlagName = 1u << bit ------------------------------------------
#define ASYNCWATCH_RECORD_FLAGS(X)                                                                 \
  X(CaptureActive, 0)     /* the stream was capturing: recorded, not executed */                   \
  X(EvidenceChecked, 1)   /* an event was recorded after the call and queried at return */         \
  X(CompletedAtReturn, 2) /* ... and the stream had already completed the work */                  \
  X(FirstLaunch, 3)       /* first launch of this function in this process */                      \
  X(StackCaptured, 4)     /* stack_id refers to a Stack record */                                  \
  X(RuntimeOnly, 5)       /* seen at the runtime layer only (no driver call reached) */            \
  X(PerThreadEntry, 6)    /* reached through a _ptsz/_ptds driver entry point */                   \
  X(SynchronousApi, 7)    /* the API is synchronous by contract (cudaMemcpy, cuMemcpyHtoD) */      \
  X(InFlight, 8)          /* v2: published before the real call; cleared when the call returned */ \
  X(SourceStreamOrder, 9) /* v3, BatchCopy: a pageable source element is read in stream order */   \
  X(GpuTimed, 14)         /* v3: a GpuSpan record of this thread gives when its work ran on the device */

#define ASYNCWATCH_FLAG_ROW(name, bit) kFlag##name = 1u << bit,
enum RecordFlags : uint32_t { ASYNCWATCH_RECORD_FLAGS(ASYNCWATCH_FLAG_ROW) };
#undef ASYNCWATCH_FLAG_ROW

#define ASYNCWATCH_CONFIG_FLAGS(X)                                                                            \
  X(Evidence, 0)          /* completion evidence enabled */                                                   \
  X(StacksCopies, 1)      /* stacks for copies, memsets, host functions */                                    \
  X(StacksLaunches, 2)    /* stacks for every launch (else only blocked ones) */                              \
  X(StacksSync, 3)        /* stacks for sync and memory-management calls */                                   \
  X(StacksMemory, 4)      /* v3: stacks for memory-management, prefetch and graph-construction calls */       \
  X(PythonFrames, 5)      /* v3: stacks carry the calling thread's Python frames */                           \
  X(Nvtx, 6)              /* v3: NVTX was injected (InitializeInjectionNvtx2 ran): NvtxRange records */       \
  X(GpuTimes, 7)          /* ASYNCWATCH_GPU_TIMES=1: GpuSpan / GpuClock records */                            \
  X(FileThreadYielded, 8) /* the file thread ended to leave its process slot to the program (RLIMIT_NPROC) */ \
  X(Summary, 9)           /* v4, ASYNCWATCH_SUMMARY=1: repeated calls folded into SiteSummary records */      \
  X(Flight, 10)           /* v6, ASYNCWATCH_TRACE_LIMIT: flight recorder, ring blocks (BLKR) + summaries */

#define ASYNCWATCH_CONFIG_ROW(name, bit) kConfig##name = 1u << bit,
enum ConfigFlags : uint32_t { ASYNCWATCH_CONFIG_FLAGS(ASYNCWATCH_CONFIG_ROW) };
#undef ASYNCWATCH_CONFIG_ROW

// Name tables of the flag words, by bit.
struct FlagName {
  uint32_t bit;
  const char* name;
};
#define ASYNCWATCH_FLAG_NAME(name, bit) FlagName{1u << bit, #name},
inline constexpr FlagName kRecordFlagNames[] = {ASYNCWATCH_RECORD_FLAGS(ASYNCWATCH_FLAG_NAME)};
inline constexpr FlagName kConfigFlagNames[] = {ASYNCWATCH_CONFIG_FLAGS(ASYNCWATCH_FLAG_NAME)};
#undef ASYNCWATCH_FLAG_NAME

// ---- framing --------------------------------------------------------------------------------
struct RecordHeader {
  uint16_t type;  // RecordType
  uint16_t size;  // bytes of the whole record including this header, multiple of 8
};
static_assert(sizeof(RecordHeader) == 4);

inline constexpr uint32_t record_size_aligned(uint32_t bytes) { return (bytes + 7u) & ~7u; }

// Where FileHeader::rank came from (the variables, in the order they are looked at).
enum class RankSource : uint8_t { None = 0, Rank = 1, OmpiCommWorldRank = 2, PmiRank = 3, SlurmProcid = 4 };
inline constexpr const char* kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};

// What limited the recording to part of the run (FileHeader::capture_mode; ASYNCWATCH_CAPTURE_RANGE,
// ASYNCWATCH_DELAY, ASYNCWATCH_DURATION, docs/configuration.md). X(enumerator, value, name as the
// user writes it).
#define ASYNCWATCH_CAPTURE_MODES(X)                                                       \
  X(None, 0, "none")                   /* the whole run */                                \
  X(ProfilerApi, 1, "cudaProfilerApi") /* cudaProfilerStart/Stop, cuProfilerStart/Stop */ \
  X(Nvtx, 2, "nvtx")                   /* the calls inside an NVTX range of a name */     \
  X(Time, 3, "time")                   /* --delay / --duration alone */
#define ASYNCWATCH_CAPTURE_ROW(e, v, n) e = v,
enum class CaptureMode : uint8_t { ASYNCWATCH_CAPTURE_MODES(ASYNCWATCH_CAPTURE_ROW) };
#undef ASYNCWATCH_CAPTURE_ROW
inline constexpr const char* capture_mode_text(uint8_t m) {
#define ASYNCWATCH_CAPTURE_ROW(e, v, n) \
  if (m == v) return n;
  ASYNCWATCH_CAPTURE_MODES(ASYNCWATCH_CAPTURE_ROW)
#undef ASYNCWATCH_CAPTURE_ROW
  return "unknown";
}

struct FileHeader {
  char magic[8];         // kMagic
  uint32_t version;      // kFormatVersion of the writer
  uint32_t header_size;  // kHeaderSize
  uint32_t block_size;   // kBlockSize
  uint32_t closed;       // kClosedCleanly after a clean close, else 0
  uint64_t pid;
  uint64_t ppid;
  uint64_t parent_pid_if_forked;       // pid of the process this one was fork()ed from while traced, else 0
  uint64_t start_monotonic_ns;         // CLOCK_MONOTONIC at trace open
  uint64_t start_realtime_ns;          // CLOCK_REALTIME at the same instant
  uint64_t end_monotonic_ns;           // at clean close, else 0
  uint64_t blocks_claimed;             // updated (atomically, in the mapping) as blocks are claimed
  uint64_t records_lost;               // updated atomically when a record could not be written
  int32_t exit_status;                 // exit code seen at clean close (-1 unknown)
  uint32_t config_flags;               // ConfigFlags at open
  uint64_t launch_stack_threshold_ns;  // launches slower than this got a stack
  char hostname[64];
  char executable[512];     // /proc/self/exe
  char command_line[1024];  // argv joined by spaces, truncated
  char cuda_env[256];       // CUDA_LAUNCH_BLOCKING, CUDA_MODULE_LOADING, CUDA_DEVICE_MAX_CONNECTIONS
                            // as "NAME=value;..." for those set at open
  // Recording paused by the application (asyncwatch_set_recording, asyncwatch/control.h): calls
  // made while paused are not in the trace. Updated atomically in the mapping.
  uint64_t paused_ns;        // total of the pauses that ended
  uint64_t pause_count;      // pauses begun
  uint64_t paused_since_ns;  // CLOCK_MONOTONIC start of the pause in progress, else 0
  // v3: the process's rank in a parallel job, from the first of RANK,
  // OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID set to a number at open (RankSource says which;
  // None, as in older traces: no rank).
  uint32_t rank;
  uint8_t rank_source;  // RankSource
  uint8_t rank_padding[3];
  // Capture range (CaptureMode; zero in traces written without one, and before it existed: same
  // version). Recording happened only inside the ranges; the time outside them is in the pause
  // fields above. Updated atomically in the mapping (valid in an unclean trace).
  uint8_t capture_mode;
  uint8_t capture_padding[7];
  uint64_t capture_ranges;          // ranges that opened
  uint64_t capture_first_start_ns;  // CLOCK_MONOTONIC when the first opened, 0 none
  uint64_t capture_last_start_ns;   // when the last opened
  uint64_t capture_last_end_ns;     // when the last one that closed closed (< last_start: open at the end)
  uint64_t capture_delay_ns;        // ASYNCWATCH_DELAY, 0 none
  uint64_t capture_duration_ns;     // ASYNCWATCH_DURATION, 0 none
  // v6, flight recorder (kConfigFlight; zero otherwise). The ring's blocks (kBlockMagicRing) hold
  // copies of completed call records, the most recent flight_ring_blocks blocks' worth; the rest of
  // the file is a summary trace of the whole run. Updated atomically in the mapping.
  uint64_t flight_ring_blocks;      // the ring's size in blocks (ASYNCWATCH_TRACE_LIMIT / kBlockSize)
  uint64_t flight_blocks_reused;    // ring blocks reused: their older records were dropped
  uint64_t flight_window_start_ns;  // every call that started after this is in the ring (but
                                    // flight_copies_missed); 0 while no block was reused
  uint64_t flight_copies_missed;    // completed calls with no ring copy (every ring block held by a thread)
  uint8_t reserved[kHeaderSize - 8 - 4 * 4 - 8 * 8 - 4 - 4 - 8 - 64 - 512 - 1024 - 256 - 3 * 8 - 8 - 8 - 6 * 8 - 4 * 8];
};
static_assert(sizeof(FileHeader) == kHeaderSize);

struct BlockHeader {
  uint32_t magic;        // kBlockMagic (kBlockMagicShared, kBlockMagicRing)
  uint32_t tid;          // kernel thread id of the owning thread
  uint64_t block_index;  // position in the file (0-based), for consistency checks; a ring block's sequence
};
static_assert(sizeof(BlockHeader) == 16);

// ---- records --------------------------------------------------------------------------------
// Times are CLOCK_MONOTONIC nanoseconds. blocked time = end_ns - start_ns of the call.

// The head of every call record (offset 0 of each struct derived from it).
struct CallHead {
  RecordHeader h;       // type, size
  uint16_t api;         // Api the application called
  uint16_t driver_fn;   // Api of the driver entry point reached, or Api::None
  uint32_t flags;       // RecordFlags (kFlagInFlight: published before the call, not completed yet)
  int32_t result;       // CUresult / cudaError_t returned to the application
  uint32_t stack_id;    // 0 = none
  uint8_t stream_kind;  // StreamKind (Unknown where the call has no stream)
  uint8_t reserved[3];
  uint64_t start_ns;  // CLOCK_MONOTONIC
  // CLOCK_MONOTONIC once the call returned. While in flight (kFlagInFlight): the return address of
  // the application's call into the outermost wrapper (its caller: the application's call
  // instruction, or the statically linked runtime's), the call site of a call that never returned
  // when the record has no stack; 0 when not stored (in-flight records of older writers).
  uint64_t end_ns;
};
static_assert(sizeof(CallHead) == 40);

// The caller's return address a record still in flight holds (CallHead::end_ns), else 0.
inline constexpr uint64_t in_flight_caller(const CallHead& h) { return (h.flags & kFlagInFlight) ? h.end_ns : 0; }

struct CopyRecord : CallHead {  // RecordType::Copy and RecordType::Memset
  uint64_t stream;              // handle value as passed
  uint64_t bytes;               // total bytes copied or set
  uint8_t direction;            // Direction (Unknown for memsets)
  uint8_t src_memory;           // MemoryKind (Unknown for memsets)
  uint8_t dst_memory;           // MemoryKind
  uint8_t pad[5];
};
static_assert(sizeof(CopyRecord) == 64);

struct LaunchRecord : CallHead {
  uint64_t stream;
  uint32_t kernel_name_id;  // StringRecord id, 0 unknown
  uint32_t shared_mem_bytes;
  uint32_t grid[3];
  uint32_t block[3];
};
static_assert(sizeof(LaunchRecord) == 80);

struct HostFuncEnqueueRecord : CallHead {  // cudaStreamAddCallback / cudaLaunchHostFunc / cu*
  uint64_t stream;
  uint64_t callback_id;    // matches HostFuncRunRecord; unique in the process
  uint64_t user_function;  // address of the application's callback
};
static_assert(sizeof(HostFuncEnqueueRecord) == 64);

struct SyncRecord : CallHead {  // stream/event/device synchronize, stream wait event, queries
  uint64_t handle;              // stream or event handle, 0 for device sync
  uint32_t repeat;              // identical calls this record stands for (1; a later version may fold polling)
  uint32_t pad;
};
static_assert(sizeof(SyncRecord) == 56);

struct MemoryOpRecord : CallHead {  // allocations, frees, registrations (implicit synchronization)
  uint64_t address;
  uint64_t bytes;
  uint8_t memory;  // MemoryKind of the memory allocated/freed/registered
  uint8_t pad[3];
  uint32_t alloc_flags;  // the API's flags argument (cudaHostAlloc*, cudaHostRegister*)
};
static_assert(sizeof(MemoryOpRecord) == 64);

struct StreamCreateRecord : CallHead {  // also StreamDestroy (flags/priority unused)
  uint64_t stream;
  uint32_t stream_flags;  // CU_STREAM_NON_BLOCKING = 1
  int32_t priority;
};
static_assert(sizeof(StreamCreateRecord) == 56);

struct CaptureRecord : CallHead {  // begin / end of stream capture
  uint64_t stream;
  uint32_t mode;  // CUstreamCaptureMode
  uint32_t pad;
};
static_assert(sizeof(CaptureRecord) == 56);

struct ThreadInfoRecord {  // first record a thread writes
  RecordHeader h;
  uint32_t tid;
  char name[16];  // pthread name at the time
};
static_assert(sizeof(ThreadInfoRecord) == 24);

struct ModuleRecord {  // variable: followed by path_len bytes of path (no NUL)
  RecordHeader h;
  uint16_t path_len;
  uint8_t build_id_len;
  uint8_t reserved;
  uint64_t load_bias;  // dlpi_addr: runtime address = file vaddr + load_bias
  uint64_t low;        // lowest mapped address of its PT_LOAD segments
  uint64_t high;       // one past the highest
  uint8_t build_id[20];
  uint8_t pad[4];
  // char path[path_len];
  static constexpr uint32_t payload_bytes(const ModuleRecord& r) { return r.path_len; }
};
static_assert(sizeof(ModuleRecord) == 56);

// One Python frame of a stack (v3): the interned code object and the instruction it executes.
struct PythonFrameRef {
  uint32_t code_id;  // PyCodeRecord id, 0: the code object could not be described (unknown)
  int32_t instr;     // instruction index in 2-byte code units; -1: a 3.10 frame not started yet
};
static_assert(sizeof(PythonFrameRef) == 8);

// The Python frames of a stack are at most this many (innermost first: the user's line is near).
inline constexpr uint32_t kMaxPythonDepth = 32;
// A deeper stack keeps this many of its outermost frames last (PythonWalkEnd::Elided): the user's
// script is there when a framework's own frames fill the rest (torch.compile: 100+ frames).
inline constexpr uint32_t kPythonOuterFrames = 8;

struct StackRecord {  // variable: followed by depth uint64_t return addresses, innermost first,
                      // then (v3) python_depth PythonFrameRef, innermost first
  RecordHeader h;
  uint32_t stack_id;     // > 0
  uint16_t depth;        // native frames, at most kMaxStackDepth
  uint8_t python_depth;  // Python frames, at most kMaxPythonDepth (0 before v3; a uint16_t before
                         // v7, whose high byte, always 0, is now python_own)
  // v7, with a lender: the first python_own Python frames are the calling thread's own (a thread
  // Python did not create that called into Python: autograd's engine running a compiled
  // backward), the rest the lender's, outer to them. 0 (and always before v7): all borrowed.
  uint8_t python_own;
  uint8_t python_end;  // how the Python walk ended (PythonWalkEnd; with a lender, the lender's walk), 0 none
  // 0: the Python frames are the calling thread's own. Else some were borrowed from another thread
  // of the interpreter (the caller had no Python frames, or was a thread Python did not create):
  // python_lender_* below read it. Older writers left it zero: same version.
  uint8_t python_lender[3];
  // uint64_t frames[depth];
  // PythonFrameRef python_frames[python_depth];
  static constexpr uint32_t payload_bytes(const StackRecord& r) { return 8u * r.depth + 8u * r.python_depth; }
};
static_assert(sizeof(StackRecord) == 16);

// StackRecord.python_lender, 24 bits little-endian: bit 23 set when the frames are borrowed, bit 22
// when the lender held the GIL (was running bytecode) rather than waiting in a C call, bits 0-21
// the lender's Linux thread id (< 2^22 = PID_MAX_LIMIT), kPythonLenderTidUnknown when not known
// (3.10 keeps no native thread id).
inline constexpr uint32_t kPythonLenderBorrowed = 1u << 23;
inline constexpr uint32_t kPythonLenderRunning = 1u << 22;
inline constexpr uint32_t kPythonLenderTidMask = (1u << 22) - 1;
inline constexpr uint32_t kPythonLenderTidUnknown = kPythonLenderTidMask;
inline constexpr uint32_t python_lender_encode(uint32_t tid, bool running) {
  return kPythonLenderBorrowed | (running ? kPythonLenderRunning : 0u) |
         (tid == 0 || tid > kPythonLenderTidMask ? kPythonLenderTidUnknown : tid);
}
inline constexpr uint32_t python_lender(const StackRecord& r) {
  return r.python_lender[0] | (uint32_t{r.python_lender[1]} << 8) | (uint32_t{r.python_lender[2]} << 16);
}
inline constexpr void set_python_lender(StackRecord& r, uint32_t lender) {
  r.python_lender[0] = static_cast<uint8_t>(lender);
  r.python_lender[1] = static_cast<uint8_t>(lender >> 8);
  r.python_lender[2] = static_cast<uint8_t>(lender >> 16);
}

// How a stack's Python walk ended (StackRecord.python_end).
#define ASYNCWATCH_PYTHON_WALK_ENDS(X)                                                \
  X(None, 0, "none")              /* no walk (no Python frames) */                    \
  X(Complete, 1, "complete")      /* the outermost frame was reached */               \
  X(DepthLimit, 2, "depth-limit") /* kMaxPythonDepth frames kept, more were there */  \
  X(Invalid, 3, "invalid")        /* a frame failed validation: the walk stopped */   \
  X(Elided, 4, "elided")          /* deeper than kMaxPythonDepth: the innermost   */  \
                                  /* kMaxPythonDepth - kPythonOuterFrames frames,  */ \
                                  /* then the kPythonOuterFrames outermost         */

enum class PythonWalkEnd : uint8_t { ASYNCWATCH_PYTHON_WALK_ENDS(ASYNCWATCH_ENUM_ROW) };
inline constexpr uint8_t kPythonWalkEndCount = 0 ASYNCWATCH_PYTHON_WALK_ENDS(ASYNCWATCH_ENUM_ONE);
inline constexpr const char* kPythonWalkEndNames[] = {ASYNCWATCH_PYTHON_WALK_ENDS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* python_walk_end_text(PythonWalkEnd e) {
  return static_cast<uint8_t>(e) < kPythonWalkEndCount ? kPythonWalkEndNames[static_cast<uint8_t>(e)] : "unknown";
}

// A code object of the traced interpreter (v3), written once per (code object, trace) by the
// thread that first saw it in a stack. Variable: followed by filename_len bytes of co_filename,
// qualname_len bytes of co_qualname (co_name for 3.10), both UTF-8, and line_table_len bytes of the
// raw co_linetable (python_lines.h decodes it: asyncwatch/python_lines.h).
struct PyCodeRecord {
  RecordHeader h;
  uint32_t code_id;       // > 0, per trace
  int32_t first_line;     // co_firstlineno
  uint32_t instructions;  // bytecode length in code units
  uint16_t filename_len;
  uint16_t qualname_len;
  uint32_t line_table_len;
  uint8_t line_table_format;  // python_lines::LineTableFormat
  uint8_t flags;              // kPyCodeNameTruncated | kPyCodeLineTableTruncated
  uint16_t reserved;
  uint32_t reserved2;
  static constexpr uint32_t payload_bytes(const PyCodeRecord& r) {
    return uint32_t{r.filename_len} + r.qualname_len + r.line_table_len;
  }
};
static_assert(sizeof(PyCodeRecord) == 32);
inline constexpr uint8_t kPyCodeNameTruncated = 1;
inline constexpr uint8_t kPyCodeLineTableTruncated = 2;

// The interpreter the preload library found (v3): written at trace open when the process has one
// (none in a process without Python).
struct PythonInfoRecord {
  RecordHeader h;
  uint32_t version_hex;  // PY_VERSION_HEX, 0 unknown
  uint8_t availability;  // 1: frames are read; 2: unsupported (detail says why)
  uint8_t reserved[7];
  char detail[112];  // the object that defines _PyRuntime, or why it is not supported (NUL-padded)
};
static_assert(sizeof(PythonInfoRecord) == 128);

struct StringRecord {  // variable: interned text (kernel names); followed by len bytes
  RecordHeader h;
  uint32_t string_id;  // > 0
  uint32_t len;
  static constexpr uint32_t payload_bytes(const StringRecord& r) { return r.len; }
};
static_assert(sizeof(StringRecord) == 12);

struct HostFuncRunRecord {  // written by the driver thread that ran the callback
  RecordHeader h;
  uint32_t reserved;
  uint64_t callback_id;
  uint64_t start_ns;
  uint64_t end_ns;
};
static_assert(sizeof(HostFuncRunRecord) == 32);

// Records this thread could not write since its previous record, written in band before its next
// record that could be written (FileHeader.records_lost stays the total: these give the detail).
struct LostRecord {
  RecordHeader h;
  uint32_t reason;  // LostReason of the first loss
  uint64_t count;
  uint64_t first_lost_ns;
  uint64_t last_lost_ns;
};
static_assert(sizeof(LostRecord) == 32);

struct DeviceInfoRecord {  // written once, on the first intercepted call after CUDA was initialized
  RecordHeader h;
  int32_t driver_version;  // cuDriverGetVersion
  int32_t device_ordinal;
  uint32_t simulated;  // 1 when the device name says it is asyncwatch's simulator
  char name[100];      // cuDeviceGetName
};
static_assert(sizeof(DeviceInfoRecord) == 116);

// ---- version 3 ----
// A batch of copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync and their runtime forms), each element
// classified. The CopyRecord part describes the elements that decide whether the call may wait: the
// pageable ones when there are any (direction and memory kinds of the first of them; kFlagSourceStreamOrder
// when a pageable source is read in stream order, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, which makes the call
// wait for the stream), else the first element; `bytes` is the whole batch's.
struct BatchCopyRecord : CopyRecord {
  uint32_t elements;                       // copies in the batch (as passed: count / numOps)
  uint32_t pageable_elements;              // elements with a pageable host side
  uint64_t pageable_bytes;                 // their bytes
  uint32_t stream_order_pageable_sources;  // pageable-source elements read in stream order
  uint32_t classified;                     // elements classified (all of them unless the arrays were unreadable: null)
  uint64_t stream_order_pageable_bytes;    // their bytes
};
static_assert(sizeof(BatchCopyRecord) == 96);

// cuMemPrefetchAsync(_v2) and cuStreamAttachMemAsync (and the runtime forms): a managed-memory operation
// enqueued on a stream.
struct ManagedOpRecord : CallHead {
  uint64_t stream;
  uint64_t address;
  uint64_t bytes;
  uint8_t memory;         // MemoryKind of `address` (Managed expected; Device/Pageable when misused)
  uint8_t location_type;  // prefetch: CUmemLocationType (1 device, 2 host, 3 host NUMA, 4 host NUMA current)
  uint8_t pad[2];
  int32_t location_id;  // prefetch: device ordinal or NUMA id (v1 entry point: the CUdevice, -1 = host)
  uint32_t op_flags;    // the API's flags argument (attach: CU_MEM_ATTACH_*)
  uint32_t pad2;
};
static_assert(sizeof(ManagedOpRecord) == 80);

// Explicit graph construction: a memcpy node added (cuGraphAddMemcpyNode: graph, node), a memcpy node
// of an executable graph given new parameters (cuGraphExecMemcpyNodeSetParams: exec, node), each with the
// copy's memory classified; a graph instantiated (graph -> exec), an executable graph updated from a
// graph (exec <- graph), a capture ended (stream -> graph; written after the Capture record of
// cuStreamEndCapture), a graph cloned (version 4, cuGraphClone: graph -> clone; the clone has the
// original's nodes). `api` tells which. Call sites: always a stack (the origin the report names).
struct GraphOpRecord : CallHead {
  uint64_t graph;
  uint64_t exec;
  union {
    uint64_t node;   // memcpy node: the CUgraphNode
    uint64_t clone;  // cuGraphClone: the clone (CUgraph); `graph` is the original
  };
  uint64_t stream;     // end of capture: the captured stream
  uint64_t bytes;      // memcpy node: bytes copied
  uint8_t direction;   // memcpy node: Direction
  uint8_t src_memory;  // MemoryKind
  uint8_t dst_memory;  // MemoryKind
  uint8_t pad[5];
};
static_assert(sizeof(GraphOpRecord) == 88);

// cuGraphLaunch / cudaGraphLaunch: a LaunchRecord (kernel_name_id 0, no shape) with the executable graph.
struct GraphLaunchRecord : LaunchRecord {
  uint64_t exec;  // CUgraphExec handle
};
static_assert(sizeof(GraphLaunchRecord) == 88);

// A reservation that was not wanted after all (the call was not recorded): same size as the
// reservation, skipped by readers. The bytes after the header are zero.
struct PaddingRecord {
  RecordHeader h;
  uint32_t reserved;
  static constexpr bool kAnySize = true;  // any size >= 8 (that of the reservation it replaces)
};
static_assert(sizeof(PaddingRecord) == 8);

// Version 5: the rest of the block, after this record, is thread `tid`'s (to the next Handoff or
// the block's end). A thread that exited leaves the unused rest of its block to the next thread
// that starts writing into the trace, so that threads that make a few calls each do not take a
// block each; the block's magic is kBlockMagicShared from the first Handoff on.
struct HandoffRecord {
  RecordHeader h;
  uint32_t tid;  // the kernel thread id the records after it belong to (never 0)
};
static_assert(sizeof(HandoffRecord) == 8);

// What a GpuSpan timed (GpuSpanRecord.op).
#define ASYNCWATCH_GPU_OPS(X) \
  X(Unknown, 0, "unknown")    \
  X(Copy, 1, "copy")          \
  X(Memset, 2, "memset")      \
  X(Kernel, 3, "kernel")      \
  X(HostFunction, 4, "host-function")
enum class GpuOp : uint8_t { ASYNCWATCH_GPU_OPS(ASYNCWATCH_ENUM_ROW) };
inline constexpr uint8_t kGpuOpCount = 0 ASYNCWATCH_GPU_OPS(ASYNCWATCH_ENUM_ONE);
inline constexpr const char* kGpuOpNames[] = {ASYNCWATCH_GPU_OPS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* gpu_op_text(GpuOp o) {
  return static_cast<uint8_t>(o) < kGpuOpCount ? kGpuOpNames[static_cast<uint8_t>(o)] : "unknown";
}

// v3, ASYNCWATCH_GPU_TIMES=1 (preload/src/gpu_times/): when one operation a call enqueued ran on
// the device, from timing events recorded on its stream before and after the call, resolved later
// on the same thread. Written by the thread that made the call, after it (often much later). The
// call is this thread's call record that overlaps [host_before_ns, host_after_ns] (the library's
// own instants just before and just after the real call). Device times are CLOCK_MONOTONIC, from
// the device clock through the thread's latest GpuClock record (its offset's uncertainty is there).
struct GpuSpanRecord {
  RecordHeader h;
  uint8_t op;           // GpuOp
  uint8_t stream_kind;  // StreamKind of the call
  uint16_t reserved;
  uint64_t stream;  // handle value as passed
  uint64_t host_before_ns;
  uint64_t host_after_ns;
  // When it ran on the device, in CLOCK_MONOTONIC (the record's times: readers merge it by them).
  uint64_t start_ns;
  uint64_t end_ns;
};
static_assert(sizeof(GpuSpanRecord) == 48);

// v3: one calibration of the device clock against CLOCK_MONOTONIC by this thread: a reference
// event recorded on a private idle stream and synchronized; its device time is taken to be
// host_ns (the midpoint), within +- uncertainty_ns. spans_dropped: this thread's operations not
// timed so far (too many pending at once, or their reference was gone before they completed).
struct GpuClockRecord {
  RecordHeader h;
  uint32_t reserved;
  uint64_t host_ns;
  uint64_t uncertainty_ns;
  uint64_t spans_dropped;
};
static_assert(sizeof(GpuClockRecord) == 32);

// What an NvtxRange record marks (NvtxRangeRecord.kind).
#define ASYNCWATCH_NVTX_KINDS(X)                                              \
  X(Push, 0, "push")   /* nvtxRangePush*: a range of this thread begins */    \
  X(Pop, 1, "pop")     /* nvtxRangePop: this thread's innermost range ends */ \
  X(Start, 2, "start") /* nvtxRangeStart*: a range of the process begins */   \
  X(End, 3, "end")     /* nvtxRangeEnd: the range of that id ends */          \
  X(Mark, 4, "mark")   /* nvtxMarkA/Ex: an instant */
enum class NvtxKind : uint8_t { ASYNCWATCH_NVTX_KINDS(ASYNCWATCH_ENUM_ROW) };
inline constexpr uint8_t kNvtxKindCount = 0 ASYNCWATCH_NVTX_KINDS(ASYNCWATCH_ENUM_ONE);
inline constexpr const char* kNvtxKindNames[] = {ASYNCWATCH_NVTX_KINDS(ASYNCWATCH_ENUM_TEXT)};
inline constexpr const char* nvtx_kind_text(NvtxKind k) {
  return static_cast<uint8_t>(k) < kNvtxKindCount ? kNvtxKindNames[static_cast<uint8_t>(k)] : "unknown";
}

// v3 (preload/src/nvtx/): an NVTX range event of the core domain, written by the thread
// that called NVTX (the block's tid). Push/Pop nest per thread and domain; Start/End pair by
// range_id and may be on different threads. name_id: StringRecord id of the message (kernel names'
// id space; a range of a domain other than the core one is named "DOMAIN::MESSAGE"), 0 for Pop/End
// and for a message that is not text. domain: 0 the core (default) domain, else the process's own
// number for the domain nvtxDomainCreate made (1, 2, ...; zero in traces written before domains
// were recorded, which had only the core domain).
struct NvtxRangeRecord {
  RecordHeader h;
  uint8_t kind;  // NvtxKind
  uint8_t reserved[3];
  uint32_t name_id;
  uint32_t domain;
  uint64_t range_id;  // Start/End: the id nvtxRangeStart returned; Push/Pop: nesting depth (0 outermost)
  uint64_t start_ns;  // CLOCK_MONOTONIC of the NVTX call (the record's time: readers merge it by it)
  uint64_t end_ns;    // the same instant
};
static_assert(sizeof(NvtxRangeRecord) == 40);

// v4, summary mode (ASYNCWATCH_SUMMARY=1, header kConfigSummary): calls whose records are identical
// but for their times (same type, API, flags, result, stack, stream, sizes, memory kinds, kernel...)
// are folded into one of these, written by the calling thread into its own block after the
// signature's second call and updated in place as later ones return (the mapping is MAP_SHARED: a SIGKILL leaves
// the counts of every call that returned). The first kSummaryFirstExemplars calls of a signature are
// written as ordinary records (exemplars: their own times) and are not counted here; the slowest
// kSummaryWorstExemplars of the folded ones keep their times here (worst exemplars: folded like the
// others, so that the folded calls of the sites of a loop stay in step). A thread that moves to a new block starts
// new SiteSummary records there; a reader adds up those of one signature. `call` is the folded calls'
// record with start_ns and end_ns zero; readers hand out `count` copies of it, their start times
// spread evenly over [first_start_ns, last_start_ns] and their blocked times drawn from the histogram
// so that their sum is total_ns and their maximum max_ns.
inline constexpr uint32_t kSummaryFirstExemplars = 2;
inline constexpr uint32_t kSummaryWorstExemplars = 2;
inline constexpr uint32_t kSummarySubBuckets = 4;  // per power of two: a bucket spans at most 1/4 of its start
inline constexpr uint32_t kSummaryBuckets = 144;   // up to 2^36 ns (68 s); longer calls count in the last
inline constexpr uint32_t kSummaryCallBytes = 96;  // the largest call record (BatchCopyRecord)
// The histogram bucket of a blocked time: exact below 8 ns, then 4 buckets per power of two.
inline constexpr uint32_t summary_bucket(uint64_t ns) {
  if (ns < 8) return static_cast<uint32_t>(ns);
  const uint32_t e = 63u - static_cast<uint32_t>(__builtin_clzll(ns));  // >= 3
  const uint32_t b = 4u * (e - 1u) + static_cast<uint32_t>((ns >> (e - 2u)) & 3u);
  return b < kSummaryBuckets ? b : kSummaryBuckets - 1;
}
// The smallest blocked time of bucket `b` (summary_bucket(summary_bucket_low(b)) == b).
inline constexpr uint64_t summary_bucket_low(uint32_t b) {
  if (b < 8) return b;
  const uint32_t e = b / 4u + 1u;
  return (uint64_t{4} + (b & 3u)) << (e - 2u);
}
static_assert(summary_bucket(7) == 7 && summary_bucket(8) == 8 && summary_bucket(15) == 11 && summary_bucket(16) == 12);
static_assert(summary_bucket_low(12) == 16 && summary_bucket_low(11) == 14 &&
              summary_bucket(summary_bucket_low(143)) == 143);

struct SiteSummaryRecord {
  RecordHeader h;
  uint32_t reserved;
  uint64_t count;           // calls folded in (exemplars excluded)
  uint64_t total_ns;        // their blocked times added up
  uint64_t max_ns;          // the longest of them
  uint64_t first_start_ns;  // start of the first of them (0: none yet)
  uint64_t last_start_ns;   // start of the last of them
  // The slowest of them (worst exemplars: the record is `call` with these times), slowest first; a
  // start of 0: none.
  uint64_t worst_start_ns[kSummaryWorstExemplars];
  uint64_t worst_ns[kSummaryWorstExemplars];
  uint32_t histogram[kSummaryBuckets];         // calls by summary_bucket(blocked time)
  alignas(8) uint8_t call[kSummaryCallBytes];  // the calls' record (RecordHeader: type and size), times zero
};
static_assert(sizeof(SiteSummaryRecord) == 752);

// ---- THE record table: X(id, Name, Struct, since_version) ---------------------------------
// Id 25 was not assigned before version 5 (GpuSpan was numbered from 26); Handoff took it.
#define ASYNCWATCH_RECORD_TYPES(X)                                                           \
  X(1, ThreadInfo, ThreadInfoRecord, 1)                                                      \
  X(2, Module, ModuleRecord, 1)                                                              \
  X(3, Stack, StackRecord, 1)                                                                \
  X(4, String, StringRecord, 1)                                                              \
  X(5, Copy, CopyRecord, 1)                                                                  \
  X(6, Memset, CopyRecord, 1)                                                                \
  X(7, Launch, LaunchRecord, 1)                                                              \
  X(8, HostFuncEnqueue, HostFuncEnqueueRecord, 1)                                            \
  X(9, HostFuncRun, HostFuncRunRecord, 1)                                                    \
  X(10, Sync, SyncRecord, 1)                                                                 \
  X(11, MemoryOp, MemoryOpRecord, 1)                                                         \
  X(12, StreamCreate, StreamCreateRecord, 1)                                                 \
  X(13, StreamDestroy, StreamCreateRecord, 1)                                                \
  X(14, Capture, CaptureRecord, 1)                                                           \
  X(15, Lost, LostRecord, 1) /* defined in v1 (16 bytes, never written); in band since v2 */ \
  X(16, DeviceInfo, DeviceInfoRecord, 1)                                                     \
  X(17, Padding, PaddingRecord, 2) /* a cancelled reservation: skip */                       \
  X(18, BatchCopy, BatchCopyRecord, 3)                                                       \
  X(19, ManagedOp, ManagedOpRecord, 3)                                                       \
  X(20, GraphOp, GraphOpRecord, 3)                                                           \
  X(21, GraphLaunch, GraphLaunchRecord, 3)                                                   \
  X(22, PyCode, PyCodeRecord, 3)                                                             \
  X(23, PythonInfo, PythonInfoRecord, 3)                                                     \
  X(24, NvtxRange, NvtxRangeRecord, 3)                                                       \
  X(25, Handoff, HandoffRecord, 5)                                                           \
  X(26, GpuSpan, GpuSpanRecord, 3)                                                           \
  X(27, GpuClock, GpuClockRecord, 3)                                                         \
  X(28, SiteSummary, SiteSummaryRecord, 4)

#define ASYNCWATCH_RECORD_ENUM(id, name, type, since) name = id,
enum class RecordType : uint16_t {
  None = 0,  // zero fill: end of the valid part of a block
  ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_RECORD_ENUM)
};
#undef ASYNCWATCH_RECORD_ENUM

#define ASYNCWATCH_RECORD_ONE(id, name, type, since) +1
inline constexpr size_t kRecordCount = 0 ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_RECORD_ONE);
#undef ASYNCWATCH_RECORD_ONE
static_assert(kRecordCount == 28, "a row was added or removed: update this count, the docs and kFormatVersion");

namespace detail {
inline constexpr uint16_t max_record_id() {
  uint16_t m = 0;
#define ASYNCWATCH_RECORD_MAX(id, name, type, since) m = id > m ? id : m;
  ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_RECORD_MAX)
#undef ASYNCWATCH_RECORD_MAX
  return m;
}
template <class T, class = void>
struct has_any_size : std::false_type {};
template <class T>
struct has_any_size<T, std::void_t<decltype(T::kAnySize)>> : std::true_type {};
template <class T, class = void>
struct has_times : std::false_type {};
template <class T>
struct has_times<T, std::void_t<decltype(std::declval<T&>().start_ns)>> : std::true_type {};
template <class T, class = void>
struct has_payload : std::false_type {};
template <class T>
struct has_payload<T, std::void_t<decltype(T::payload_bytes(std::declval<const T&>()))>> : std::true_type {};
}  // namespace detail

// Ids are below this: arrays indexed by type have kRecordTypeLimit entries.
inline constexpr uint16_t kRecordTypeLimit = detail::max_record_id() + 1;

template <class T>
inline constexpr bool is_call_record = std::is_base_of_v<CallHead, T>;
template <class T>
inline constexpr bool is_variable_record = detail::has_payload<T>::value;

// How a record's size is checked: fixed (== fixed), variable (== aligned(sizeof + payload)),
// any (>= fixed: Padding).
enum class SizeRule : uint8_t { Fixed, Variable, Any };

struct RecordInfo {
  const char* name;  // "None" for id 0 and unknown ids
  uint16_t fixed;    // sizeof(Struct) rounded to 8: the record's size (fixed types) or its minimum
  uint8_t since;     // first version that may contain it; 0: not a record type
  bool call;         // starts with CallHead
  SizeRule size_rule;
  uint16_t struct_size;  // sizeof(Struct): where the payload starts (variable types)
  uint8_t start_offset;  // of start_ns / end_ns (0: the record has no time): CallHead's for call records
  uint8_t end_offset;
};

namespace detail {
template <class T>
constexpr RecordInfo info_of(const char* name, uint8_t since) {
  constexpr bool any = has_any_size<T>::value;
  uint8_t start = 0, end = 0;
  if constexpr (is_call_record<T>) {
    start = offsetof(CallHead, start_ns);
    end = offsetof(CallHead, end_ns);
  } else if constexpr (has_times<T>::value) {  // standard-layout records with their own times (HostFuncRun)
    start = static_cast<uint8_t>(offsetof(T, start_ns));
    end = static_cast<uint8_t>(offsetof(T, end_ns));
  }
  return RecordInfo{name,
                    static_cast<uint16_t>(record_size_aligned(sizeof(T))),
                    since,
                    is_call_record<T>,
                    any ? SizeRule::Any : (is_variable_record<T> ? SizeRule::Variable : SizeRule::Fixed),
                    static_cast<uint16_t>(sizeof(T)),
                    start,
                    end};
}
struct RecordTable {
  RecordInfo at[kRecordTypeLimit];
};
inline constexpr RecordTable make_record_table() {
  RecordTable t{};
  for (auto& i : t.at) i = RecordInfo{"None", 0, 0, false, SizeRule::Fixed, 0, 0, 0};
#define ASYNCWATCH_RECORD_INFO(id, name, type, since) t.at[id] = info_of<type>(#name, since);
  ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_RECORD_INFO)
#undef ASYNCWATCH_RECORD_INFO
  return t;
}
}  // namespace detail

inline constexpr detail::RecordTable kRecordTable = detail::make_record_table();

inline constexpr const RecordInfo& record_info(uint16_t type) {
  return kRecordTable.at[type < kRecordTypeLimit ? type : 0];
}
inline constexpr const char* record_type_text(RecordType t) { return record_info(static_cast<uint16_t>(t)).name; }

namespace detail {
template <class T>
inline uint32_t payload_of(const void* p) {
  if constexpr (is_variable_record<T>) {
    T r;
    std::memcpy(&r, p, sizeof r);
    return T::payload_bytes(r);
  } else {
    (void)p;
    return 0;
  }
}
}  // namespace detail

// The payload bytes of a variable-size record at `p` (whose fixed part is readable), 0 for others.
inline uint32_t record_payload_bytes(uint16_t type, const void* p) {
  switch (static_cast<RecordType>(type)) {
#define ASYNCWATCH_RECORD_PAYLOAD(id, name, type_, since) \
  case RecordType::name: return detail::payload_of<type_>(p);
    ASYNCWATCH_RECORD_TYPES(ASYNCWATCH_RECORD_PAYLOAD)
#undef ASYNCWATCH_RECORD_PAYLOAD
    default: return 0;
  }
}

// ---- the flight recorder's size (ASYNCWATCH_TRACE_LIMIT, asyncwatch run --trace-limit) -----------
// One definition for the library (which warns and records in full on a bad value) and for
// `asyncwatch run` (which refuses it before the program starts).
inline constexpr uint64_t kMinTraceLimit = uint64_t{1} << 20;   // 16 blocks: a ring of a few threads
inline constexpr uint64_t kMaxTraceLimit = uint64_t{16} << 30;  // the ring's in-process table is sized for it
// "SIZE": a positive decimal number of bytes with an optional suffix K, M, G (powers of 1024, an
// optional trailing "B" or "iB"), e.g. 64M, 256M, 1G; between kMinTraceLimit and kMaxTraceLimit. The
// ring keeps SIZE rounded down to whole blocks. False (nothing stored) for anything else.
inline bool parse_trace_limit(const char* s, uint64_t* bytes) {
  if (!s || *s < '0' || *s > '9') return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    if (v > (kMaxTraceLimit << 1) / 10) return false;  // far beyond the maximum: no overflow below
    v = v * 10 + static_cast<uint64_t>(*s - '0');
  }
  unsigned shift = 0;
  if (*s == 'K' || *s == 'k') shift = 10;
  if (*s == 'M' || *s == 'm') shift = 20;
  if (*s == 'G' || *s == 'g') shift = 30;
  if (shift) ++s;
  if (shift && s[0] == 'i' && s[1] == 'B')
    s += 2;
  else if (*s == 'B')
    ++s;
  if (*s || v > (kMaxTraceLimit >> shift)) return false;
  v <<= shift;
  if (v < kMinTraceLimit) return false;
  *bytes = v;
  return true;
}

}  // namespace asyncwatch::trace
