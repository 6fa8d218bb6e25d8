// Stacks to call sites (symbolized once, after the pass), and the names of kernels.
#include "findings/process_analyzer.h"

#include "symbols/names.h"

namespace asyncwatch::analysis {

uint32_t ProcessAnalyzer::intern_name(const std::string& name) {
  auto [it, inserted] = name_ids_.emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

SiteRef ProcessAnalyzer::site_of(uint32_t stack_id, uint32_t kernel_id) {
  if (!stack_id) return {};
  const bool plain = kernel_id == 0 || kernel_id == kGraphKernel;
  if (plain && stack_id < dense_sites_.size() && dense_sites_[stack_id].resolved) return dense_sites_[stack_id].ref;
  const uint64_t cache_key = plain ? stack_id : (uint64_t{kernel_id} << 32) | stack_id;
  auto it = stack_sites_.find(cache_key);
  if (it != stack_sites_.end()) return it->second;
  SiteRef ref;
  if (const Stack* stack = stack_of(stack_id)) {
    const std::vector<Frame>& frames = stack->frames();  // inline frames expanded, Python frames in place
    std::string kernel_function;
    if (!plain)
      if (auto mangled = trace_.string(kernel_id)) kernel_function = demangle(mangled->c_str());
    CallSite cs = select_call_site(frames, kernel_function, policy_);
    ref.chevron_launch = cs.chevron_launch;
    if (cs.index >= 0) {
      Site site;
      site.frame = frames[static_cast<size_t>(cs.index)];
      if (cs.via >= 0) {
        // The library function the user's call instruction called, read from the module's
        // file: it may have tail-called onwards, leaving no frame of its own.
        const Frame& lib = frames[static_cast<size_t>(cs.via)];
        site.via =
            cs.user && site.frame.origin == FrameOrigin::Native && lib.address != site.frame.address
                ? via_function(site.frame, lib, symbols_->called_function(site.frame.address, lib.module), policy_)
                : lib;
      }
      site.user = cs.user;
      // A Python line read from another thread (the call ran on a thread without Python frames,
      // or on one Python did not create whose own frames hold no user code): kept apart from the
      // same line's own calls, and from other lenders' (the report names it).
      if (site.frame.origin == FrameOrigin::Python && site.frame.borrowed)
        site.python_lender = trace_.python_lender(stack_id);
      // Its neighbour in the stack is the outermost frame of the native thread (start_thread,
      // clone3), not a function the line called.
      if (site.python_lender) site.via = Frame{};
      site.framework_phase = framework_phase(frames);
      std::string key = call_site_key(site.frame, site.via);
      if (site.python_lender) key += fmt::format("\037borrowed {:x}", site.python_lender);
      if (site.framework_phase) key += std::string("\037phase ") + site.framework_phase;
      auto [sit, inserted] = site_ids_.emplace(key, static_cast<uint32_t>(sites_.size()));
      if (inserted) sites_.push_back(std::move(site));
      ref.site = sit->second;
    }
    if (!cs.runtime_api.empty()) ref.api_override = intern_name(cs.runtime_api);
  }
  if (plain && stack_id < (1u << 20)) {
    if (stack_id >= dense_sites_.size()) dense_sites_.resize(std::max<size_t>(stack_id + 1, dense_sites_.size() * 2));
    dense_sites_[stack_id] = DenseSite{ref, true};
  } else {
    stack_sites_.emplace(cache_key, ref);
  }
  return ref;
}

const Stack* ProcessAnalyzer::stack_of(uint32_t stack_id) {
  auto [it, inserted] = stacks_.try_emplace(stack_id);
  if (inserted)
    if (auto frames = stack_frames(trace_, *symbols_, *python_, stack_id)) it->second = Stack(std::move(*frames));
  return it->second ? &*it->second : nullptr;
}

const std::string& ProcessAnalyzer::kernel_name(uint32_t id) {
  auto [it, inserted] = kernel_names_.try_emplace(id);
  if (inserted) {
    if (id == 0)
      it->second = "(unnamed kernel)";
    else if (id == kGraphKernel)
      it->second = "(CUDA graph)";
    else if (auto s = trace_.string(id))
      it->second = kernel_display_name(*s);
    else
      it->second = fmt::format("(kernel #{})", id);
  }
  return it->second;
}

}  // namespace asyncwatch::analysis
