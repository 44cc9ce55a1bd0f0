/* libhetrt: the hetc runtime's C API. Load a compiled model pack, tokenize,
 * run prefill and decode steps, and sample.
 *
 * Conventions: every call that can fail returns an hetrt_status_t (HETRT_OK is
 * 0) and must be checked; results come back in trailing out_* parameters, set
 * to NULL/0 on failure; hetrt_last_error_message() then says what failed (file,
 * field and fix). Objects are opaque: the _open and _create functions return
 * a reference the caller releases with the matching _release function;
 * releasing NULL is a no-op; parameters are borrowed unless a comment says
 * otherwise. No call aborts on a caller mistake: invalid arguments are
 * reported as HETRT_INVALID_ARGUMENT.
 */
#ifndef HETRT_HETRT_H
#define HETRT_HETRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: hetrt_model_is_end_of_generation; device enumeration.
 * 3: buffers, queues and events of the device layer;
 *    hetrt_model_max_text_bytes.
 * 5: planned sessions and their device statistics.
 * 6: executables and dispatch (hetrt_executable_load, hetrt_queue_dispatch);
 *    hetrt_session_set_fixed_threads;
 *    why back ends are unavailable (hetrt_device_unavailable_count,
 *    _reason); the SPIR-V devices run (hetrt_device_spirv_info); the code
 *    and plan
 *    units of a session's devices (hetrt_device_stats_t gains code and
 *    units); hetrt_session_info; hetrt_model_token_piece;
 *    hetrt_model_describe.
 * 8: sequences over a CPU session's paged KV cache
 *    (hetrt_session_sequence_create, _fork, _remove, _prefill, _decode),
 *    a decode step of several at once (hetrt_session_decode_batch),
 *    the cache's statistics (hetrt_session_kv_stats) and prefix caching
 *    (hetrt_session_set_prefix_caching).
 * 9: hetrt_session_device_memory, hetrt_model_planned_decode_seconds.
 * 10: sequences, their KV statistics, budgets, tier format and prefix
 *    caching on every session: planned sessions and sessions on a device
 *    page their KV caches too (hetrt_session_decode_batch stays the CPU
 *    session's).
 * 11: memory spaces (hetrt_session_memory_space_count,
 *    hetrt_session_memory_space): what each holds, its budget and the
 *    copies between them; hetrt_device_memory_t gains work and budget
 *    figures, and a planned session holds no more in a device's memory
 *    than the plan gave it; hetrt_session_decode_batch on sessions on a
 *    device.
 * 12: the host's NUMA nodes as cpu0's memories (numa<N>), and the KV
 *    cache's host tier on one (hetrt_session_set_kv_budget "numa<N>");
 *    managed memory on GPUs whose driver offers it; how the tiers keep
 *    blocks (hetrt_kv_stats_t.tiers_int8), which a plan chooses;
 *    hetrt_session_decode_batch on planned sessions.
 * 13: chat prompts: the model's chat template (hetrt_model_chat_template,
 *    hetrt_chat_template_name), a conversation rendered by it
 *    (hetrt_model_render_chat), and tokenizing with the vocabulary's
 *    control tokens recognized in the text (hetrt_model_tokenize_special);
 *    the largest batch a session decodes (hetrt_session_max_batch);
 *    hetrt_kv_stats_t.tier_block_bytes. */
#define HETRT_API_VERSION 13

#if defined(__GNUC__)
#define HETRT_API __attribute__((visibility("default")))
#define HETRT_MUST_USE __attribute__((warn_unused_result))
#else
#define HETRT_API
#define HETRT_MUST_USE
#endif

typedef enum hetrt_status_t {
  HETRT_OK = 0,
  HETRT_INVALID_ARGUMENT = 1,
  HETRT_OUT_OF_MEMORY = 2,
  HETRT_UNAVAILABLE = 3,
  HETRT_IO = 4,
  HETRT_UNSUPPORTED = 5,
  HETRT_INTERNAL = 6,
} hetrt_status_t;

typedef struct hetrt_model_t hetrt_model_t;
typedef struct hetrt_session_t hetrt_session_t;
typedef struct hetrt_sampler_t hetrt_sampler_t;

