/* dir_watch: see dir_watch.h for why an empty poll proves that nothing changed. */
#include "lsm_hooks/engines/dir_watch.h"

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

static int start(dir_watch_t *w) {
  w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd < 0) return 0;
  if (inotify_add_watch(w->fd, w->path, w->mask) < 0) {
    close(w->fd);
    w->fd = -1;
    return 0;
  }
  return 1;
}

int dir_watch_init(dir_watch_t *w, const char *path, uint32_t mask) {
  *w = (dir_watch_t){.fd = -1, .mask = mask, .path = path};
  return start(w);
}

int dir_watch_poll(dir_watch_t *w) {
  if (w->fd < 0) return 1;
  /* Events, not a path: a read returns whole events, as many as fit (each at most
     sizeof(struct inotify_event) + NAME_MAX + 1 bytes), and the loop reads until none is left. */
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  int any = 0, moved = 0;
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    any = 1;
    if (n <= 0) { /* an error reading the events: assume a change, and every one after it */
      moved = 1;
      break;
    }
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)) moved = 1;
      p += sizeof *ev + ev->len;
    }
  }
  if (moved) { /* the watch no longer sees what lies at path: watch that */
    close(w->fd);
    (void)start(w);
  }
  return any;
}

void dir_watch_release(dir_watch_t *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
}
