// hidden-sync: a stream, event or device synchronize that the user's code did not write: it was
// reached from inside a framework or vendor library (PyTorch's `loss.item()`, `t.cpu()`, `print(t)`,
// `torch.nonzero`, a library that waits for its own work), reported at the user's line with what it
// waited for. The calls are explicit-sync's (its detect sees them); analysis.cpp re-labels a group
// once its call site is known (is_hidden_sync).
#include "findings/hidden_sync.h"

#include "report/format.h"
#include "symbols/names.h"
#include "findings/rules.h"

#include <algorithm>
#include <fmt/compile.h>
#include <fmt/format.h>

namespace asyncwatch::rules {

namespace {

std::string base_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// Frames that carry a call the user wrote to CUDA without adding anything of their own.
bool is_forwarding_frame(const Frame& f) {
  if (f.origin == FrameOrigin::Interpreter) return true;
  if (f.origin == FrameOrigin::Python) return false;
  std::string base = base_of(f.module);
  return base.rfind("libffi", 0) == 0 || base.rfind("_ctypes", 0) == 0;
}

bool same_frame(const Frame& a, const Frame& b) {
  return a.origin == b.origin && a.address == b.address && a.function == b.function && a.file == b.file &&
         a.line == b.line;
}

std::string waited_words(const Finding& f) {
  if (f.waited_for.empty()) return "the work queued before it";
  std::vector<std::pair<std::string, uint64_t>> k = most_first(f.waited_for);
  std::string out = k.size() == 1 ? "kernel " : "kernels ";
  for (size_t i = 0; i < k.size() && i < 4; ++i) {
    if (i) out += ", ";
    out += shorten_middle(k[i].first, kDisplayNameMax);
  }
  if (k.size() > 4) out += fmt::format(FMT_COMPILE(" and {} more"), k.size() - 4);
  return "the stream (" + out + ")";
}

// The library frame nearest the call site: what the user called that synchronized.
std::string inside_words(const Finding& f) {
  const Frame* lib = nullptr;
  for (const Frame& fr : f.stack) {
    if (same_frame(fr, f.call_site)) break;
    if (classify_frame(fr) == FrameKind::Library && !is_forwarding_frame(fr)) lib = &fr;
  }
  if (!lib) return "a library";
  if (lib->origin == FrameOrigin::Python)
    return fmt::format(FMT_COMPILE("{} ({})"), shorten_middle(lib->function, kDisplayNameMax), base_of(lib->file));
  return frame_name_text(*lib);
}

bool detect(RuleContext&, const RuleEvent&) { return false; }  // explicit-sync's calls, re-labelled

std::string message(const Finding& f) {
  return fmt::format(
      FMT_COMPILE("{} waited {} ({}, max {}) inside {}, for {}: a synchronization this line did not write; "
                  "the framework copied a result to the host or waited for its own work here (e.g. .item(), "
                  ".cpu(), .tolist(), printing a tensor, a data-dependent shape)"),
      f.api, total_time_words(f), plural(f.count, "call", "calls"), format_duration(f.blocked.max()), inside_words(f),
      waited_words(f));
}

}  // namespace

// A library function whose job is to wait (torch.cuda.synchronize, Stream.synchronize,
// Event.synchronize, cupy's and numba's synchronize, jax's block_until_ready): a call of it is
// a synchronization the user wrote.
bool is_waiting_function(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return n.find("synchronize") != std::string::npos || n.find("block_until_ready") != std::string::npos;
}

bool is_hidden_sync(const Finding& f, const CallSitePolicy& policy, bool driver_call) {
  if (!f.call_site_known || !f.call_site_is_user_code || f.stack.empty()) return false;
  // The synchronization ran on a thread without Python (a framework's own), for the line of the
  // thread it was borrowed from: that line never wrote it, unless that thread was waiting in a
  // function whose job is to wait (JAX's block_until_ready, whose wait XLA's own threads make):
  // then it is the user's explicit wait, at the user's line.
  if (f.python_lender) {
    const Frame* waiting_in = nullptr;  // the library Python frame nearest the call site
    for (const Frame& fr : f.stack) {
      if (same_frame(fr, f.call_site)) break;
      if (fr.origin == FrameOrigin::Python && classify_frame(fr, policy) == FrameKind::Library) waiting_in = &fr;
    }
    return !(waiting_in && is_waiting_function(waiting_in->function));
  }
  const Frame* called = nullptr;  // the library frame nearest the user's: what the user called
  bool python_library = false;    // a library Python frame lies between the runtime and the call site
  for (const Frame& fr : f.stack) {
    if (same_frame(fr, f.call_site)) {
      if (!called) return false;
      // A waiting function named in the trace (a Python frame); a native frame's name is the
      // analyzing machine's reading of a module, which another machine may not have.
      if (called->origin == FrameOrigin::Python && is_waiting_function(called->function)) return false;
      if (driver_call && f.call_site.origin == FrameOrigin::Python && !python_library) return false;
      return true;
    }
    if (classify_frame(fr, policy) == FrameKind::Library && !is_forwarding_frame(fr)) {
      called = &fr;
      python_library = python_library || fr.origin == FrameOrigin::Python;
    }
  }
  return false;  // the call site is not in the stack (cannot happen): not hidden
}

// Every site is reported, however short its waits (a synchronization by contract: a loop pays it
// each step); analysis.cpp makes a site whose waits total less than --min-blocked-us a note.
const Rule hidden_sync = Rule(Trigger::Sync, detect, message).time_is("waited");

}  // namespace asyncwatch::rules