/* The message of the last failed call on this thread ("" if none). Valid until
 * the next call on this thread. */
HETRT_API const char *hetrt_last_error_message(void);

/* HETRT_API_VERSION of the library, for back ends built out of tree. */
HETRT_API int hetrt_api_version(void);

/* For programs that own their process's signals (command-line tools; a
 * library host should not call it): when a model file the runtime has mapped
 * is truncated or rewritten in place by another process, the next read of it
 * raises SIGBUS. This installs a handler that prints "PROGRAM: FILE changed
 * while it was in use ..." and exits with status 1, instead of dying with no
 * word; other SIGBUS faults keep their default action. It also ignores
 * SIGXFSZ, so writes past the file-size limit fail as errors. */
HETRT_API void hetrt_install_mapped_file_fault_handler(const char *program);

/* The devices of this machine (the CPU first, then each back end's whose
 * driver is present) and their memory spaces. Strings stay valid for the
 * life of the process. */
typedef struct hetrt_device_info_t {
  const char *name;        /* "cpu0", "vulkan0": what --device names */
  const char *kind;        /* "cpu", "vulkan", "cuda", "hip" */
  const char *description; /* the hardware in words */
  int32_t memory_count;    /* memory spaces, for hetrt_device_memory_info */
} hetrt_device_info_t;

typedef struct hetrt_memory_info_t {
  const char *name;        /* "host", "device-local", ... */
  uint64_t capacity_bytes; /* 0: unknown */
  int host_visible;        /* 1 when the host reads it through a pointer */
} hetrt_memory_info_t;

HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_device_count(int32_t *out_count);
/* HETRT_INVALID_ARGUMENT for an index outside [0, count). */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_info(int32_t device_index, hetrt_device_info_t *out_info);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_memory_info(int32_t device_index, int32_t memory_index,
                         hetrt_memory_info_t *out_info);

/* The back ends compiled into the runtime that found no device, each with
 * why ("vulkan: the loader finds no Vulkan device (install a driver; ...)"),
 * so a caller can say why a device it wanted is missing. Strings stay valid
 * for the life of the process. Since API version 6. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_unavailable_count(int32_t *out_count);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_unavailable_reason(int32_t index, const char **out_reason);

/* The SPIR-V a device runs, so code can be chosen for it: the highest
 * version as major * 100 + minor (105: SPIR-V 1.5; 0: it runs none), the
 * threads of a subgroup (0: unknown), and the SPIR-V capabilities its
 * shaders may declare, by name ("Shader", "GroupNonUniformArithmetic"), for
 * hetrt_device_spirv_capability. Names stay valid for the life of the
 * process. Since API version 6. */
typedef struct hetrt_spirv_info_t {
  int32_t version;
  uint32_t subgroup_size;
  int32_t capability_count;
} hetrt_spirv_info_t;
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_spirv_info(int32_t device_index, hetrt_spirv_info_t *out_info);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_device_spirv_capability(int32_t device_index, int32_t capability_index,
                              const char **out_name);

/* The device layer: buffers in a device's memory spaces, in-order queues and
 * timeline events. Work is submitted to a queue and runs in order; the
 * submission calls check their arguments at once (HETRT_INVALID_ARGUMENT
 * with the reason) and failures while the work runs are reported by
 * hetrt_queue_finish. Events order one queue's work after another's, on one
 * device or across devices, and let the host wait. Buffers, queues and
 * events are released with their _release functions; a buffer must outlive
 * the work that uses it (hetrt_queue_finish). */
typedef struct hetrt_buffer_t hetrt_buffer_t;
typedef struct hetrt_queue_t hetrt_queue_t;
typedef struct hetrt_event_t hetrt_event_t;

/* A buffer of size bytes in memory space memory_index of a device;
 * HETRT_OUT_OF_MEMORY when the space cannot hold it. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_buffer_create(int32_t device_index, int32_t memory_index, uint64_t size,
                    hetrt_buffer_t **out_buffer);
HETRT_API void hetrt_buffer_release(hetrt_buffer_t *buffer);
/* The bytes of a buffer in a host-visible space, else NULL. */
HETRT_API void *hetrt_buffer_host_pointer(hetrt_buffer_t *buffer);

