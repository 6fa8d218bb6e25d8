// The C++ runtime's per-thread exception state (__cxa_get_globals), defined here instead of taken
// from the static libstdc++ (eh_globals.o). Its copy keeps the state in a general-dynamic TLS
// variable, reached through __tls_get_addr, which only ld.so defines: that one reference made ld.so
// a DT_NEEDED of the library, and a preloaded library's dependencies enter the global scope right
// after the program's own, ahead of the libraries the program reached through its dependencies,
// so every later symbol lookup searched one object more (docs/performance.md, "The library's
// dependencies in the global scope"). Initial-exec TLS, as the rest of the library's
// (common.h, AW_TLS), needs no call. Being defined, the archive's member is not linked.
#include <cxxabi.h>

namespace {

// The Itanium C++ ABI's __cxa_eh_globals on x86-64 (libsupc++'s unwind-cxx.h): zero per thread.
struct EhGlobals {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};
__attribute__((tls_model("initial-exec"))) thread_local EhGlobals tl_eh_globals;

}  // namespace

namespace __cxxabiv1 {

extern "C" __cxa_eh_globals* __cxa_get_globals() noexcept {
  return reinterpret_cast<__cxa_eh_globals*>(&tl_eh_globals);
}

extern "C" __cxa_eh_globals* __cxa_get_globals_fast() noexcept {
  return reinterpret_cast<__cxa_eh_globals*>(&tl_eh_globals);
}

}  // namespace __cxxabiv1
