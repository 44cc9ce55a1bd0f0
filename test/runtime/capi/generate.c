/* A C client of libhetrt: greedy generation through the public API only.
 * Usage: hetrt-capi-generate PACK PROMPT COUNT
 * Prints the prompt ids, then the generated ids, then the generated text. */
#include "check.h"
#include "hetrt/hetrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PACK PROMPT COUNT\n", argv[0]);
    return 2;
  }
  int count = atoi(argv[3]);
  hetrt_model_t *model = NULL;
  if (!check(hetrt_model_open(argv[1], NULL, &model), "hetrt_model_open"))
    return 1;
  int32_t vocab = 0, context = 0;
  if (!check(hetrt_model_info(model, &vocab, &context), "hetrt_model_info"))
    return 1;
  hetrt_kv_cache_info_t kv;
  if (!check(hetrt_model_kv_cache_info(model, &kv), "hetrt_model_kv_cache_info"))
    return 1;
  printf("kv cache: %s, %d bytes per element, %llu bytes\n", kv.element_type,
         kv.element_bytes, (unsigned long long)kv.bytes_per_session);
  if (hetrt_model_kv_cache_info(model, NULL) != HETRT_INVALID_ARGUMENT) {
    fprintf(stderr, "a NULL kv cache info was not rejected\n");
    return 1;
  }
  int32_t ids[4096];
  size_t numIds = 0;
  if (!check(hetrt_model_tokenize(model, argv[2], strlen(argv[2]), 1, ids,
                                  4096, &numIds),
             "hetrt_model_tokenize"))
    return 1;
  hetrt_session_t *session = NULL;
  hetrt_sampler_t *sampler = NULL;
  hetrt_sampling_params_t greedy = {0.0f, 0, 1.0f, 1.0f, 0};
  if (!check(hetrt_session_create(model, 0, &session), "hetrt_session_create") ||
      !check(hetrt_sampler_create(&greedy, &sampler), "hetrt_sampler_create") ||
      /* Every step on all threads: the same tokens, decided otherwise. */
      !check(hetrt_session_set_fixed_threads(session, 1),
             "hetrt_session_set_fixed_threads"))
    return 1;
  if (hetrt_session_set_fixed_threads(NULL, 1) != HETRT_INVALID_ARGUMENT) {
    fprintf(stderr, "a NULL session was not rejected\n");
    return 1;
  }
  printf("prompt:");
  for (size_t i = 0; i < numIds; ++i)
    printf(" %d", ids[i]);
  printf("\n");
  const float *logits = NULL;
  if (!check(hetrt_session_prefill(session, ids, numIds, &logits),
             "hetrt_session_prefill"))
    return 1;
  int32_t generated[4096];
  printf("generated:");
  for (int i = 0; i < count && i < 4096; ++i) {
    if (!check(hetrt_sampler_sample(sampler, logits, vocab, NULL, 0,
                                    &generated[i]),
               "hetrt_sampler_sample"))
      return 1;
    printf(" %d", generated[i]);
    if (i + 1 < count &&
        !check(hetrt_session_decode(session, generated[i], &logits),
               "hetrt_session_decode"))
      return 1;
  }
  printf("\n");
  char text[65536];
  size_t length = 0;
  if (!check(hetrt_model_detokenize(model, generated, (size_t)count, text,
                                    sizeof(text), &length),
             "hetrt_model_detokenize"))
    return 1;
  printf("text: %.*s\n", (int)length, text);
  /* A caller mistake is a status, never a crash. */
  if (hetrt_session_decode(session, vocab + 5, &logits) != HETRT_INVALID_ARGUMENT ||
      logits != NULL) {
    fprintf(stderr, "an out-of-vocabulary id was not rejected\n");
    return 1;
  }
  printf("bad id: %s\n", hetrt_last_error_message());
  hetrt_sampler_release(sampler);
  hetrt_session_release(session);
  hetrt_model_release(model);
  return 0;
}
