#include "kernel_model.h"

#include <cctype>
#include <cstring>
#include <set>

#include "host_wait.h"
#include "image_params.h"
#include "sim_config.h"

namespace aw_sim {
namespace {

std::mutex& handles_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::set<const void*>& module_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}
std::set<const void*>& function_handles() {
  static auto* s = new std::set<const void*>();
  return *s;
}

// Reads one <source-name> (<length><identifier>) at `pos`; returns false if there is none.
bool read_source_name(const std::string& s, size_t& pos, std::string& out) {
  if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos]))) return false;
  size_t len = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])))
    len = len * 10 + static_cast<size_t>(s[pos++] - '0');
  if (pos + len > s.size()) return false;
  out = s.substr(pos, len);
  pos += len;
  return true;
}

}  // namespace

MangledKernelName parse_mangled_name(const std::string& name) {
  MangledKernelName out;
  if (name.compare(0, 2, "_Z") != 0) {
    out.identifier = name;  // extern "C" kernel: no parameter information
    return out;
  }
  size_t pos = 2;
  std::string part;
  if (pos < name.size() && name[pos] == 'N') {  // nested name: N <names> E
    ++pos;
    while (pos < name.size() && name[pos] != 'E') {
      if (!read_source_name(name, pos, part)) return out;  // templates etc.: leave unknown
      out.identifier = part;
    }
    ++pos;
  } else {
    if (!read_source_name(name, pos, part)) return out;
    out.identifier = part;
  }
  if (pos < name.size() && name[pos] != 'I') out.first_param = name[pos];
  return out;
}

SimFunction* SimModule::get_or_create(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = functions[name];
  if (!slot) {
    slot = std::make_unique<SimFunction>();
    slot->mangled_name = name;
    MangledKernelName parsed = parse_mangled_name(name);
    slot->plain_name = parsed.identifier.empty() ? name : parsed.identifier;
    if (name.compare(0, 2, "_Z") == 0) {
      slot->first_param_is_int64 = std::strchr("xlym", parsed.first_param ? parsed.first_param : '?') != nullptr;
    } else {
      // extern "C": no types in the name; a sleep kernel only if the image says the first
      // parameter is 8 bytes. Unknown (no image information): not a sleep kernel.
      auto size = first_param_size.find(name);
      slot->first_param_is_int64 = size != first_param_size.end() && size->second == 8;
    }
    slot->is_sleep_kernel =
        slot->first_param_is_int64 && std::regex_search(slot->plain_name, config().sleep_kernel_regex);
    slot->module = this;
    // Under CUDA_MODULE_LOADING=EAGER the module was loaded as a whole: no first-launch cost.
    slot->load_state = config().eager_loading ? SimFunction::kLoaded : SimFunction::kNotLoaded;
    std::lock_guard<std::mutex> hl(handles_mutex());
    function_handles().insert(slot.get());
  }
  return slot.get();
}

SimModule* create_module(const void* image) {
  auto* m = new SimModule();
  m->first_param_size = first_param_sizes(image);
  std::lock_guard<std::mutex> lock(handles_mutex());
  module_handles().insert(m);
  return m;
}

bool destroy_module(SimModule* m) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex());
    if (!module_handles().erase(m)) return false;
    for (auto& kv : m->functions) function_handles().erase(kv.second.get());
  }
  delete m;
  return true;
}

bool is_module(const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mutex());
  return module_handles().count(handle) != 0;
}

bool is_function(const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mutex());
  return function_handles().count(handle) != 0;
}

void ensure_loaded(SimFunction& f) {
  int state = f.load_state.load();
  if (state == SimFunction::kLoaded) return;
  if (state == SimFunction::kNotLoaded && f.load_state.compare_exchange_strong(state, SimFunction::kLoading)) {
    busy_wait_until(now_ns() + config().lazy_load_ns);
    f.load_state = SimFunction::kLoaded;
    return;
  }
  spin_until([&] { return f.load_state.load() == SimFunction::kLoaded; });
}

uint64_t kernel_duration_ns(const SimFunction& f, void** params) {
  const SimConfig& c = config();
  auto it = c.kernel_times_ns.find(f.mangled_name);
  if (it == c.kernel_times_ns.end()) it = c.kernel_times_ns.find(f.plain_name);
  if (it != c.kernel_times_ns.end()) return it->second;
  if (f.is_sleep_kernel && params && params[0]) {
    int64_t cycles = 0;
    std::memcpy(&cycles, params[0], sizeof cycles);
    if (cycles <= 0) return 0;
    return static_cast<uint64_t>(static_cast<double>(cycles) / c.clock_hz * 1e9);
  }
  return c.kernel_ns;
}

}  // namespace aw_sim