/* Code loaded on a device, ready to dispatch (pipelines are built at load).
 * Kernel i of the executable is kernels[i]: its entry point, the storage
 * buffers it binds (0..bindings-1, in dispatch order) and its bytes of push
 * constants. The device refuses code it does not run (HETRT_UNSUPPORTED)
 * or that is malformed. It must outlive the work that uses it
 * (hetrt_queue_finish). Since API version 6. */
typedef struct hetrt_executable_t hetrt_executable_t;
typedef enum hetrt_executable_format_t {
  HETRT_EXECUTABLE_SPIRV = 1,             /* a SPIR-V module (Vulkan) */
  HETRT_EXECUTABLE_X86_SHARED_OBJECT = 2, /* segment code of the x86 target */
  /* Not a format: makes every int32_t value one of the type's, so a value
     from a newer header is refused with an error rather than undefined. */
  HETRT_EXECUTABLE_FORMAT_MAX_ENUM = 0x7fffffff,
} hetrt_executable_format_t;
typedef struct hetrt_kernel_signature_t {
  const char *entry_point;
  int32_t bindings;
  uint32_t push_constant_bytes;
} hetrt_kernel_signature_t;
HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_executable_load(
    int32_t device_index, hetrt_executable_format_t format, const void *code,
    size_t code_size, const hetrt_kernel_signature_t *kernels,
    size_t kernel_count, hetrt_executable_t **out_executable);
HETRT_API void hetrt_executable_release(hetrt_executable_t *executable);

HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_create(int32_t device_index, hetrt_queue_t **out_queue);
/* Runs what is still queued, then releases the queue. */
HETRT_API void hetrt_queue_release(hetrt_queue_t *queue);
/* pattern_bytes is 1, 2 or 4; offset and size are multiples of it. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_fill(hetrt_queue_t *queue, hetrt_buffer_t *buffer, uint64_t offset,
                 uint64_t size, uint32_t pattern, int32_t pattern_bytes);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_copy(hetrt_queue_t *queue, hetrt_buffer_t *source,
                 uint64_t source_offset, hetrt_buffer_t *target,
                 uint64_t target_offset, uint64_t size);
/* Host memory into a buffer and back; the host memory must stay valid until
 * the work is done. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_write(hetrt_queue_t *queue, const void *host, hetrt_buffer_t *target,
                  uint64_t target_offset, uint64_t size);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_read(hetrt_queue_t *queue, hetrt_buffer_t *source,
                 uint64_t source_offset, void *host, uint64_t size);
/* Runs kernel kernel_index of executable (loaded on the queue's device) over
 * groups[0] x groups[1] x groups[2] workgroups, with one buffer per binding
 * of its signature and its push constants. Since API version 6. */
HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_queue_dispatch(
    hetrt_queue_t *queue, hetrt_executable_t *executable, int32_t kernel_index,
    const uint32_t groups[3], hetrt_buffer_t *const *bindings,
    size_t binding_count, const void *push_constants,
    size_t push_constant_bytes);
/* Work after a wait starts once event reaches value; a signal sets event to
 * value once the work before it is done. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_wait(hetrt_queue_t *queue, hetrt_event_t *event, uint64_t value);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_queue_signal(hetrt_queue_t *queue, hetrt_event_t *event, uint64_t value);
/* Blocks until the queue's work is done; the first failure of that work, if
 * any, with its status and message. */
HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_queue_finish(hetrt_queue_t *queue);

HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_event_create(int32_t device_index, uint64_t initial_value,
                   hetrt_event_t **out_event);
HETRT_API void hetrt_event_release(hetrt_event_t *event);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_event_value(const hetrt_event_t *event, uint64_t *out_value);
/* Sets the value from the host (never lowers it). */
HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_event_signal(hetrt_event_t *event,
                                                           uint64_t value);
