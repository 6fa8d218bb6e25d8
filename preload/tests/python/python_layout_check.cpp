// python_layout_check PROBE MINOR: runs PROBE (layout_probe.c compiled against CPython 3.MINOR's
// headers) and compares each "name value" line it prints with python_layout.h's table for 3.MINOR.
// Every field of the table must be printed with the same value, and nothing else printed.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "stacks/python_layout.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: python_layout_check PROBE MINOR\n");
    return 2;
  }
  const auto* layout = asyncwatch::python_layout::find(static_cast<unsigned>(std::atoi(argv[2])));
  if (!layout) {
    std::fprintf(stderr, "no layout for CPython 3.%s in python_layout.h\n", argv[2]);
    return 1;
  }
  FILE* probe = popen(argv[1], "r");
  if (!probe) {
    std::perror(argv[1]);
    return 1;
  }
  std::map<std::string, unsigned long> printed;
  char name[128];
  unsigned long value;
  while (std::fscanf(probe, "%127s %lu", name, &value) == 2) printed[name] = value;
  if (pclose(probe) != 0) {
    std::fprintf(stderr, "%s failed\n", argv[1]);
    return 1;
  }
  int wrong = 0, compared = 0;
  asyncwatch::python_layout::for_each_field(*layout, [&](const char* field, unsigned offset) {
    auto it = printed.find(field);
    if (offset == asyncwatch::python_layout::kAbsent) {
      if (it != printed.end()) {
        std::printf("%s: the headers have it (%lu), the table says absent\n", field, it->second);
        ++wrong;
        printed.erase(it);
      }
      return;
    }
    if (it == printed.end()) {
      std::printf("%s: in the table (%u), not in the headers\n", field, offset);
      ++wrong;
    } else if (it->second != offset) {
      std::printf("%s: headers %lu, table %u\n", field, it->second, offset);
      ++wrong;
    } else {
      ++compared;
    }
    printed.erase(field);
  });
  for (auto& [field, v] : printed) {
    std::printf("%s: printed by the probe (%lu), not in the table\n", field.c_str(), v);
    ++wrong;
  }
  std::printf("CPython 3.%u: %d fields match the headers, %d differ\n", layout->minor, compared, wrong);
  return wrong ? 1 : 0;
}
