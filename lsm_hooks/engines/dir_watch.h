/* dir_watch: an inotify watch on a database's directory that tells a refresh whether anything
 * in it may have changed since the last poll, so that a refresh with nothing new to read costs
 * one read(2) of the watch instead of reading CURRENT, the MANIFEST and the logs again.
 *
 * Why an empty poll proves that nothing changed (for the events in the watch's mask): the
 * kernel queues a file's creation, rename, write (IN_MODIFY: write(2), truncate) and, for the
 * watched directory itself, its move or removal before the call that made it returns. So a
 * write acknowledged before a poll began has its event queued before that poll reads the
 * queue. A refresh that began after poll P read every file as it was at P or later; if the
 * next poll finds the queue empty, nothing was written since P, so that refresh's state is
 * still the newest. The rule for a caller:
 *   1. poll first, then read; an event means "changed" until a refresh begun after that poll
 *      succeeds;
 *   2. a refresh that fails leaves it "changed";
 *   3. skip the refresh only when the poll found nothing and the last refresh succeeded.
 * What the queue does not order or show: a removal (unlink(2) takes the name away before it
 * queues IN_DELETE, so a reader may find a file gone before its event: the caller counts that
 * as an event of its own), writes through a shared mmap, changes made on another machine (NFS),
 * and the replacement of a directory above the watched one. An overflowed queue, a failed read
 * and no watch at all read as "changed".
 *
 * Client owns the dir_watch_t (init/release); path is borrowed and must outlive it.
 */
#ifndef BFH_LSM_HOOKS_DIR_WATCH_H
#define BFH_LSM_HOOKS_DIR_WATCH_H

#include <stdint.h>
#include <sys/inotify.h>

/* Files created, deleted or renamed in the directory: its listing. */
#define DIR_WATCH_NAMES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
/* Its listing, every write to a file in it, and the directory itself moved or removed
   (bfh_repair's exchange of a directory): its contents. */
#define DIR_WATCH_CONTENTS (DIR_WATCH_NAMES | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF)

typedef struct dir_watch {
  int fd;           /* the inotify descriptor, -1: none (every poll reads as "changed") */
  uint32_t mask;    /* DIR_WATCH_NAMES or DIR_WATCH_CONTENTS */
  const char *path; /* borrowed */
} dir_watch_t;

/* Starts a watch of path for the events of mask (best effort: without inotify, or when the
   directory cannot be watched, w->fd stays -1 and every poll says "changed"). Returns 1 with a
   watch, 0 without. */
int dir_watch_init(dir_watch_t *w, const char *path, uint32_t mask);
/* Reads every queued event: 1 if there was one (or an overflow, an error, no watch), 0 if the
   queue was empty. When the directory itself moved or went, the watch is started again on
   path (what is there now). Not thread-safe: callers hold their refresh's lock. */
int dir_watch_poll(dir_watch_t *w);
/* Stops the watch (a zeroed or released w allowed). */
void dir_watch_release(dir_watch_t *w);

#endif