/* Waits until the event reaches value or timeout_ns pass (UINT64_MAX: no
 * limit); *out_reached is 1 or 0. A queue that failed before signaling it
 * makes this fail with that queue's failure. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_event_wait(hetrt_event_t *event, uint64_t value, uint64_t timeout_ns,
                 int *out_reached);

/* Opens the pack at pack_path with the weights at weights_path (NULL: the path
 * recorded at compile time). The weights must be the exact file the pack was
 * compiled for. Fails with HETRT_IO (unreadable files), HETRT_INVALID_ARGUMENT
 * (malformed pack or model, wrong weights) or HETRT_UNSUPPORTED (no code
 * variant for this CPU). Thread-safe; the model may be shared by sessions on
 * several threads. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_open(const char *pack_path, const char *weights_path,
                 hetrt_model_t **out_model);
HETRT_API void hetrt_model_release(hetrt_model_t *model);

/* Vocabulary size, and the KV-cache capacity (the longest sequence). */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_info(const hetrt_model_t *model, int32_t *out_vocab_size,
                 int32_t *out_context_length);

/* The KV cache a session of the model allocates: its element type ("f32",
 * "f16"; the model's string, valid until it is released), the bytes of one
 * element, and the bytes of the whole cache (every layer, the full
 * capacity). Since API version 7. */
typedef struct hetrt_kv_cache_info_t {
  const char *element_type;
  int32_t element_bytes;
  uint64_t bytes_per_session;
} hetrt_kv_cache_info_t;
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_kv_cache_info(const hetrt_model_t *model,
                          hetrt_kv_cache_info_t *out_info);

/* The most text bytes max_tokens tokens can stand for (a generous bound):
 * a longer text cannot tokenize into max_tokens ids, so a caller can refuse
 * it before paying for hetrt_model_tokenize. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_max_text_bytes(const hetrt_model_t *model, uint64_t max_tokens,
                           uint64_t *out_bytes);

/* What a model is and where it comes from; the strings are the model's and
 * valid until it is released. Since API version 6. */
typedef struct hetrt_model_description_t {
  const char *architecture;  /* "llama" */
  const char *weights_path;  /* the model file the pack reads */
  const char *pack_path;
  const char *cpu_code;      /* the pack's CPU code variant this CPU runs */
  const char *plan_system;   /* the system of the pack's plan; "": none */
  int32_t vocab_size;
  int32_t context_length;
  int has_spirv;             /* 1 when it runs on Vulkan devices */
} hetrt_model_description_t;
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_describe(const hetrt_model_t *model,
                     hetrt_model_description_t *out_description);

/* The decode step the pack's plan predicts (hetc compile --system) with
 * `context` positions in the KV cache, in seconds: between its predictions
 * with an empty cache and at the context it was planned for, linearly, as
 * the cost model's attention grows. HETRT_UNSUPPORTED for a pack without a
 * plan or planned before predictions were recorded. Since API version 9. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_planned_decode_seconds(const hetrt_model_t *model,
                                   int64_t context, double *out_seconds);

/* Whether id ends a generation (EOS, end-of-turn and the like, as the
 * model's tokenizer marks them): *out_is_end is 1 or 0. An id outside the
 * vocabulary is HETRT_INVALID_ARGUMENT. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_is_end_of_generation(const hetrt_model_t *model, int32_t id,
                                 int *out_is_end);

/* Tokenizes text (text_length bytes of UTF-8), adding BOS/EOS as the model's
 * metadata says when add_special is nonzero. Writes at most capacity ids to
 * out_ids and the full count to out_count; HETRT_INVALID_ARGUMENT when the ids
 * do not fit (out_count then says how many are needed). */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_tokenize(const hetrt_model_t *model, const char *text,
                     size_t text_length, int add_special, int32_t *out_ids,
                     size_t capacity, size_t *out_count);

