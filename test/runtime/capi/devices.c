/* A C client of the device layer through libhetrt's public API only: on
 * every device, a buffer is written from the host, filled, copied and read
 * back, one queue waits on another through an event, and a bad request is a
 * status with a message. Prints one line per device and check. */
#include "check.h"
#include "hetrt/hetrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exercise(int32_t device) {
  hetrt_device_info_t info;
  if (!check(hetrt_device_info(device, &info), "hetrt_device_info"))
    return 0;
  enum { kSize = 4096 };
  hetrt_buffer_t *a = NULL, *b = NULL;
  hetrt_queue_t *producer = NULL, *consumer = NULL;
  hetrt_event_t *ready = NULL;
  unsigned char host[kSize], back[kSize];
  for (int i = 0; i < kSize; ++i)
    host[i] = (unsigned char)(i * 7 + 3);
  int ok = check(hetrt_buffer_create(device, 0, kSize, &a), "buffer a") &&
           check(hetrt_buffer_create(device, 0, kSize, &b), "buffer b") &&
           check(hetrt_queue_create(device, &producer), "producer") &&
           check(hetrt_queue_create(device, &consumer), "consumer") &&
           check(hetrt_event_create(device, 0, &ready), "event");
  /* The consumer's copy waits for the producer's write and fill. */
  ok = ok && check(hetrt_queue_wait(consumer, ready, 1), "wait") &&
       check(hetrt_queue_copy(consumer, a, 0, b, 0, kSize), "copy") &&
       check(hetrt_queue_read(consumer, b, 0, back, kSize), "read") &&
       check(hetrt_queue_write(producer, host, a, 0, kSize), "write") &&
       check(hetrt_queue_fill(producer, a, 1024, 1024, 0xABCD, 2), "fill") &&
       check(hetrt_queue_signal(producer, ready, 1), "signal") &&
       check(hetrt_queue_finish(consumer), "finish") &&
       check(hetrt_queue_finish(producer), "finish");
  if (ok) {
    int same = 1;
    for (int i = 0; i < kSize; ++i) {
      unsigned char want =
          i >= 1024 && i < 2048 ? (unsigned char)(i % 2 ? 0xAB : 0xCD) : host[i];
      same &= back[i] == want;
    }
    uint64_t value = 0;
    int reached = 0;
    ok = check(hetrt_event_value(ready, &value), "value") &&
         check(hetrt_event_wait(ready, 1, UINT64_MAX, &reached), "event wait");
    printf("%s: copy after event: %s (event %llu, reached %d)\n", info.name,
           same ? "bytes match" : "BYTES DIFFER", (unsigned long long)value,
           reached);
    ok = ok && same;
  }
  /* Bad requests are statuses with messages, and leave the queue usable. */
  hetrt_status_t status = hetrt_queue_fill(producer, a, 4000, 200, 0, 1);
  printf("%s: fill past the end: status %d: %s\n", info.name, (int)status,
         hetrt_last_error_message());
  hetrt_buffer_t *huge = NULL;
  status = hetrt_buffer_create(device, 0, UINT64_MAX / 2, &huge);
  printf("%s: huge buffer: status %d, buffer %s\n", info.name, (int)status,
         huge ? "made" : "none");
  hetrt_event_release(ready);
  hetrt_queue_release(consumer);
  hetrt_queue_release(producer);
  hetrt_buffer_release(b);
  hetrt_buffer_release(a);
  return ok;
}

int main(void) {
  int32_t count = 0;
  if (!check(hetrt_device_count(&count), "hetrt_device_count"))
    return 1;
  int ok = 1;
  for (int32_t d = 0; d < count; ++d)
    ok &= exercise(d);
  hetrt_buffer_t *none = NULL;
  hetrt_status_t status = hetrt_buffer_create(count, 0, 16, &none);
  printf("device %d: status %d: %s\n", (int)count, (int)status,
         hetrt_last_error_message());
  return ok ? 0 : 1;
}
