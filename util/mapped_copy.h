/* mapped_copy: copy bytes out of a file mapping without dying if the file shrank.
 *
 * A page of a mapping that lies past the end of its file (the file was truncated after it
 * was mapped) raises SIGBUS when touched. mapped_copy touches a mapping only inside a guard:
 * a SIGBUS taken there is caught and the copy fails, cleanly. LevelDB reads its tables
 * through a mapping without such a guard; RocksDB's allow_mmap_reads too.
 *
 * The guard is one SIGBUS handler for the process, installed at the first call
 * (mapped_copy_ready). It takes only a fault of a thread that is inside mapped_copy; any
 * other SIGBUS goes to the disposition the process had before, so a program's own handler
 * still runs, and with none the process ends as it would have. A handler the program installs
 * after that replaces the guard: a truncation then reaches that handler. */
#ifndef BFH_UTIL_MAPPED_COPY_H
#define BFH_UTIL_MAPPED_COPY_H

#include <stddef.h>

/* Installs the guard (once per process; thread-safe). 1 when it is in place, 0 if the
   system refused it; then do not read through a mapping. */
int mapped_copy_ready(void);

/* Copies n bytes from src, inside a mapping, to dst (not inside one). 0, or -1 if a page of
   src is no longer backed by its file: dst then holds part of the bytes. Call
   mapped_copy_ready first. Async-signal-safe it is not; thread-safe it is. */
int mapped_copy(void *dst, const void *src, size_t n);

#endif
