// Writing synthetic models: the metadata llama.cpp's llama and qwen2
// architectures read, a synthetic SPM vocabulary, and weights from a seeded
// generator, quantized
// with the same reference quantizers llama.cpp uses.
#include "hetc/Synth/SyntheticModel.h"

#include "abi/BlockFormats.h"
#include "runtime/format/GgufWriter.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/Quantize.h"
#include "runtime/tokenizer/SyntheticVocab.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/statvfs.h>
#include <thread>
#include <vector>

namespace hetc::synth {

using hetrt::format::BlockFormat;

bool parseWeightType(const std::string &name, WeightType &type) {
  if (name == "f32")
    type = WeightType::F32;
  else if (name == "f16")
    type = WeightType::F16;
  else if (name == "bf16")
    type = WeightType::BF16;
  else if (name == "q8_0")
    type = WeightType::Q8_0;
  else if (name == "q4_0")
    type = WeightType::Q4_0;
  else if (name == "q2_k")
    type = WeightType::Q2_K;
  else if (name == "q3_k_m")
    type = WeightType::Q3_K_M;
  else if (name == "q4_k_m")
    type = WeightType::Q4_K_M;
  else if (name == "q5_k_m")
    type = WeightType::Q5_K_M;
  else
    return false;
  return true;
}

namespace {

/// A small, fast, well-mixed generator (splitmix64), seeded per tensor so a
/// tensor's values do not depend on the others'.
class Generator {
public:
  explicit Generator(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float uniform() {
    return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-52 -
                              1.0);
  }

private:
  uint64_t state_;
};

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", bytes / double(1 << 30));
  return text;
}

uint64_t hashName(const std::string &name, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  for (char c : name)
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

/// The storage of a matrix named `name` under `type`.
BlockFormat formatFor(WeightType type, const std::string &name) {
  switch (type) {
  case WeightType::F32:
    return BlockFormat::F32;
  case WeightType::F16:
    return BlockFormat::F16;
  case WeightType::BF16:
    return BlockFormat::BF16;
  case WeightType::Q8_0:
    return BlockFormat::Q8_0;
  case WeightType::Q4_0:
    return BlockFormat::Q4_0;
  case WeightType::Q2_K:
  case WeightType::Q3_K_M:
  case WeightType::Q4_K_M:
  case WeightType::Q5_K_M: {
    bool output = name == "output.weight";
    bool sensitive = name.find("attn_v.weight") != std::string::npos ||
                     name.find("ffn_down.weight") != std::string::npos;
    if (output)
      return BlockFormat::Q6_K;
    switch (type) {
    case WeightType::Q2_K:
      return sensitive ? BlockFormat::Q3_K : BlockFormat::Q2_K;
    case WeightType::Q3_K_M:
      if (name.find("attn_output.weight") != std::string::npos)
        return BlockFormat::Q4_K;
      return sensitive ? BlockFormat::Q5_K : BlockFormat::Q3_K;
    case WeightType::Q5_K_M:
      return sensitive ? BlockFormat::Q6_K : BlockFormat::Q5_K;
    default:
      return sensitive ? BlockFormat::Q6_K : BlockFormat::Q4_K;
    }
  }
  }
  return BlockFormat::F32;
}

class ModelWriter {
public:
  ModelWriter(const SyntheticModelSpec &spec) : spec_(spec) {}

  /// Adds a [rows x columns] tensor (GGUF dims {columns, rows}) of values with
  /// standard deviation `scale` around `center`, stored as `format`.
  bool addTensor(const std::string &name, int64_t rows, int64_t columns,
                 BlockFormat format, float center, float scale,
                 std::string &error) {
    std::optional<int64_t> rowBytes =
        hetrt::format::storageBytes(format, columns);
    if (!rowBytes) {
      error = "tensor \"" + name + "\" has rows of " + std::to_string(columns) +
              " elements, not a multiple of the " +
              std::string(hetrt::format::blockLayout(format).name) +
              " block size " +
              std::to_string(hetrt::format::blockLayout(format).blockSize) +
              "; choose dimensions that are multiples of it";
      return false;
    }
    // Norm weights and biases are vectors; everything else a matrix.
    std::vector<int64_t> dims = {columns};
    bool vector = rows == 1 && (name.find("norm") != std::string::npos ||
                                name.find(".bias") != std::string::npos);
    if (!vector)
      dims.push_back(rows);
    uint64_t seed = hashName(name, spec_.seed);
    int64_t bytesPerRow = *rowBytes;
    // Rows are generated and quantized as the file is written, a batch at a
    // time: a model larger than memory streams to disk. The values come
    // from one generator in row order; the rows of a batch are quantized on
    // all cores (the K-quant reference quantizers search each block's
    // scales: about 4 MB/s on one core), each on its own, so the bytes do
    // not depend on the thread count.
    writer_.addTensor(
        name, dims, format, static_cast<uint64_t>(bytesPerRow * rows),
        [=](const std::function<void(std::string_view)> &sink, std::string &) {
          Generator generator(seed);
          // Uniform on [-a, a] has standard deviation a / sqrt(3).
          float amplitude = scale * std::sqrt(3.0f);
          constexpr int64_t kBatchElements = int64_t(1) << 20;
          int64_t batchRows = std::clamp<int64_t>(kBatchElements / columns, 1, rows);
          std::vector<float> values(static_cast<size_t>(batchRows * columns));
          std::vector<uint8_t> stored(static_cast<size_t>(batchRows * bytesPerRow));
          int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
          for (int64_t first = 0; first < rows; first += batchRows) {
            int64_t count = std::min(batchRows, rows - first);
            for (int64_t i = 0; i < count * columns; ++i)
              values[i] = center + amplitude * generator.uniform();
            auto quantizeRows = [&](int64_t begin, int64_t end) {
              for (int64_t r = begin; r < end; ++r)
                hetrt::format::quantizeRow(format, values.data() + r * columns,
                                           columns,
                                           stored.data() + r * bytesPerRow);
            };
            int64_t workers = std::min(threads, count);
            if (hetrt::format::blockLayout(format).blockSize > 1 && workers > 1) {
              std::vector<std::thread> pool;
              for (int64_t w = 1; w < workers; ++w)
                pool.emplace_back(quantizeRows, count * w / workers,
                                  count * (w + 1) / workers);
              quantizeRows(0, count / workers);
              for (std::thread &worker : pool)
                worker.join();
            } else {
              quantizeRows(0, count);
            }
            sink(std::string_view(reinterpret_cast<const char *>(stored.data()),
                                  static_cast<size_t>(count * bytesPerRow)));
          }
          return true;
        });
    return true;
  }

  hetrt::format::GgufWriter &writer() { return writer_; }

private:
  const SyntheticModelSpec &spec_;
  hetrt::format::GgufWriter writer_;
};

} // namespace

bool checkSyntheticModelSpec(const SyntheticModelSpec &spec,
                             std::string &error) {
  // Bounds past every released model keep the sizes' products in range.
  auto inRange = [&](int64_t value, const char *flag, int64_t limit,
                     int64_t low = 1) {
    if (value >= low && value <= limit)
      return true;
    error = std::string("--") + flag + " " + std::to_string(value) +
            " is outside [" + std::to_string(low) + ", " +
            std::to_string(limit) + "]";
    return false;
  };
  if (!inRange(spec.dim, "dim", 65536) || !inRange(spec.layers, "layers", 1024) ||
      !inRange(spec.heads, "heads", 1024) ||
      !inRange(spec.kvHeads, "kv-heads", 1024) ||
      !inRange(spec.ffnDim, "ffn", 1 << 20) ||
      !inRange(spec.vocabSize, "vocab", 1 << 20,
               hetrt::tokenizer::kMinimumSyntheticVocab) ||
      !inRange(spec.contextLength, "context", INT32_MAX))
    return false;
  hetrt::format::ModelFloatRange ropeRange = hetrt::format::kRopeBaseRange;
  if (!(spec.ropeBase >= ropeRange.low && spec.ropeBase <= ropeRange.high)) {
    error = "--rope-base " + hetrt::format::readableNumber(spec.ropeBase) +
            " is outside " + hetrt::format::readableNumber(ropeRange.low) +
            " to " + hetrt::format::readableNumber(ropeRange.high) +
            " (10000 is Llama 2's)";
    return false;
  }
  // qwen2 is llama with Q/K/V biases and NeoX RoPE; the synthetic vocabulary
  // serves both.
  if (spec.architecture != "llama" && spec.architecture != "qwen2") {
    error = "--arch " + spec.architecture +
            " is not supported (choose llama or qwen2)";
    return false;
  }
  if (spec.dim % spec.heads != 0) {
    error = "--dim (" + std::to_string(spec.dim) +
            ") must be a multiple of --heads (" + std::to_string(spec.heads) +
            ")";
    return false;
  }
  if (spec.heads % spec.kvHeads != 0) {
    error = "--heads (" + std::to_string(spec.heads) +
            ") must be a multiple of --kv-heads (" +
            std::to_string(spec.kvHeads) + ")";
    return false;
  }
  int64_t headDim = spec.dim / spec.heads;
  if (headDim % 2 != 0) {
    error = "--dim / --heads (" + std::to_string(headDim) +
            ") must be even for rotary embeddings";
    return false;
  }
  if (spec.vocabSize > INT32_MAX) {
    error = "--vocab is too large";
    return false;
  }
  // Every matrix row is dim or ffn elements long (attn_output's is heads x
  // head_dim = dim), and must hold whole blocks of the weight type.
  for (const char *name : {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"}) {
    BlockFormat format = formatFor(spec.weightType, name);
    int64_t block = hetrt::format::blockLayout(format).blockSize;
    for (auto [flag, value] : {std::pair<const char *, int64_t>{"dim", spec.dim},
                               {"ffn", spec.ffnDim}}) {
      if (value % block == 0)
        continue;
      error = std::string("--") + flag + " " + std::to_string(value) +
              " is not a multiple of the " +
              std::string(hetrt::format::blockLayout(format).name) +
              " block size " + std::to_string(block) +
              " that --type needs; choose a multiple of it, or another --type";
      return false;
    }
  }
  return true;
}

bool writeSyntheticModel(const SyntheticModelSpec &spec,
                         const std::string &path, std::string &error) {
  if (!checkSyntheticModelSpec(spec, error))
    return false;
  int64_t headDim = spec.dim / spec.heads;

  ModelWriter model(spec);
  hetrt::format::GgufWriter &writer = model.writer();
  const std::string &arch = spec.architecture;
  writer.addString("general.architecture", arch);
  writer.addString("general.name", "hetc synthetic " + arch);
  writer.addU32(arch + ".context_length",
                static_cast<uint32_t>(spec.contextLength));
  writer.addU32(arch + ".embedding_length", static_cast<uint32_t>(spec.dim));
  writer.addU32(arch + ".block_count", static_cast<uint32_t>(spec.layers));
  writer.addU32(arch + ".feed_forward_length",
                static_cast<uint32_t>(spec.ffnDim));
  writer.addU32(arch + ".attention.head_count",
                static_cast<uint32_t>(spec.heads));
  writer.addU32(arch + ".attention.head_count_kv",
                static_cast<uint32_t>(spec.kvHeads));
  writer.addU32(arch + ".rope.dimension_count", static_cast<uint32_t>(headDim));
  writer.addF32(arch + ".rope.freq_base", spec.ropeBase);
  writer.addF32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  if (!hetrt::tokenizer::writeSyntheticSpmVocab(
          writer, static_cast<int32_t>(spec.vocabSize), error)) {
    error = "--vocab: " + error;
    return false;
  }

  WeightType type = spec.weightType;
  auto matrix = [&](const std::string &name, int64_t rows, int64_t columns) {
    return model.addTensor(name, rows, columns, formatFor(type, name), 0.0f,
                           1.0f / std::sqrt(static_cast<float>(columns)),
                           error);
  };
  auto norm = [&](const std::string &name) {
    return model.addTensor(name, 1, spec.dim, BlockFormat::F32, 1.0f, 0.05f,
                           error);
  };
  bool biases = arch == "qwen2";
  auto bias = [&](const std::string &name, int64_t size) {
    return !biases ||
           model.addTensor(name, 1, size, BlockFormat::F32, 0.0f, 0.1f, error);
  };
  int64_t kvDim = spec.kvHeads * headDim;
  // Embedding rows of unit scale, as trained models roughly have.
  if (!model.addTensor("token_embd.weight", spec.vocabSize, spec.dim,
                       formatFor(type, "token_embd.weight"), 0.0f, 1.0f, error))
    return false;
  for (int64_t layer = 0; layer < spec.layers; ++layer) {
    std::string prefix = "blk." + std::to_string(layer) + ".";
    if (!norm(prefix + "attn_norm.weight") ||
        !matrix(prefix + "attn_q.weight", spec.dim, spec.dim) ||
        !bias(prefix + "attn_q.bias", spec.dim) ||
        !matrix(prefix + "attn_k.weight", kvDim, spec.dim) ||
        !bias(prefix + "attn_k.bias", kvDim) ||
        !matrix(prefix + "attn_v.weight", kvDim, spec.dim) ||
        !bias(prefix + "attn_v.bias", kvDim) ||
        !matrix(prefix + "attn_output.weight", spec.dim, spec.dim) ||
        !norm(prefix + "ffn_norm.weight") ||
        !matrix(prefix + "ffn_gate.weight", spec.ffnDim, spec.dim) ||
        !matrix(prefix + "ffn_up.weight", spec.ffnDim, spec.dim) ||
        !matrix(prefix + "ffn_down.weight", spec.dim, spec.ffnDim))
      return false;
  }
  if (!norm("output_norm.weight"))
    return false;
  if (!spec.tiedOutput &&
      !matrix("output.weight", spec.vocabSize, spec.dim))
    return false;
  // Refused before a byte is written when the file system cannot hold it.
  uint64_t bytes = writer.fileSize();
  std::string directory = path.find('/') == std::string::npos
                              ? std::string(".")
                              : path.substr(0, path.find_last_of('/') + 1);
  struct statvfs disk;
  if (statvfs(directory.c_str(), &disk) == 0) {
    uint64_t free = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
    if (bytes > free) {
      error = "-o " + path + ": the model is " + gib(bytes) +
              " but its file system has " + gib(free) +
              " free; choose smaller sizes or another directory";
      return false;
    }
  }
  return writer.writeFile(path, error);
}

} // namespace hetc::synth
