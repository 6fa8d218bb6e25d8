#include "image_params.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <regex>

namespace aw_sim {
namespace {

template <class T>
T read(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;         // fat binary container
constexpr uint32_t kFatbinWrapperMagic = 0x466243b1u;  // nvcc's __fatDeviceText
constexpr uint16_t kEmCuda = 190;
constexpr uint8_t kEifmtSval = 0x04, kEifmtHval = 0x03, kEifmtBval = 0x02, kEifmtNval = 0x01;
constexpr uint8_t kEiattrKparamInfo = 0x17;

// Cubin: section ".nv.info.<kernel>" holds EIATTR_KPARAM_INFO records
// {u32 index, u16 ordinal, u16 offset, u32 flags}, the parameter size in bytes in flags >> 18.
// `limit` is the image size when known (0: trust the ELF header, as cuModuleLoadData must).
void parse_elf(const unsigned char* d, size_t limit, std::map<std::string, size_t>& out) {
  if (std::memcmp(d,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      d[4] != 2 /* ELFCLASS64 */ || d[5] != 1 /* little endian */)
    return;
  if (read<uint16_t>(d + 0x12) != kEmCuda) return;
  const uint64_t shoff = read<uint64_t>(d + 0x28);
  const uint16_t shentsize = read<uint16_t>(d + 0x3a), shnum = read<uint16_t>(d + 0x3c),
                 shstrndx = read<uint16_t>(d + 0x3e);
  if (shentsize != 64 || shnum == 0 || shstrndx >= shnum) return;
  if (limit && shoff + uint64_t{shnum} * shentsize > limit) return;
  auto section = [&](unsigned i, uint64_t& off, uint64_t& size, uint32_t& name) {
    const unsigned char* h = d + shoff + uint64_t{i} * shentsize;
    name = read<uint32_t>(h);
    off = read<uint64_t>(h + 0x18);
    size = read<uint64_t>(h + 0x20);
    return !limit || (off <= limit && size <= limit - off);
  };
  uint64_t str_off, str_size;
  uint32_t unused;
  if (!section(shstrndx, str_off, str_size, unused)) return;
  const char* strtab = reinterpret_cast<const char*>(d + str_off);
  static const char kPrefix[] = ".nv.info.";
  for (unsigned i = 0; i < shnum; ++i) {
    uint64_t off, size;
    uint32_t name;
    if (!section(i, off, size, name) || name >= str_size) continue;
    const char* n = strtab + name;
    if (std::strncmp(n, kPrefix, sizeof kPrefix - 1) != 0) continue;
    const std::string kernel(n + sizeof kPrefix - 1, strnlen(n + sizeof kPrefix - 1, str_size - name));
    const unsigned char* p = d + off;
    const unsigned char* end = p + size;
    while (p + 2 <= end) {
      const uint8_t fmt = p[0], attr = p[1];
      if (fmt == kEifmtSval) {
        if (p + 4 > end) break;
        const uint16_t len = read<uint16_t>(p + 2);
        if (p + 4 + len > end) break;
        if (attr == kEiattrKparamInfo && len >= 12 && read<uint16_t>(p + 4 + 4) == 0)
          out[kernel] = read<uint32_t>(p + 4 + 8) >> 18;
        p += 4 + len;
      } else if (fmt == kEifmtHval || fmt == kEifmtBval) {
        p += 4;
      } else if (fmt == kEifmtNval) {
        p += 2;
      } else {
        break;  // unknown format: stop rather than misread
      }
    }
  }
}

// PTX: ".entry name(\n .param .u64 name_param_0, ..." (or ".param .align 8 .b8 name_param_0[8]").
// Each ".entry" is matched within a short window (std::regex over a whole module would be slow).
void parse_ptx(const char* text, size_t length, std::map<std::string, size_t>& out) {
  static const std::regex entry(
      R"(^\.entry\s+([A-Za-z_$%][\w$%]*)\s*\(\s*\.param\s+(?:\.align\s+\d+\s+)?\.[busf](\d+)\s+[\w$%]+(?:\[(\d+)\])?)");
  const std::string all(text, length);
  for (size_t at = all.find(".entry"); at != std::string::npos; at = all.find(".entry", at + 1)) {
    const std::string window = all.substr(at, 512);
    std::smatch m;
    if (!std::regex_search(window, m, entry)) continue;
    size_t bytes = std::stoul(m[2].str()) / 8;
    if (m[3].matched) bytes *= std::stoul(m[3].str());
    out.emplace(m[1].str(), bytes);
  }
}

bool looks_like_ptx(const char* text) {
  // NUL-terminated text with a ".version" directive near the top; stops at the first binary byte.
  size_t n = 0;
  for (; n < 4096 && text[n]; ++n)
    if (!std::isprint(static_cast<unsigned char>(text[n])) && !std::isspace(static_cast<unsigned char>(text[n])))
      return false;
  return std::string(text, n).find(".version") != std::string::npos;
}

// Fat binary: {u32 magic, u16 version, u16 header size, u64 payload size}, then entries
// {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 size, u32 compressed size, ..., u64 flags at
// 0x28}. Compressed entries (flag 0x2000, or a compressed size) are skipped.
void parse_fatbin(const unsigned char* d, std::map<std::string, size_t>& out) {
  const uint16_t header = read<uint16_t>(d + 6);
  const uint64_t total = read<uint64_t>(d + 8);
  const unsigned char* p = d + header;
  const unsigned char* end = d + header + total;
  while (p + 0x30 <= end) {
    const uint16_t kind = read<uint16_t>(p);
    const uint32_t entry_header = read<uint32_t>(p + 4);
    const uint64_t size = read<uint64_t>(p + 8);
    const uint32_t compressed_size = read<uint32_t>(p + 0x10);
    const uint64_t flags = read<uint64_t>(p + 0x28);
    if (entry_header < 0x30 || size > static_cast<uint64_t>(end - p) - entry_header) break;
    const unsigned char* payload = p + entry_header;
    if (!(flags & 0x2000) && compressed_size == 0) {
      if (kind == 2 && size >= 0x40) parse_elf(payload, size, out);
      if (kind == 1)
        parse_ptx(reinterpret_cast<const char*>(payload), strnlen(reinterpret_cast<const char*>(payload), size), out);
    }
    p = payload + size;
  }
}

}  // namespace

std::map<std::string, size_t> first_param_sizes(const void* image) {
  std::map<std::string, size_t> out;
  if (!image) return out;
  const auto* d = static_cast<const unsigned char*>(image);
  uint32_t magic = read<uint32_t>(d);
  if (magic == kFatbinWrapperMagic) {  // {int magic, int version, const unsigned long long* data, void*}
    d = read<const unsigned char*>(d + 8);
    if (!d) return out;
    magic = read<uint32_t>(d);
  }
  if (magic == kFatbinMagic) {
    parse_fatbin(d, out);
  } else if (std::memcmp(d,
                         "\x7f"
                         "ELF",
                         4) == 0) {
    parse_elf(d, 0, out);
  } else if (looks_like_ptx(reinterpret_cast<const char*>(d))) {
    const char* text = reinterpret_cast<const char*>(d);
    parse_ptx(text, std::strlen(text), out);
  }
  return out;
}

}  // namespace aw_sim
