/* What the C clients of libhetrt do with a status: 1 when it is HETRT_OK;
 * else 0, after printing the call that failed, the status and the
 * library's message on stderr. */
#ifndef HETRT_TEST_CAPI_CHECK_H
#define HETRT_TEST_CAPI_CHECK_H

#include "hetrt/hetrt.h"

#include <stdio.h>

static inline int check(hetrt_status_t status, const char *what) {
  if (status == HETRT_OK)
    return 1;
  fprintf(stderr, "%s failed (status %d): %s\n", what, (int)status,
          hetrt_last_error_message());
  return 0;
}

#endif /* HETRT_TEST_CAPI_CHECK_H */