/* The text of ids (a leading BOS's space is dropped, as for a prompt). Writes
 * at most capacity bytes (not NUL-terminated) and the full length to
 * out_length; HETRT_INVALID_ARGUMENT when it does not fit or an id is outside
 * the vocabulary. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_detokenize(const hetrt_model_t *model, const int32_t *ids,
                       size_t count, char *out_text, size_t capacity,
                       size_t *out_length);

/* The text of one id as it continues a sequence (its piece: a leading
 * space stays), for printing tokens as they come; a piece may end inside a
 * UTF-8 character that the next completes. As hetrt_model_detokenize for
 * capacity and errors. Since API version 6. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_token_piece(const hetrt_model_t *model, int32_t id, char *out_text,
                        size_t capacity, size_t *out_length);

/* Chat prompts. A model ships its chat template as Jinja (GGUF
 * tokenizer.chat_template); the runtime recognizes the family it belongs to
 * by the markers it writes and renders a conversation as that family does.
 * Families: hetrt_chat_template_name(0..) until HETRT_INVALID_ARGUMENT
 * ("llama2", "llama3", "mistral", "chatml", "gemma", "phi3", "zephyr",
 * "deepseek"). Since API version 13. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_chat_template_name(int32_t index, const char **out_name);
/* The family of the model's own template; "" when the model ships none.
 * A template of no known family is HETRT_UNSUPPORTED, naming the families
 * to choose from. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_chat_template(const hetrt_model_t *model, const char **out_name);
typedef struct hetrt_chat_message_t {
  const char *role;    /* "system" (first only), "user" or "assistant" */
  const char *content; /* UTF-8, NUL-terminated */
} hetrt_chat_message_t;
/* The prompt text of count messages in family template_name (its BOS is
 * the tokenizer's to add: hetrt_model_tokenize_special with add_special),
 * ending with the assistant's turn opened when add_assistant is nonzero.
 * As hetrt_model_detokenize for capacity; HETRT_INVALID_ARGUMENT names an
 * unknown family or the message with a wrong role. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_render_chat(const hetrt_model_t *model, const char *template_name,
                        const hetrt_chat_message_t *messages, size_t count,
                        int add_assistant, char *out_text, size_t capacity,
                        size_t *out_length);
/* As hetrt_model_tokenize, and with parse_special nonzero the vocabulary's
 * control tokens written in the text (a chat template's turn markers) are
 * those tokens, not their characters' pieces. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_model_tokenize_special(const hetrt_model_t *model, const char *text,
                             size_t text_length, int add_special,
                             int parse_special, int32_t *out_ids,
                             size_t capacity, size_t *out_count);

/* A session: one sequence's KV cache and num_threads kernel threads (0: one
 * per core). The model must outlive it. Not thread-safe. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_create(const hetrt_model_t *model, int32_t num_threads,
                     hetrt_session_t **out_session);
/* As hetrt_session_create, on device device_index (hetrt_device_count's
 * order; 0 is the CPU). On a Vulkan device the session plays the pack's
 * SPIR-V programs (hetc compile --spirv); a pack without them fails with
 * HETRT_UNSUPPORTED, naming the fix. num_threads applies to the CPU only.
 * The session keeps the device. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_create_on_device(const hetrt_model_t *model,
                               int32_t device_index, int32_t num_threads,
                               hetrt_session_t **out_session);
/* As hetrt_session_create, over the devices of the plan the pack was
 * compiled for (hetc compile --system): the session plays the plan's
 * programs, moving activations between the devices' memories. A pack
 * without a plan fails with HETRT_UNSUPPORTED, one whose plan names a device
 * this machine lacks with HETRT_UNAVAILABLE; both name the fix. The session
 * keeps its devices. Since API version 5. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_create_planned(const hetrt_model_t *model,
                             hetrt_session_t **out_session);
/* What one device of a session has run since it was created. */
typedef struct hetrt_device_stats_t {
  const char *device_name; /* valid while the session lives */
  uint64_t dispatches;     /* kernels and segment code run on it */
  uint64_t bytes_in;       /* activations copied into its memory */
  uint64_t bytes_out;      /* and out of it */
  const char *code;        /* the code it runs: "x86 avx512", "spirv
                              subgroup" (since 6; valid as device_name) */
  int64_t units;           /* decoder units the plan puts on it; 0 outside
                              a plan (since 6) */
} hetrt_device_stats_t;
/* The memory one device of a session holds, and the weights the plan
 * streams into it (hetc compile --system with --device-memory below the
 * model): they live in another device's memory and are copied in before
 * each layer that reads them, a layer ahead, while the layer before
 * computes. Since API version 9. */
