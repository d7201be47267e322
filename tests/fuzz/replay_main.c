/* fuzz replay driver: calls a fuzz target's LLVMFuzzerTestOneInput on every file named on
 * the command line (a directory: on every file in it), without libFuzzer, so that the
 * regression inputs in tests/fuzz/regress/<target>/ run under ctest in every build, with
 * any compiler. A target reports a finding by crashing (or a sanitizer report in a
 * sanitizer build); this driver fails if no input was given or one cannot be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *p = realloc(buf, cap *= 2);
      if (!p) free(buf);
      buf = p;
    }
  }
  int bad = !buf || ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    return -1;
  }
  /* An exact-size copy, so that a read past the input is caught by ASan. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

int main(int argc, char **argv) {
  long inputs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(sb.st_mode)) {
      if (run_file(argv[i]) < 0) return 1;
      inputs++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) return 1;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (run_file(path) < 0) {
        closedir(d);
        return 1;
      }
      inputs++;
    }
    closedir(d);
  }
  printf("replay: %ld inputs, no finding\n", inputs);
  return inputs > 0 ? 0 : 1;
}
