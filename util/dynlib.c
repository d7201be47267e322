/* dynlib: see dynlib.h. */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* pthread_once takes no argument: the library being bound is handed over in a thread-local,
 * set by the caller of pthread_once just before. */
static _Thread_local dynlib_t *binding;

static void bind_once(void) {
  dynlib_t *lib = binding;
  void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(lib->why, sizeof lib->why, "%s", dlerror());
    lib->status = ST_E_UNSUPPORTED;
    return;
  }
  for (size_t i = 0; i < lib->count; i++) {
    lib->fns[i] = dlsym(h, lib->names[i]);
    if (!lib->fns[i]) {
      snprintf(lib->why, sizeof lib->why, "no symbol %s", lib->names[i]);
      lib->status = ST_E_UNSUPPORTED;
      return; /* h stays loaded: unloading a C++ library is not safe */
    }
  }
  lib->status = ST_OK;
}

int dynlib_bind(dynlib_t *lib, err_t *err) {
  binding = lib;
  pthread_once(&lib->once, bind_once);
  if (lib->status != ST_OK)
    return err_set(err, lib->status, "%s (Debian package %s): %s", lib->soname, lib->package,
                   lib->why);
  return ST_OK;
}