typedef struct hetrt_device_memory_t {
  uint64_t weight_bytes;   /* weights resident in its memory */
  uint64_t kv_cache_bytes; /* KV caches (a CPU session's pool) */
  uint64_t stream_buffer_bytes; /* buffers streamed weights land in */
  uint64_t work_bytes;     /* activations and parameters */
  uint64_t streamed_bytes; /* weights copied in since the session began */
  uint64_t stream_ns;      /* time those copies took */
  uint64_t stream_wait_ns; /* time the device's work waited for them: the
                              part of stream_ns not hidden behind compute */
  uint64_t steps;          /* steps (prefill chunks and decode steps) it
                              took part in */
  /* What the plan predicted the first three hold (0 outside a plan, or
   * for a pack planned without predictions). */
  uint64_t planned_weight_bytes;
  uint64_t planned_kv_cache_bytes;
  uint64_t planned_stream_buffer_bytes;
  /* Since API version 11: what the programs compute with as the plan
   * counted it, and the bytes the session may hold in the device's memory
   * (the plan's capacity for it, which --device-memory caps; 0: none). */
  uint64_t planned_work_bytes;
  uint64_t budget_bytes;
} hetrt_device_memory_t;
/* Device index's memory (index < hetrt_session_device_count). Memory read
 * in place, as the mapped model file a CPU reads, is not counted. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_device_memory(const hetrt_session_t *session, size_t index,
                            hetrt_device_memory_t *out_memory);
/* The memory spaces a session holds data in: each device's memory
 * ("vulkan0.device-local", "cpu0.host"), and the KV cache's tiers in host
 * memory and on disk ("disk"). Held bytes are by what they hold; copies
 * between spaces (weights streamed in, activations handed between devices,
 * KV blocks moved out of the pool and back) count as migrations out of one
 * and into the other. Since API version 11. */
typedef struct hetrt_memory_space_t {
  const char *name;            /* valid while the session lives */
  const char *device;          /* its device; "" for disk */
  uint64_t capacity_bytes;     /* 0: unknown */
  uint64_t budget_bytes;       /* 0: no budget but the capacity */
  uint64_t weight_bytes;       /* resident weights */
  uint64_t kv_cache_bytes;     /* the KV pool's caches */
  uint64_t stream_buffer_bytes; /* buffers streamed weights land in */
  uint64_t work_bytes;         /* activations, logits, tables, parameters */
  uint64_t kv_tier_bytes;      /* KV blocks moved out of the pool */
  uint64_t peak_bytes;         /* the most held at once */
  uint64_t migrations_in;
  uint64_t migrations_out;
  uint64_t bytes_in;
  uint64_t bytes_out;
  uint64_t wait_ns; /* time work here waited for copies into it: the
                       copying not hidden behind computing */
} hetrt_memory_space_t;
HETRT_API HETRT_MUST_USE hetrt_status_t hetrt_session_memory_space_count(
    const hetrt_session_t *session, size_t *out_count);
/* Space `index` < hetrt_session_memory_space_count, as of this call. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_memory_space(const hetrt_session_t *session, size_t index,
                           hetrt_memory_space_t *out_space);

/* What a session runs on; the strings are valid while it lives. Since API
 * version 6. */
typedef struct hetrt_session_info_t {
  const char *devices;  /* its devices joined by '+': "vulkan0+cpu0" */
  const char *system;   /* the plan's system; "" outside a plan */
  int32_t num_threads;  /* kernel threads of a CPU session; 0 otherwise */
} hetrt_session_info_t;
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_info(const hetrt_session_t *session,
                   hetrt_session_info_t *out_info);
