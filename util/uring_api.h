/* liburing's API, bound at the first batch of reads rather than linked (util/dynlib.h): a
 * process that never searches by blocks never maps it, and a machine without the library (or
 * a kernel that refuses io_uring, as some containers' seccomp profiles do) reads one pread at
 * a time instead (util/env.c, env_read_batch). The helpers liburing.h defines inline
 * (io_uring_get_sqe, io_uring_prep_read, io_uring_for_each_cqe, io_uring_cq_advance) need no
 * binding; the names below are the table's pointers. */
#ifndef BFH_UTIL_URING_API_H
#define BFH_UTIL_URING_API_H

#include <liburing.h>

#include "util/dynlib.h"

#define URING_API_FUNCTIONS(X, P) X(P, queue_init) X(P, queue_exit) X(P, submit_and_wait)

typedef DYNLIB_TABLE(URING_API_FUNCTIONS, io_uring) uring_api_fns_t;

extern uring_api_fns_t uring_api;

/* Binds liburing once per process (dynlib_bind): ST_OK, or ST_E_UNSUPPORTED naming the
   library and its Debian package. */
int uring_api_bind(err_t *err);

#define io_uring_queue_init uring_api.f.queue_init
#define io_uring_queue_exit uring_api.f.queue_exit
#define io_uring_submit_and_wait uring_api.f.submit_and_wait

#endif
