// asyncwatch trace format, version 1: the one definition shared by the writer
// (preload/) and the reader (analyzer/). docs/trace-format.md describes it in prose;
// change both together and bump kFormatVersion on any incompatible change.
//
// Layout of a trace file (little-endian, x86-64):
//   [FileHeader, kHeaderSize bytes][Block 0][Block 1]...
// Each block is kBlockSize bytes, owned by exactly one thread (BlockHeader::tid), and holds
// records packed back to back, each 8-byte aligned, each starting with a RecordHeader.
// A record becomes visible when its RecordHeader is stored (release order) after its body,
// so a reader that finds `type == kNone` (the zero fill of an unwritten file) has reached the
// end of the valid part of that block. The writer maps the file MAP_SHARED, so every record
// of a call that returned is in the page cache even if the process is SIGKILLed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace asyncwatch::trace {

inline constexpr char kMagic[8] = {'A', 'S', 'Y', 'N', 'C', 'W', 'T', 'R'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kHeaderSize = 4096;
inline constexpr uint32_t kBlockSize = 64 * 1024;
inline constexpr uint32_t kBlockMagic = 0x314b4c42;     // "BLK1"
inline constexpr uint32_t kClosedCleanly = 0x45534f4c;  // "LOSE": written by a clean close
inline constexpr uint32_t kMaxStackDepth = 64;

// ---------------------------------------------------------------------------------------
// The APIs asyncwatch knows by name. `api` in a record is what the application called
// (cudaMemcpyAsync when the runtime was seen, else the driver entry point); `driver_fn` is
// the driver entry point it reached (kNone when the call never reached the driver, e.g. a
// copy recorded during stream capture through the runtime). The numeric ids are part of the
// format: append only, never reorder.
#define ASYNCWATCH_API_LIST(X)                 \
  X(None)                                      \
  /* runtime: copies */                        \
  X(cudaMemcpy)                                \
  X(cudaMemcpyAsync)                           \
  X(cudaMemcpy2D)                              \
  X(cudaMemcpy2DAsync)                         \
  X(cudaMemcpy3D)                              \
  X(cudaMemcpy3DAsync)                         \
  X(cudaMemcpyPeer)                            \
  X(cudaMemcpyPeerAsync)                       \
  X(cudaMemcpyToSymbol)                        \
  X(cudaMemcpyToSymbolAsync)                   \
  X(cudaMemcpyFromSymbol)                      \
  X(cudaMemcpyFromSymbolAsync)                 \
  X(cudaMemcpy2DToArray)                       \
  X(cudaMemcpy2DToArrayAsync)                  \
  X(cudaMemcpy2DFromArray)                     \
  X(cudaMemcpy2DFromArrayAsync)                \
  /* runtime: memsets */                       \
  X(cudaMemset)                                \
  X(cudaMemsetAsync)                           \
  X(cudaMemset2D)                              \
  X(cudaMemset2DAsync)                         \
  X(cudaMemset3D)                              \
  X(cudaMemset3DAsync)                         \
  /* runtime: launches */                      \
  X(cudaLaunchKernel)                          \
  X(cudaLaunchKernelExC)                       \
  X(cudaLaunchCooperativeKernel)               \
  X(__cudaLaunchKernel)                        \
  X(cudaGraphLaunch)                           \
  /* runtime: host functions */                \
  X(cudaStreamAddCallback)                     \
  X(cudaLaunchHostFunc)                        \
  /* runtime: synchronization */               \
  X(cudaStreamSynchronize)                     \
  X(cudaEventSynchronize)                      \
  X(cudaDeviceSynchronize)                     \
  X(cudaStreamWaitEvent)                       \
  X(cudaStreamQuery)                           \
  X(cudaEventQuery)                            \
  /* runtime: memory management */             \
  X(cudaMalloc)                                \
  X(cudaFree)                                  \
  X(cudaMallocHost)                            \
  X(cudaHostAlloc)                             \
  X(cudaFreeHost)                              \
  X(cudaHostRegister)                          \
  X(cudaHostUnregister)                        \
  X(cudaMallocManaged)                         \
  X(cudaMallocAsync)                           \
  X(cudaFreeAsync)                             \
  /* runtime: streams and capture */           \
  X(cudaStreamCreate)                          \
  X(cudaStreamCreateWithFlags)                 \
  X(cudaStreamCreateWithPriority)              \
  X(cudaStreamDestroy)                         \
  X(cudaStreamBeginCapture)                    \
  X(cudaStreamEndCapture)                      \
  /* driver: copies */                         \
  X(cuMemcpy)                                  \
  X(cuMemcpyAsync)                             \
  X(cuMemcpyHtoD_v2)                           \
  X(cuMemcpyDtoH_v2)                           \
  X(cuMemcpyDtoD_v2)                           \
  X(cuMemcpyHtoDAsync_v2)                      \
  X(cuMemcpyDtoHAsync_v2)                      \
  X(cuMemcpyDtoDAsync_v2)                      \
  X(cuMemcpy2D_v2)                             \
  X(cuMemcpy2DUnaligned_v2)                    \
  X(cuMemcpy2DAsync_v2)                        \
  X(cuMemcpy3D_v2)                             \
  X(cuMemcpy3DAsync_v2)                        \
  X(cuMemcpyPeer)                              \
  X(cuMemcpyPeerAsync)                         \
  X(cuMemcpyHtoAAsync_v2)                      \
  X(cuMemcpyAtoHAsync_v2)                      \
  /* driver: memsets */                        \
  X(cuMemsetD8_v2)                             \
  X(cuMemsetD16_v2)                            \
  X(cuMemsetD32_v2)                            \
  X(cuMemsetD8Async)                           \
  X(cuMemsetD16Async)                          \
  X(cuMemsetD32Async)                          \
  X(cuMemsetD2D8_v2)                           \
  X(cuMemsetD2D16_v2)                          \
  X(cuMemsetD2D32_v2)                          \
  X(cuMemsetD2D8Async)                         \
  X(cuMemsetD2D16Async)                        \
  X(cuMemsetD2D32Async)                        \
  /* driver: launches */                       \
  X(cuLaunchKernel)                            \
  X(cuLaunchKernelEx)                          \
  X(cuLaunchCooperativeKernel)                 \
  X(cuGraphLaunch)                             \
  /* driver: host functions */                 \
  X(cuStreamAddCallback)                       \
  X(cuLaunchHostFunc)                          \
  /* driver: synchronization */                \
  X(cuStreamSynchronize)                       \
  X(cuEventSynchronize)                        \
  X(cuCtxSynchronize)                          \
  X(cuStreamWaitEvent)                         \
  X(cuStreamQuery)                             \
  X(cuEventQuery)                              \
  /* driver: memory management */              \
  X(cuMemAlloc_v2)                             \
  X(cuMemFree_v2)                              \
  X(cuMemAllocHost_v2)                         \
  X(cuMemHostAlloc)                            \
  X(cuMemFreeHost)                             \
  X(cuMemHostRegister_v2)                      \
  X(cuMemHostUnregister)                       \
  X(cuMemAllocManaged)                         \
  X(cuMemAllocAsync)                           \
  X(cuMemFreeAsync)                            \
  /* driver: streams and capture */            \
  X(cuStreamCreate)                            \
  X(cuStreamCreateWithPriority)                \
  X(cuStreamDestroy_v2)                        \
  X(cuStreamBeginCapture_v2)                   \
  X(cuStreamEndCapture)                        \
  /* appended later (append-only: ids above are stable) */ \
  X(cuCtxSynchronize_v2)                       \
  X(cuStreamBeginCaptureToGraph)

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

// What cudaPointerGetAttributes / cuPointerGetAttributes say of one side of a copy.
enum class MemoryKind : uint8_t {
  Unknown = 0,   // not classified (query failed, or not applicable)
  Pageable = 1,  // cudaMemoryTypeUnregistered: malloc, new, stack, mmap, unregistered
  Pinned = 2,    // cudaMemoryTypeHost: cudaMallocHost, cudaHostAlloc, cudaHostRegister
  Device = 3,    // cudaMemoryTypeDevice
  Managed = 4,   // cudaMemoryTypeManaged
  Array = 5,     // a CUDA array (2D/3D copies)
};

enum class Direction : uint8_t {
  Unknown = 0,
  HtoD = 1,
  DtoH = 2,
  DtoD = 3,
  HtoH = 4,
  Peer = 5,  // device to device across devices
};

// How the stream argument reached the driver. Explicit streams are resolved by the analyzer
// through the StreamCreate record of that handle (blocking or cudaStreamNonBlocking).
enum class StreamKind : uint8_t {
  Unknown = 0,
  LegacyDefault = 1,     // handle 0 through a legacy entry point, or cudaStreamLegacy (0x1)
  PerThreadDefault = 2,  // handle 0 through a _ptsz/_ptds entry point, or cudaStreamPerThread (0x2)
  Explicit = 3,          // a created stream
};

// Record.flags bits.
enum RecordFlags : uint32_t {
  kFlagCaptureActive = 1u << 0,      // the stream was capturing: recorded, not executed
  kFlagEvidenceChecked = 1u << 1,    // an event was recorded after the call and queried at return
  kFlagCompletedAtReturn = 1u << 2,  // ... and the stream had already completed the work
  kFlagFirstLaunch = 1u << 3,        // first launch of this function in this process
  kFlagStackCaptured = 1u << 4,      // stack_id refers to a Stack record
  kFlagRuntimeOnly = 1u << 5,        // seen at the runtime layer only (no driver call reached)
  kFlagPerThreadEntry = 1u << 6,     // reached through a _ptsz/_ptds driver entry point
  kFlagSynchronousApi = 1u << 7,     // the API is synchronous by contract (cudaMemcpy, cuMemcpyHtoD)
};

enum class RecordType : uint16_t {
  None = 0,  // zero fill: end of the valid part of a block
  ThreadInfo = 1,
  Module = 2,
  Stack = 3,
  String = 4,
  Copy = 5,
  Memset = 6,
  Launch = 7,
  HostFuncEnqueue = 8,
  HostFuncRun = 9,
  Sync = 10,
  MemoryOp = 11,
  StreamCreate = 12,
  StreamDestroy = 13,
  Capture = 14,
  Lost = 15,
  DeviceInfo = 16,
  Count
};

struct RecordHeader {
  uint16_t type;  // RecordType
  uint16_t size;  // bytes of the whole record including this header, multiple of 8
};
static_assert(sizeof(RecordHeader) == 4);

inline constexpr uint32_t record_size_aligned(uint32_t bytes) { return (bytes + 7u) & ~7u; }

struct FileHeader {
  char magic[8];                // kMagic
  uint32_t version;             // kFormatVersion
  uint32_t header_size;         // kHeaderSize
  uint32_t block_size;          // kBlockSize
  uint32_t closed;              // kClosedCleanly after a clean close, else 0
  uint64_t pid;
  uint64_t ppid;
  uint64_t parent_pid_if_forked;  // pid of the process this one was fork()ed from while traced, else 0
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at trace open
  uint64_t start_realtime_ns;   // CLOCK_REALTIME at the same instant
  uint64_t end_monotonic_ns;    // at clean close, else 0
  uint64_t blocks_claimed;      // updated (atomically, in the mapping) as blocks are claimed
  uint64_t records_lost;        // updated atomically when a record could not be written
  int32_t exit_status;          // exit code seen at clean close (-1 unknown)
  uint32_t config_flags;        // ConfigFlags at open
  uint64_t launch_stack_threshold_ns;  // launches slower than this got a stack
  char hostname[64];
  char executable[512];         // /proc/self/exe
  char command_line[1024];      // argv joined by spaces, truncated
  char cuda_env[256];           // CUDA_LAUNCH_BLOCKING, CUDA_MODULE_LOADING, CUDA_DEVICE_MAX_CONNECTIONS
                                // as "NAME=value;..." for those set at open
  // Recording paused by the application (asyncwatch_set_recording, asyncwatch/control.h): calls
  // made while paused are not in the trace. Updated atomically in the mapping; taken from the
  // reserved bytes (version 1 readers and writers leave them zero).
  uint64_t paused_ns;           // total of the pauses that ended
  uint64_t pause_count;         // pauses begun
  uint64_t paused_since_ns;     // CLOCK_MONOTONIC start of the pause in progress, else 0
  uint8_t reserved[kHeaderSize - 8 - 4 * 4 - 8 * 8 - 4 - 4 - 8 - 64 - 512 - 1024 - 256 - 3 * 8];
};
static_assert(sizeof(FileHeader) == kHeaderSize);

enum ConfigFlags : uint32_t {
  kConfigEvidence = 1u << 0,      // completion evidence enabled
  kConfigStacksCopies = 1u << 1,  // stacks for copies, memsets, host functions
  kConfigStacksLaunches = 1u << 2,  // stacks for every launch (else only blocked ones)
  kConfigStacksSync = 1u << 3,    // stacks for sync and memory-management calls
};

struct BlockHeader {
  uint32_t magic;        // kBlockMagic
  uint32_t tid;          // kernel thread id of the owning thread
  uint64_t block_index;  // position in the file (0-based), for consistency checks
};
static_assert(sizeof(BlockHeader) == 16);

// ---- records --------------------------------------------------------------------------
// Times are CLOCK_MONOTONIC nanoseconds. blocked time = end_ns - start_ns of the call.

struct ThreadInfoRecord {  // first record a thread writes
  RecordHeader h;
  uint32_t tid;
  char name[16];  // pthread name at the time
};

struct ModuleRecord {  // variable: followed by path_len bytes of path (no NUL)
  RecordHeader h;
  uint16_t path_len;
  uint8_t build_id_len;
  uint8_t reserved;
  uint64_t load_bias;  // dlpi_addr: runtime address = file vaddr + load_bias
  uint64_t low;        // lowest mapped address of its PT_LOAD segments
  uint64_t high;       // one past the highest
  uint8_t build_id[20];
  // char path[path_len];
};

struct StackRecord {  // variable: followed by depth uint64_t return addresses, innermost first
  RecordHeader h;
  uint32_t stack_id;  // > 0
  uint32_t depth;
  // uint64_t frames[depth];
};

struct StringRecord {  // variable: interned text (kernel names); followed by len bytes
  RecordHeader h;
  uint32_t string_id;  // > 0
  uint32_t len;
};

struct CopyRecord {  // RecordType::Copy and RecordType::Memset
  RecordHeader h;
  uint16_t api;        // Api the application called
  uint16_t driver_fn;  // Api of the driver entry point reached, or Api::None
  uint8_t direction;   // Direction (Unknown for memsets)
  uint8_t src_memory;  // MemoryKind (Unknown for memsets)
  uint8_t dst_memory;  // MemoryKind
  uint8_t stream_kind; // StreamKind
  uint32_t flags;      // RecordFlags
  int32_t result;      // CUresult / cudaError_t returned to the application
  uint32_t stack_id;   // 0 = none
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t stream;     // handle value as passed
  uint64_t bytes;      // total bytes copied or set
};
static_assert(sizeof(CopyRecord) == 56);

struct LaunchRecord {
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  uint8_t stream_kind;
  uint8_t reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint32_t kernel_name_id;  // StringRecord id, 0 unknown
  uint32_t shared_mem_bytes;
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t stream;
};
static_assert(sizeof(LaunchRecord) == 80);

struct HostFuncEnqueueRecord {  // cudaStreamAddCallback / cudaLaunchHostFunc / cu*
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  uint8_t stream_kind;
  uint8_t reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint32_t reserved2;
  uint64_t callback_id;  // matches HostFuncRunRecord; unique in the process
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t stream;
  uint64_t user_function;  // address of the application's callback
};
static_assert(sizeof(HostFuncEnqueueRecord) == 72);

struct HostFuncRunRecord {  // written by the driver thread that ran the callback
  RecordHeader h;
  uint32_t reserved;
  uint64_t callback_id;
  uint64_t start_ns;
  uint64_t end_ns;
};
static_assert(sizeof(HostFuncRunRecord) == 32);

struct SyncRecord {  // stream/event/device synchronize, stream wait event, queries
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  uint8_t stream_kind;
  uint8_t reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint32_t reserved2;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t handle;  // stream or event handle, 0 for device sync
};
static_assert(sizeof(SyncRecord) == 56);

struct MemoryOpRecord {  // allocations, frees, registrations (implicit synchronization)
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  uint8_t memory;  // MemoryKind of the memory allocated/freed/registered
  uint8_t reserved[3];
  uint32_t flags;
  int32_t result;
  uint32_t stack_id;
  uint32_t alloc_flags;  // the API's flags argument (cudaHostAlloc*, cudaHostRegister*)
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t address;
  uint64_t bytes;
};
static_assert(sizeof(MemoryOpRecord) == 64);

struct StreamCreateRecord {  // also StreamDestroy (flags/priority unused)
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  int32_t result;
  uint32_t stream_flags;  // CU_STREAM_NON_BLOCKING = 1
  int32_t priority;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t stream;
};
static_assert(sizeof(StreamCreateRecord) == 48);

struct CaptureRecord {  // begin / end of stream capture
  RecordHeader h;
  uint16_t api;
  uint16_t driver_fn;
  int32_t result;
  uint32_t mode;   // CUstreamCaptureMode
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t stream;
};
static_assert(sizeof(CaptureRecord) == 40);

struct LostRecord {  // records this thread could not write (no block could be claimed)
  RecordHeader h;
  uint32_t reserved;
  uint64_t count;
};

struct DeviceInfoRecord {  // written once, on the first intercepted call after CUDA was initialized
  RecordHeader h;
  int32_t driver_version;  // cuDriverGetVersion
  int32_t device_ordinal;
  uint32_t simulated;      // 1 when the device name says it is asyncwatch's simulator
  char name[100];          // cuDeviceGetName
};

}  // namespace asyncwatch::trace
