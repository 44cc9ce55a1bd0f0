/* A C client of libhetrt's sequences: one session, one paged KV pool.
 * Usage: hetrt-capi-sequences PACK PROMPT COUNT [DEVICE [HOST_TIER]]
 * (DEVICE: hetrt_device_count's index of the device the sessions run on,
 * the CPU by default, or "plan": sessions of the pack's plan.)
 * Generates COUNT greedy ids three ways over one pool: the session's first
 * sequence; a fork of its prompt but the last id; a new sequence, decoded in
 * turns with the fork. Prints each, the pool's statistics, and the statuses
 * of a full pool and of a sequence that does not exist. Then three
 * sequences in turns over a pool of one block, with room for one more in
 * host memory and the rest on disk (in TMPDIR): every step moves blocks
 * out and back, and each sequence's ids must still be the first's. */
#include "check.h"
#include "hetrt/hetrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t greedy(const float *logits, int32_t vocab) {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

/* A session on device `device`, or of the pack's plan where it is -1. */
static hetrt_status_t createSession(hetrt_model_t *model, int32_t device,
                                    hetrt_session_t **out) {
  return device < 0 ? hetrt_session_create_planned(model, out)
                    : hetrt_session_create_on_device(model, device, 0, out);
}

static void print(const char *name, const int32_t *ids, int count) {
  printf("%s:", name);
  for (int i = 0; i < count; ++i)
    printf(" %d", ids[i]);
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: %s PACK PROMPT COUNT [DEVICE [HOST_TIER]]\n",
            argv[0]);
    return 2;
  }
  int32_t device = argc < 5                      ? 0
                   : strcmp(argv[4], "plan") == 0 ? -1
                                                  : atoi(argv[4]);
  /* The memory the tiered session's host tier holds its blocks in: "host",
   * or a NUMA node ("numa0"). */
  const char *hostTier = argc == 6 ? argv[5] : "host";
  int count = atoi(argv[3]);
  if (count < 1 || count > 1024) {
    fprintf(stderr, "COUNT must be in [1, 1024]\n");
    return 2;
  }
  hetrt_model_t *model = NULL;
  hetrt_session_t *session = NULL;
  int32_t vocab = 0, context = 0;
  int32_t ids[1024];
  size_t numIds = 0;
  if (!check(hetrt_model_open(argv[1], NULL, &model), "hetrt_model_open") ||
      !check(hetrt_model_info(model, &vocab, &context), "hetrt_model_info") ||
      !check(hetrt_model_tokenize(model, argv[2], strlen(argv[2]), 1, ids,
                                  1024, &numIds),
             "hetrt_model_tokenize") ||
      !check(createSession(model, device, &session), "createSession"))
    return 1;

  const float *logits = NULL;
  int32_t first[1024], forked[1024], fresh[1024];
  if (!check(hetrt_session_prefill(session, ids, numIds, &logits),
             "hetrt_session_prefill"))
    return 1;
  for (int i = 0; i < count; ++i) {
    first[i] = greedy(logits, vocab);
    if (i + 1 < count && !check(hetrt_session_decode(session, first[i], &logits),
                                "hetrt_session_decode"))
      return 1;
  }
  print("first", first, count);

  int32_t fork = -1, other = -1;
  if (!check(hetrt_session_sequence_fork(session, 0, (int64_t)numIds - 1, &fork),
             "hetrt_session_sequence_fork") ||
      !check(hetrt_session_sequence_create(session, &other),
             "hetrt_session_sequence_create"))
    return 1;
  /* The fork runs the prompt's last id; the new sequence the whole prompt. */
  if (!check(hetrt_session_sequence_prefill(session, fork, ids + numIds - 1, 1,
                                            &logits),
             "hetrt_session_sequence_prefill"))
    return 1;
  forked[0] = greedy(logits, vocab);
  if (!check(hetrt_session_sequence_prefill(session, other, ids, numIds,
                                            &logits),
             "hetrt_session_sequence_prefill"))
    return 1;
  fresh[0] = greedy(logits, vocab);
  for (int i = 1; i < count; ++i) {
    if (!check(hetrt_session_sequence_decode(session, fork, forked[i - 1],
                                             &logits),
               "hetrt_session_sequence_decode"))
      return 1;
    forked[i] = greedy(logits, vocab);
    if (!check(hetrt_session_sequence_decode(session, other, fresh[i - 1],
                                             &logits),
               "hetrt_session_sequence_decode"))
      return 1;
    fresh[i] = greedy(logits, vocab);
  }
  print("forked", forked, count);
  print("fresh", fresh, count);

  /* Two new sequences decoded together, one call per step. */
  int32_t pair[2];
  static int32_t batched[2][1024];
  for (int s = 0; s < 2; ++s) {
    if (!check(hetrt_session_sequence_create(session, &pair[s]),
               "hetrt_session_sequence_create") ||
        !check(hetrt_session_sequence_prefill(session, pair[s], ids, numIds,
                                              &logits),
               "hetrt_session_sequence_prefill"))
      return 1;
    batched[s][0] = greedy(logits, vocab);
  }
  for (int i = 1; i < count; ++i) {
    int32_t next[2] = {batched[0][i - 1], batched[1][i - 1]};
    if (!check(hetrt_session_decode_batch(session, pair, next, 2, &logits),
               "hetrt_session_decode_batch"))
      return 1;
    batched[0][i] = greedy(logits, vocab);
    batched[1][i] = greedy(logits + vocab, vocab);
  }
  print("batched", batched[1], count);
  printf("batch rows agree: %s\n",
         memcmp(batched[0], batched[1], sizeof(int32_t) * (size_t)count) == 0
             ? "yes"
             : "no");
  int64_t maxBatch = 0;
  if (!check(hetrt_session_max_batch(session, &maxBatch),
             "hetrt_session_max_batch"))
    return 1;
  printf("max batch: %lld\n", (long long)maxBatch);
  for (int s = 0; s < 2; ++s)
    if (!check(hetrt_session_sequence_remove(session, pair[s]),
               "hetrt_session_sequence_remove"))
      return 1;
  int64_t position = 0;
  if (!check(hetrt_session_sequence_position(session, fork, &position),
             "hetrt_session_sequence_position"))
    return 1;
  printf("fork position: %lld\n", (long long)position);

  hetrt_kv_stats_t stats;
  if (!check(hetrt_session_kv_stats(session, &stats), "hetrt_session_kv_stats"))
    return 1;
  printf("kv: %lld blocks of %lld, %lld free, %lld copied\n",
         (long long)stats.blocks, (long long)stats.block_size,
         (long long)stats.free_blocks, (long long)stats.copied_blocks);

  /* With no tier to move blocks out to, new sequences until the pool has
   * no block for one more. */
  if (!check(hetrt_session_set_kv_budget(session, "host", 0, NULL),
             "hetrt_session_set_kv_budget"))
    return 1;
  int32_t sequence = -1;
  hetrt_status_t status = HETRT_OK;
  for (int64_t i = 0; i <= stats.blocks && status == HETRT_OK; ++i) {
    if (!check(hetrt_session_sequence_create(session, &sequence),
               "hetrt_session_sequence_create"))
      return 1;
    status = hetrt_session_sequence_prefill(session, sequence, ids, numIds,
                                            &logits);
  }
  printf("full pool: status %d: %s\n", (int)status, hetrt_last_error_message());
  status = hetrt_session_sequence_remove(session, 12345);
  printf("no sequence: status %d: %s\n", (int)status,
         hetrt_last_error_message());
  hetrt_session_release(session);

  hetrt_session_t *tiered = NULL;
  /* Exact tiers (a plan may keep int8 rows), so the ids must match. */
  if (!check(createSession(model, device, &tiered), "createSession") ||
      !check(hetrt_session_set_kv_tier_format(tiered, "exact"),
             "hetrt_session_set_kv_tier_format") ||
      !check(hetrt_session_set_kv_budget(tiered, "pool",
                                         (uint64_t)stats.block_bytes, NULL),
             "hetrt_session_set_kv_budget") ||
      !check(hetrt_session_set_kv_budget(tiered, hostTier,
                                         (uint64_t)stats.block_bytes, NULL),
             "hetrt_session_set_kv_budget") ||
      !check(hetrt_session_set_kv_budget(tiered, "disk",
                                         16 * (uint64_t)stats.block_bytes,
                                         NULL),
             "hetrt_session_set_kv_budget"))
    return 1;
  enum { kTiered = 3 };
  int32_t sequences[kTiered];
  static int32_t tieredIds[kTiered][1024];
  for (int s = 0; s < kTiered; ++s) {
    if (!check(hetrt_session_sequence_create(tiered, &sequences[s]),
               "hetrt_session_sequence_create") ||
        !check(hetrt_session_sequence_prefill(tiered, sequences[s], ids,
                                              numIds, &logits),
               "hetrt_session_sequence_prefill"))
      return 1;
    tieredIds[s][0] = greedy(logits, vocab);
  }
  for (int i = 1; i < count; ++i)
    for (int s = 0; s < kTiered; ++s) {
      if (!check(hetrt_session_sequence_decode(tiered, sequences[s],
                                               tieredIds[s][i - 1], &logits),
                 "hetrt_session_sequence_decode"))
        return 1;
      tieredIds[s][i] = greedy(logits, vocab);
    }
  int agree = 1;
  for (int s = 0; s < kTiered; ++s)
    agree &= memcmp(tieredIds[s], first, sizeof(int32_t) * (size_t)count) == 0;
  if (!check(hetrt_session_kv_stats(tiered, &stats), "hetrt_session_kv_stats"))
    return 1;
  printf("tiered: %s; moved to host %s, to disk %s, back from both %s\n",
         agree ? "every sequence gives the first's ids" : "ids differ",
         stats.blocks_to_host > 0 ? "yes" : "no",
         stats.blocks_to_disk > 0 ? "yes" : "no",
         stats.blocks_from_host > 0 && stats.blocks_from_disk > 0 ? "yes"
                                                                   : "no");
  /* The same moves as memory spaces: each block moved counts once out of
   * one space and once into another, a block's bytes each; the pool's
   * space sent out every block that left the pool, and disk took the
   * blocks moved to it. */
  size_t spaceCount = 0;
  if (!check(hetrt_session_memory_space_count(tiered, &spaceCount),
             "hetrt_session_memory_space_count"))
    return 1;
  uint64_t moves = (uint64_t)(stats.blocks_to_host + stats.blocks_to_disk +
                              stats.blocks_from_host + stats.blocks_from_disk);
  uint64_t in = 0, out = 0, bytesIn = 0, poolOut = 0, diskIn = 0;
  uint64_t hostTierIn = 0;
  for (size_t i = 0; i < spaceCount; ++i) {
    hetrt_memory_space_t space;
    if (!check(hetrt_session_memory_space(tiered, i, &space),
               "hetrt_session_memory_space"))
      return 1;
    in += space.migrations_in;
    out += space.migrations_out;
    bytesIn += space.bytes_in;
    if (space.kv_cache_bytes > 0)
      poolOut = space.migrations_out;
    if (strcmp(space.name, "disk") == 0)
      diskIn = space.migrations_in;
    if (strncmp(space.name, "cpu0.", 5) == 0 &&
        strcmp(space.name + 5, hostTier) == 0)
      hostTierIn = space.migrations_in;
  }
  printf("spaces: every move in and out once %s, a block each %s; the pool "
         "sent out what left it %s; disk took its blocks %s\n",
         in == moves && out == moves ? "yes" : "no",
         bytesIn == moves * (uint64_t)stats.block_bytes ? "yes" : "no",
         poolOut >= (uint64_t)(stats.blocks_to_host + stats.blocks_to_disk)
             ? "yes"
             : "no",
         diskIn == (uint64_t)stats.blocks_to_disk ? "yes" : "no");
  /* Host memory also holds a CPU session's pool, which takes blocks back;
   * a NUMA node holds the tier alone. */
  int onNode = strcmp(hostTier, "host") != 0;
  printf("host tier: cpu0.%s took its blocks %s%s\n", hostTier,
         hostTierIn >= (uint64_t)stats.blocks_to_host &&
                 stats.blocks_to_host > 0
             ? "yes"
             : "no",
         !onNode ? ""
         : hostTierIn == (uint64_t)stats.blocks_to_host
             ? ", and only them"
             : ", and more");
  hetrt_session_release(tiered);
  /* The tiers' format is a name; another is refused. */
  hetrt_session_t *named = NULL;
  if (!check(createSession(model, device, &named), "createSession"))
    return 1;
  status = hetrt_session_set_kv_tier_format(named, "int4");
  printf("tier format: status %d: %s\n", (int)status,
         hetrt_last_error_message());
  if (!check(hetrt_session_set_kv_tier_format(named, "int8"),
             "hetrt_session_set_kv_tier_format"))
    return 1;
  hetrt_session_release(named);
  hetrt_model_release(model);
  return 0;
}
