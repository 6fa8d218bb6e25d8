/* A statically linked program for the e2e tests: the dynamic loader never runs, so LD_PRELOAD
 * (libasyncwatch.so included) is ignored by construction. It says whether anything named
 * libasyncwatch is mapped into it, echoes its arguments and exits with status 4. */
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int mapped = 0;
  char line[4096];
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) return 9;
  while (fgets(line, sizeof line, maps))
    if (strstr(line, "libasyncwatch")) mapped = 1;
  fclose(maps);
  printf("static app: %d arguments:", argc - 1);
  for (int i = 1; i < argc; ++i) printf(" %s", argv[i]);
  printf("\nlibasyncwatch mapped: %s\n", mapped ? "yes" : "no");
  return 4;
}
