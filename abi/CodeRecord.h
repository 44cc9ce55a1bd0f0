// The record that generated model code carries of what it was compiled for:
// the kernel ABI version and the shapes its entry points assume. The compiler
// writes it into the code (hetc-x86-export-entries); the runtime reads it
// before running anything and refuses a manifest that disagrees, since a
// wrong shape would make the code read and write outside its buffers.
#ifndef HETC_ABI_CODERECORD_H
#define HETC_ABI_CODERECORD_H

#include <cstdint>

namespace hetrt::format {

/// Version of the calling convention between generated code and the runtime:
/// the entry arguments' order and descriptors (a KV cache is
/// [2, kvHeads, capacity, headDim] since version 6; a paged model's entry
/// points take a block table before the caches since version 7; the
/// batched decode entry since version 8), the runtime interface, the
/// buffer-allocator table. Bumped on any change to one of them.
inline constexpr int64_t kKernelAbiVersion = 8;

/// The exported symbol of the record: an array of kCodeRecordLength int64
/// values, indexed by CodeRecordField.
inline constexpr const char *kCodeRecordSymbol = "hetc_code_record";

/// The exported symbol naming the CPU features the code's instructions use:
/// a NUL-terminated, comma-separated list of the names CpuFeatures.h knows
/// ("avx512f,avx512bw,..."). The runtime checks the host against it, not
/// only against the manifest, so a manifest that understates what the code
/// needs is refused instead of faulting on an illegal instruction.
inline constexpr const char *kCodeRequiresSymbol = "hetc_code_requires";

/// The entry points every model code exports: one-pointer wrappers named
/// by this prefix and the entry function. They are fixed by this ABI: a
/// manifest naming others does not describe code this runtime can call.
inline constexpr const char *kEntryWrapperPrefix = "hetc_entry_";
inline constexpr const char *kPrefillEntrySymbol = "hetc_entry_prefill";
inline constexpr const char *kDecodeEntrySymbol = "hetc_entry_decode";
/// A decode step of several sequences, one token each: tokens and positions
/// [n], block tables [n, blocks] (a row per sequence), the caches, and the
/// logits [n, vocab] of every token.
inline constexpr const char *kDecodeBatchEntrySymbol =
    "hetc_entry_decode_batch";

/// Segment entry points: the code the x86 target compiles for the CPU
/// segments of a partitioned model (a program's dispatches on the CPU). Each
/// exports, beside its wrapper, a constant int64 array named by this prefix
/// and the entry's name that describes the buffers it takes, so the runtime
/// checks a program's bindings against the code itself: the count, then per
/// binding its kind (SegmentBindingKind), element bytes, rank and sizes
/// (-1 for a dynamic size, which the dispatch gives).
inline constexpr const char *kSegmentSignaturePrefix = "hetc_signature_";
/// The function attribute that makes a function a segment entry point.
inline constexpr const char *kSegmentEntryAttrName = "hetc.segment_entry";
enum class SegmentBindingKind : int64_t {
  /// An activation, a KV cache, token ids or positions, the logits.
  Tensor = 0,
  /// The model file's tensor data, read at compiled offsets; its size is
  /// the bound buffer's.
  ModelWeights = 1,
};
/// Bindings one segment entry may take (far past any segment's).
inline constexpr int64_t kMaxSegmentBindings = 256;

/// The module attribute through which the compiler hands the model file's
/// hash (16 hex digits) to the pass that writes the record.
inline constexpr const char *kModelHashAttrName = "hetc.model_hash";
/// The function attribute (an i64) of an entry point whose KV caches are
/// pools of blocks of this many slots (het-page-kv-cache), and the argument
/// attribute of its block table.
inline constexpr const char *kKvBlockSizeAttrName = "hetc.kv_block_size";
/// Positions of a KV block as hetc compiles, plans and runs caches: a whole
/// step of the CPU's tiled attention (64 keys), so each step reads one
/// contiguous block, and the unit the planner counts KV memory in.
inline constexpr int64_t kDefaultKvBlockSize = 64;
inline constexpr const char *kKvBlockTableAttrName = "hetc.kv_block_table";

/// "HETCREC1" read as a little-endian int64: tells a record from other bytes.
inline constexpr int64_t kCodeRecordMagic = 0x3143455243544548;

enum CodeRecordField : int {
  CodeRecordMagic = 0,
  CodeRecordAbiVersion,
  /// Columns of the logits the entry points write.
  CodeRecordVocabSize,
  /// KV caches the entry points take: one per layer.
  CodeRecordNumLayers,
  CodeRecordNumKvHeads,
  CodeRecordHeadDim,
  /// Slots each KV cache holds: positions, or blocks times the block size
  /// of a paged cache.
  CodeRecordContextLength,
  /// Bytes of one KV-cache element.
  CodeRecordKvElementBytes,
  /// XXH3-64 of the model file whose weights the code reads at the offsets
  /// it was compiled with (the manifest's weights.xxh3), as an int64; code
  /// from another model's pack must not read this one's weights.
  CodeRecordModelHash,
  /// Slots of a KV block: the entry points take a block table and each
  /// cache is a pool of blocks. 0: a cache's slot is the position.
  CodeRecordKvBlockSize,
  kCodeRecordLength,
};

} // namespace hetrt::format

#endif // HETC_ABI_CODERECORD_H