/* The number of devices a session runs on (1 for a session on one device). */
HETRT_API size_t hetrt_session_device_count(const hetrt_session_t *session);
/* Device index's statistics (index < hetrt_session_device_count); a CPU
 * session reports no dispatches of the device layer. Since API version 5. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_device_stats(const hetrt_session_t *session, size_t index,
                           hetrt_device_stats_t *out_stats);
HETRT_API void hetrt_session_release(hetrt_session_t *session);

/* Runs count ids from the current position. *out_logits points at the last
 * token's vocab_size logits, owned by the session and valid until its next
 * call. Fails with HETRT_INVALID_ARGUMENT (an id outside the vocabulary, or
 * the context would overflow); the session is unchanged then. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_prefill(hetrt_session_t *session, const int32_t *ids,
                      size_t count, const float **out_logits);
/* Runs one id; as hetrt_session_prefill. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_decode(hetrt_session_t *session, int32_t id,
                     const float **out_logits);
/* Forgets every token. */
HETRT_API void hetrt_session_reset(hetrt_session_t *session);
/* Sequences: a session's KV cache is a pool of blocks that several
 * sequences share (hetrt_session_prefill and _decode run sequence 0, which
 * every session starts with), in the memory of the devices that read it. A new sequence is empty; a fork holds the
 * first `tokens` positions of another, sharing their blocks until either
 * writes to one (it is copied then). Removing a sequence frees the blocks
 * no other holds. Runs of a sequence fail as hetrt_session_prefill's do,
 * and also, changing nothing, when the pool has no free block for the new
 * positions (HETRT_OUT_OF_MEMORY). Since API version 8; on sessions other
 * than a CPU session's since version 10. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_create(hetrt_session_t *session, int32_t *out_sequence);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_fork(hetrt_session_t *session, int32_t from,
                            int64_t tokens, int32_t *out_sequence);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_remove(hetrt_session_t *session, int32_t sequence);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_prefill(hetrt_session_t *session, int32_t sequence,
                               const int32_t *ids, size_t count,
                               const float **out_logits);
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_decode(hetrt_session_t *session, int32_t sequence,
                              int32_t id, const float **out_logits);
/* One decode step of count sequences at once, ids[i] for sequences[i], in
 * one call of the model code (the weights are read once for the batch).
 * *out_logits points at count rows of vocab_size logits, row i the i-th
 * sequence's, valid until the session's next call. Fails as
 * hetrt_session_sequence_decode does for any of them, for a sequence given
 * twice, or when the pool cannot hold every one's blocks at once
 * (HETRT_OUT_OF_MEMORY), before running anything. A CPU session runs its
 * code's batched entry point, a session on a device its batch program (each
 * sequence's token through its own block table; at most the pack's largest
 * batch, 64 for hetc compile's packs), a planned session its plan's
 * batch program (at most the batch its memory allows; a pack planned
 * before version 12 has none: HETRT_UNSUPPORTED). Since API version 8; on
 * devices since 11, on plans since 12. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_decode_batch(hetrt_session_t *session, const int32_t *sequences,
                           const int32_t *ids, size_t count,
                           const float **out_logits);
/* The most sequences one hetrt_session_decode_batch call takes: a CPU
 * session any number (INT32_MAX), a session on a device or a plan its batch
 * program's largest batch, and 0 where the pack has no batch program (each
 * sequence then decodes alone: hetrt_session_sequence_decode). Since API
 * version 13. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_max_batch(const hetrt_session_t *session, int64_t *out_count);
/* Positions a sequence holds. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_sequence_position(const hetrt_session_t *session,
                                int32_t sequence, int64_t *out_position);
/* How a session's paged KV cache is used. Since API version 8. */
typedef struct hetrt_kv_stats_t {
  int64_t block_size;      /* positions per block */
  int64_t blocks;          /* blocks in the pool */
  int64_t free_blocks;     /* blocks a run may take (free or only cached) */
  int64_t shared_blocks;   /* blocks more than one sequence holds */
  int64_t copied_blocks;   /* shared blocks copied when written */
  int64_t cached_blocks;   /* whole blocks the prefix cache can find */
  int64_t evicted_blocks;  /* cached blocks taken back for new positions */
  int64_t reused_tokens;   /* prompt ids whose keys came from the cache */
  int64_t block_bytes;     /* every layer's keys and values of a block */
  int64_t blocks_to_host;  /* blocks moved out of the pool to host memory */
  int64_t blocks_from_host;/* and back */
  int64_t blocks_to_disk;  /* blocks moved out to the disk tier */
  int64_t blocks_from_disk;/* and back */
  int64_t host_bytes;      /* bytes the host tier holds now */
  int64_t disk_bytes;      /* bytes the disk tier holds now */
  /* Since API version 11: blocks the host and disk tiers may hold (host:
   * -1 when unbounded). A planned session's host budget is the plan's host
   * tier (het.kv_tiers) until hetrt_session_set_kv_budget changes it. */
  int64_t host_budget_blocks;
  int64_t disk_budget_blocks;
  /* Since API version 12: 1 when the host and disk tiers keep blocks as
   * int8 rows (hetrt_session_set_kv_tier_format, or a planned session's
   * plan, which chooses it where the link is the bottleneck), 0 exact. */
  int64_t tiers_int8;
  /* Since API version 13: bytes one block takes in the host and disk tiers
   * (block_bytes when exact, fewer as int8 rows), so host_bytes and
   * disk_bytes divided by it are the blocks each tier holds. */
  int64_t tier_block_bytes;
} hetrt_kv_stats_t;
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_kv_stats(const hetrt_session_t *session,
                       hetrt_kv_stats_t *out_stats);
