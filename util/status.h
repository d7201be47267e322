/* Status codes of the internal modules (util, filters, hierarchy, lsm).
 *
 * Every internal function that can fail returns one of these, with a message in the
 * caller's err_t (util/err.h). include/bfh.h publishes the same values under BFH_ names
 * (BFH_OK, BFH_E_CORRUPT, ...); api/api.c checks at compile time that the two agree,
 * so a status travels from the engine to bfh_last_error() unchanged.
 */
#ifndef BFH_UTIL_STATUS_H
#define BFH_UTIL_STATUS_H

enum {
  ST_OK = 0,
  ST_NOT_FOUND = 1,     /* no live value for the key */
  ST_E_INVALID = -1,    /* bad argument, option or directory */
  ST_E_IO = -2,         /* a system call failed */
  ST_E_CORRUPT = -3,    /* checksum or format violation in a file */
  ST_E_NOMEM = -4,      /* out of memory */
  ST_E_BUSY = -5,       /* the database is locked by another process or handle */
  ST_E_UNSUPPORTED = -6 /* not available on this engine or build */
};

#endif
