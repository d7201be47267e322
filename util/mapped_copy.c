/* The SIGBUS guard of util/mapped_copy.h.
 *
 * Each thread has a jump buffer pointer, set only for the duration of a copy. The handler
 * jumps back to the copy's sigsetjmp when it is set and otherwise hands the signal on: to the
 * handler the process had before (called as the kernel would), or, when that was the
 * default or ignore, by putting the default back and returning, so that the faulting access
 * runs again and takes the default action (a synchronous SIGBUS cannot be ignored).
 *
 * sigsetjmp saves no signal mask (that would be a system call per copy): the handler is
 * installed with SA_NODEFER, so SIGBUS is not blocked while it runs and nothing is left
 * blocked by the jump out of it. */
#include "util/mapped_copy.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static _Thread_local sigjmp_buf *volatile guard;
static struct sigaction prior;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int installed;

static void on_sigbus(int sig, siginfo_t *info, void *ctx) {
  sigjmp_buf *jb = guard;
  if (jb) {
    guard = NULL;
    siglongjmp(*jb, 1);
  }
  if (prior.sa_flags & SA_SIGINFO) {
    if (prior.sa_sigaction) {
      prior.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (prior.sa_handler != SIG_DFL && prior.sa_handler != SIG_IGN) {
    prior.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  installed = sigaction(SIGBUS, &sa, &prior) == 0;
}

int mapped_copy_ready(void) {
  pthread_once(&once, install);
  return installed;
}

int mapped_copy(void *dst, const void *src, size_t n) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 0)) return -1; /* the handler cleared guard */
  guard = &jb;
  atomic_signal_fence(memory_order_seq_cst);
  memcpy(dst, src, n);
  atomic_signal_fence(memory_order_seq_cst);
  guard = NULL;
  return 0;
}