/* What a memory may hold of a session's KV cache, in bytes (whole
 * blocks of hetrt_kv_stats_t's block_bytes): space "pool" (the pool the
 * model code reads; at most the compiled one, set before the first run),
 * "host" (blocks moved out of a full pool; unbounded by default),
 * "numa<N>" (host, held on the host's NUMA node N alone: at most half of
 * it; since API version 12, which places host by default on the node
 * without cores with the most memory, such as a CXL expander, where the
 * host has more than one node) or "disk" (a file, created in directory
 * (NULL: TMPDIR or /tmp) and unlinked at once, once host memory is full;
 * none by default). When the pool is full,
 * the blocks of the sequence that ran longest ago move out, and come back
 * before it runs again; tokens are the same. HETRT_INVALID_ARGUMENT for
 * another space or a pool of no block. Since API version 8. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_set_kv_budget(hetrt_session_t *session, const char *space,
                            uint64_t bytes, const char *directory);
/* How a session's host and disk tiers keep the blocks moved out of the
 * pool: "exact" (the default: the bytes the pool holds) or "int8" (each row
 * of a head's keys or values as int8 with an f32 scale, as FlexGen and
 * LMCache compress offloaded caches: fewer bytes to keep and move, but the
 * keys and values that come back are rounded, so the logits change a
 * little). Set before any block moves out; HETRT_INVALID_ARGUMENT for
 * another format or once blocks have moved. Since API version 8. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_set_kv_tier_format(hetrt_session_t *session, const char *format);
/* Prefix caching (on by default): a prefill whose first whole blocks of
 * ids an earlier sequence of the session computed takes their keys and
 * values instead of computing them again. Tokens are the same either way.
 * Since API version 8. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_set_prefix_caching(hetrt_session_t *session, int enabled);

/* A CPU session's decode steps choose, by measuring, between all its threads
 * and the calling thread alone (small models decode faster on one). With
 * fixed nonzero, every step uses all num_threads, as a benchmark of a thread
 * count wants; 0 restores the choice. Sessions on other devices ignore it.
 * Since API version 6. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_session_set_fixed_threads(hetrt_session_t *session, int fixed);

typedef struct hetrt_sampling_params_t {
  float temperature;        /* 0: greedy, ties to the lowest id */
  int32_t top_k;            /* 0: all tokens */
  float top_p;              /* in [0, 1]; 1: all tokens, 0: the most likely */
  float repetition_penalty; /* 1: off */
  uint64_t seed;
} hetrt_sampling_params_t;

/* A sampler; deterministic for a given seed. Not thread-safe. */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_sampler_create(const hetrt_sampling_params_t *params,
                     hetrt_sampler_t **out_sampler);
HETRT_API void hetrt_sampler_release(hetrt_sampler_t *sampler);
/* Picks a token from vocab_size logits, with the ids seen so far (history,
 * for the repetition penalty; may be NULL when history_count is 0). */
HETRT_API HETRT_MUST_USE hetrt_status_t
hetrt_sampler_sample(hetrt_sampler_t *sampler, const float *logits,
                     int32_t vocab_size, const int32_t *history,
                     size_t history_count, int32_t *out_id);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HETRT_HETRT_H */
