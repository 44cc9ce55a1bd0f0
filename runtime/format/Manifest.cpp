// Manifest (de)serialization with nlohmann_json, and the model-file hash.
#include "runtime/format/Manifest.h"

#include "runtime/format/InputFile.h"
#include "runtime/format/MappedFiles.h"
#include "runtime/format/JsonText.h"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetrt::format {

namespace {
constexpr int kManifestVersion = 3;
} // namespace

std::vector<std::string> gpuLibraryFormats(const std::string &target) {
  if (target == "nvptx")
    return {"cubin", "ptx"};
  if (target == "amdgpu")
    return {"hsaco"};
  return {};
}

namespace {

/// Letters, digits and '_', as chip names are ("sm_90", "gfx942").
bool isIdentifier(const std::string &text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

} // namespace

int spirvVersionNumber(const std::string &version) {
  unsigned major = 0, minor = 0;
  char rest = 0;
  if (std::sscanf(version.c_str(), "%u.%u%c", &major, &minor, &rest) != 2 ||
      major > 99 || minor > 99)
    return -1;
  return static_cast<int>(major * 100 + minor);
}

std::string Manifest::toJson() const {
  auto variantsJson = [](const std::vector<CodeVariant> &list) {
    nlohmann::json out = nlohmann::json::array();
    for (const CodeVariant &variant : list)
      out.push_back({{"name", variant.name},
                     {"section", variant.section},
                     {"requires", variant.requires_}});
    return out;
  };
  auto kernelsJson = [](const std::vector<std::pair<std::string, int>> &list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto &[name, bindings] : list)
      out.push_back({{"name", name}, {"bindings", bindings}});
    return out;
  };
  nlohmann::json variantList = variantsJson(variants);
  nlohmann::json json = {
      {"format", "hetcpack"},
      {"version", kManifestVersion},
      {"weights",
       {{"path", weightsPath}, {"size", weightsSize}, {"xxh3", weightsHash}}},
      {"model",
       {{"architecture", architecture},
        {"vocab_size", vocabSize},
        {"layers", numLayers},
        {"kv_heads", numKvHeads},
        {"head_dim", headDim},
        {"context_length", contextLength},
        {"kv_element_type", kvElementType},
        {"kv_block_size", kvBlockSize},
        {"kv_pool_blocks", kvPoolBlocks}}},
      {"entries", {{"prefill", prefillSymbol}, {"decode", decodeSymbol}}},
      {"variants", variantList},
  };
  if (spirv) {
    nlohmann::json libraries = nlohmann::json::array();
    for (const SpirvLibrary &library : spirv->libraries)
      libraries.push_back({{"variant", library.variant},
                           {"section", library.section},
                           {"spirv_version", library.version},
                           {"capabilities", library.capabilities},
                           {"extensions", library.extensions}});
    json["spirv"] = {{"libraries", libraries},
                     {"kernels", kernelsJson(spirv->kernels)},
                     {"prefill", spirv->prefillSection},
                     {"decode", spirv->decodeSection},
                     {"max_prefill_tokens", spirv->maxPrefillTokens}};
    if (!spirv->decodeBatchSection.empty()) {
      json["spirv"]["decode_batch"] = spirv->decodeBatchSection;
      json["spirv"]["max_batch"] = spirv->maxBatch;
    }
  }
  for (auto [key, code] : {std::pair{"nvptx", &nvptx},
                           std::pair{"amdgpu", &amdgpu}}) {
    if (!*code)
      continue;
    nlohmann::json libraries = nlohmann::json::array();
    for (const GpuLibrary &library : (*code)->libraries)
      libraries.push_back({{"variant", library.variant},
                           {"format", library.format},
                           {"section", library.section}});
    nlohmann::json kernels = nlohmann::json::array();
    for (const GpuKernel &kernel : (*code)->kernels)
      kernels.push_back({{"name", kernel.name},
                         {"bindings", kernel.bindings},
                         {"workgroup", kernel.workgroup}});
    json[key] = {{"libraries", libraries}, {"kernels", kernels}};
  }
  if (plan) {
    nlohmann::json units = nlohmann::json::object();
    for (const auto &[device, count] : plan->units)
      units[device] = count;
    json["plan"] = {{"system", plan->system},
                    {"prefill", plan->prefillSection},
                    {"decode", plan->decodeSection},
                    {"max_prefill_tokens", plan->maxPrefillTokens},
                    {"cpu_variants", variantsJson(plan->cpuVariants)},
                    {"cpu_kernels", kernelsJson(plan->cpuKernels)},
                    {"units", units}};
    if (plan->kvHostBlocks > 0)
      json["plan"]["kv_host_blocks"] = plan->kvHostBlocks;
    if (plan->kvTierInt8)
      json["plan"]["kv_tier_format"] = "int8";
    if (!plan->decodeBatchSection.empty()) {
      json["plan"]["decode_batch"] = plan->decodeBatchSection;
      json["plan"]["max_batch"] = plan->maxBatch;
    }
    if (!plan->memory.empty()) {
      nlohmann::json memory = nlohmann::json::object();
      for (const PlannedCode::PlannedMemory &use : plan->memory)
        memory[use.device] = {{"weight_bytes", use.weightBytes},
                              {"kv_cache_bytes", use.kvCacheBytes},
                              {"stream_buffer_bytes", use.streamBufferBytes},
                              {"work_bytes", use.workBytes},
                              {"capacity_bytes", use.capacityBytes}};
      json["plan"]["predicted"] = {
          {"memory", memory},
          {"decode_seconds_per_step", plan->decodeSecondsPerStep},
          {"decode_seconds_per_step_empty_cache",
           plan->emptyCacheDecodeSecondsPerStep},
          {"context", plan->plannedContext}};
    }
  }
  return json.dump(2);
}

std::optional<Manifest> Manifest::fromJson(const std::string &text,
                                           const std::string &origin,
                                           std::string &error) {
  auto fail = [&](const std::string &what) {
    error = origin + ": manifest " + what + " (recompile with `hetc compile`)";
    return std::nullopt;
  };
  std::string why;
  if (text.find('\0') != std::string::npos)
    return fail("holds a NUL byte");
  std::optional<nlohmann::json> parsed = parseJsonText(text, why);
  if (!parsed)
    return fail(why);
  nlohmann::json json = std::move(*parsed);
  if (!json.is_object())
    return fail("is not a JSON object");
  auto format = json.find("format");
  if (format == json.end() || !format->is_string() || *format != "hetcpack")
    return fail("field \"format\" is not \"hetcpack\"");
  if (!json.contains("version") || !json["version"].is_number_integer() ||
      json["version"].get<int>() != kManifestVersion)
    return fail("field \"version\" must be " + std::to_string(kManifestVersion));

  // Looks up "object.key" with the expected JSON type; records the first miss.
  std::string missing;
  auto field = [&](const char *object, const char *key,
                   nlohmann::json::value_t type) -> const nlohmann::json * {
    if (!missing.empty())
      return nullptr;
    auto parent = json.find(object);
    if (parent == json.end() || !parent->is_object()) {
      missing = std::string("object \"") + object + "\" is missing";
      return nullptr;
    }
    auto value = parent->find(key);
    bool matches = value != parent->end() &&
                   (value->type() == type ||
                    (type == nlohmann::json::value_t::number_integer &&
                     value->is_number_integer()));
    if (!matches) {
      missing = std::string("field \"") + object + "." + key +
                "\" is missing or has the wrong type";
      return nullptr;
    }
    return &*value;
  };
  using Type = nlohmann::json::value_t;
  Manifest manifest;
  auto str = [&](const char *object, const char *key, std::string &out) {
    if (const nlohmann::json *value = field(object, key, Type::string))
      out = value->get<std::string>();
  };
  // Values past int64 read as -1 (refused below); messages print the text
  // the file holds, so 2^63 is not shown wrapped to a negative number.
  std::map<std::string, std::string> integerTexts;
  auto integer = [&](const char *object, const char *key, int64_t &out) {
    if (const nlohmann::json *value = field(object, key, Type::number_integer)) {
      bool fits = !value->is_number_unsigned() ||
                  value->get<uint64_t>() <= uint64_t(INT64_MAX);
      out = fits ? value->get<int64_t>() : -1;
      integerTexts[std::string(object) + "." + key] = value->dump();
    }
  };
  str("weights", "path", manifest.weightsPath);
  int64_t size = 0;
  integer("weights", "size", size);
  manifest.weightsSize = static_cast<uint64_t>(size);
  str("weights", "xxh3", manifest.weightsHash);
  str("model", "architecture", manifest.architecture);
  integer("model", "vocab_size", manifest.vocabSize);
  integer("model", "layers", manifest.numLayers);
  integer("model", "kv_heads", manifest.numKvHeads);
  integer("model", "head_dim", manifest.headDim);
  integer("model", "context_length", manifest.contextLength);
  str("model", "kv_element_type", manifest.kvElementType);
  integer("model", "kv_block_size", manifest.kvBlockSize);
  integer("model", "kv_pool_blocks", manifest.kvPoolBlocks);
  str("entries", "prefill", manifest.prefillSymbol);
  str("entries", "decode", manifest.decodeSymbol);
  if (!missing.empty())
    return fail(missing);
  // Bounds well past any real model; the code's own record (CodeRecord.h)
  // then pins the exact values.
  struct Bound {
    const char *name;
    int64_t value, limit;
  };
  const Bound bounds[] = {
      {"model.vocab_size", manifest.vocabSize, int64_t(1) << 24},
      {"model.layers", manifest.numLayers, 4096},
      {"model.kv_heads", manifest.numKvHeads, 4096},
      {"model.head_dim", manifest.headDim, 65536},
      {"model.context_length", manifest.contextLength, INT32_MAX},
  };
  for (const Bound &bound : bounds)
    if (bound.value < 1 || bound.value > bound.limit)
      return fail(std::string("field \"") + bound.name + "\" is " +
                  integerTexts[bound.name] + "; it must be in [1, " +
                  std::to_string(bound.limit) + "]");
  // A paged pack's pool: blocks of at most 64 Ki slots, at most 2^31 - 1
  // slots in all (slots are 32-bit, as positions are); 0 and 0 when the
  // code is not paged.
  if (manifest.kvBlockSize < 0 || manifest.kvBlockSize > 65536)
    return fail("field \"model.kv_block_size\" is " +
                integerTexts["model.kv_block_size"] +
                "; it must be 0 (not paged) or a block size in [1, 65536]");
  if (manifest.kvBlockSize == 0 ? manifest.kvPoolBlocks != 0
                                : manifest.kvPoolBlocks < 1 ||
                                      manifest.kvPoolBlocks >
                                          INT32_MAX / manifest.kvBlockSize)
    return fail("field \"model.kv_pool_blocks\" is " +
                integerTexts["model.kv_pool_blocks"] +
                (manifest.kvBlockSize == 0
                     ? std::string("; it must be 0 when model.kv_block_size "
                                   "is 0")
                     : "; it must be in [1, " +
                           std::to_string(INT32_MAX / manifest.kvBlockSize) +
                           "] for blocks of " +
                           std::to_string(manifest.kvBlockSize) + " slots"));
  if (size < 0)
    return fail("field \"weights.size\" is " + integerTexts["weights.size"] +
                ", not a size in bytes");
  // Names printed in messages and used as paths hold no control bytes.
  auto plain = [](const std::string &text) { return !hasControlBytes(text); };
  if (manifest.weightsPath.empty() || manifest.weightsPath[0] != '/' ||
      !plain(manifest.weightsPath))
    return fail("field \"weights.path\" is \"" +
                printable(manifest.weightsPath) +
                "\"; it must be an absolute path without control characters");
  // The architectures ModelConfig reads.
  static const char *const kArchitectures[] = {"llama", "mistral", "qwen2"};
  if (std::find(std::begin(kArchitectures), std::end(kArchitectures),
                manifest.architecture) == std::end(kArchitectures))
    return fail("field \"model.architecture\" is \"" +
                printable(manifest.architecture) +
                "\"; this runtime runs llama, mistral and qwen2");
  const std::pair<const char *, const std::string *> entries[] = {
      {"prefill", &manifest.prefillSymbol}, {"decode", &manifest.decodeSymbol}};
  const char *expected[] = {kPrefillEntrySymbol, kDecodeEntrySymbol};
  for (int i = 0; i < 2; ++i)
    if (*entries[i].second != expected[i])
      return fail(std::string("field \"entries.") + entries[i].first +
                  "\" is \"" + printable(*entries[i].second) +
                  "\"; kernel ABI version " +
                  std::to_string(kKernelAbiVersion) + " calls it \"" +
                  expected[i] + "\"");
  if (manifest.kvElementBytes() == 0)
    return fail("field \"model.kv_element_type\" is \"" +
                printable(manifest.kvElementType) +
                "\"; this runtime supports \"f32\", \"f16\" and \"bf16\"");
  // A list of code variants (name, section, CPU features); false with
  // `problem` set.
  std::string problem;
  auto readVariants = [&](const nlohmann::json &list, const std::string &field,
                          size_t least, std::vector<CodeVariant> &out) {
    constexpr size_t kMaxVariants = 16;
    if (!list.is_array() || list.size() < least || list.size() > kMaxVariants) {
      problem = "field \"" + field + "\" must be an array of " +
                std::to_string(least) + " to " + std::to_string(kMaxVariants) +
                " variants";
      return false;
    }
    for (const nlohmann::json &entry : list) {
      if (!entry.is_object() || !entry.contains("name") ||
          !entry["name"].is_string() || !entry.contains("section") ||
          !entry["section"].is_string() || !entry.contains("requires") ||
          !entry["requires"].is_array()) {
        problem = "has a variant without string \"name\", string "
                  "\"section\" and array \"requires\"";
        return false;
      }
      CodeVariant variant;
      variant.name = entry["name"].get<std::string>();
      variant.section = entry["section"].get<std::string>();
      bool nameOk = !variant.name.empty() &&
                    std::all_of(variant.name.begin(), variant.name.end(),
                                [](char c) {
                                  return std::isalnum(
                                             static_cast<unsigned char>(c)) ||
                                         c == '-' || c == '_' || c == '.';
                                });
      if (!nameOk || !plain(variant.section) || variant.section.empty()) {
        problem = "has a variant named \"" + printable(variant.name) +
                  "\" with section \"" + printable(variant.section) +
                  "\"; names are letters, digits, '-', '_' and '.'";
        return false;
      }
      for (const CodeVariant &earlier : out)
        if (earlier.name == variant.name || earlier.section == variant.section) {
          problem = "lists variant \"" + variant.name + "\" or section \"" +
                    printable(variant.section) + "\" twice";
          return false;
        }
      for (const nlohmann::json &feature : entry["requires"]) {
        if (!feature.is_string() || !plain(feature.get<std::string>())) {
          problem = "variant \"" + variant.name +
                    "\" lists a CPU feature that is not a plain string";
          return false;
        }
        variant.requires_.push_back(feature.get<std::string>());
      }
      out.push_back(std::move(variant));
    }
    return true;
  };
  // A list of 1 to 256 kernels, {name, bindings of 1 to `most`}.
  auto readKernels = [&](const nlohmann::json *list, int most,
                         std::vector<std::pair<std::string, int>> &out) {
    if (!list || !list->is_array() || list->empty() || list->size() > 256)
      return false;
    for (const nlohmann::json &kernel : *list) {
      if (!kernel.is_object() || !kernel.contains("name") ||
          !kernel["name"].is_string() || !kernel.contains("bindings") ||
          !kernel["bindings"].is_number_integer() ||
          kernel["bindings"].get<int64_t>() < 1 ||
          kernel["bindings"].get<int64_t>() > most ||
          kernel["name"].get<std::string>().empty() ||
          !plain(kernel["name"].get<std::string>()))
        return false;
      out.emplace_back(kernel["name"].get<std::string>(),
                       kernel["bindings"].get<int>());
    }
    return true;
  };
  // Non-empty plain strings of `object` by key.
  auto readSections =
      [&](const nlohmann::json &object,
          std::initializer_list<std::pair<const char *, std::string *>> keys) {
        for (auto [key, out] : keys) {
          auto found = object.find(key);
          if (found == object.end() || !found->is_string() ||
              found->get<std::string>().empty() ||
              !plain(found->get<std::string>()))
            return false;
          *out = found->get<std::string>();
        }
        return true;
      };
  auto readTokens = [](const nlohmann::json &object, int64_t &out) {
    auto tokens = object.find("max_prefill_tokens");
    if (tokens == object.end() || !tokens->is_number_integer() ||
        tokens->get<int64_t>() < 1 || tokens->get<int64_t>() > 65535)
      return false;
    out = tokens->get<int64_t>();
    return true;
  };
  auto variants = json.find("variants");
  if (!readVariants(variants == json.end() ? nlohmann::json() : *variants,
                    "variants", 1, manifest.variants))
    return fail(problem);
  if (auto spirv = json.find("spirv"); spirv != json.end()) {
    const char *shape =
        "field \"spirv\" must hold a list \"libraries\" of 1 to 8 {string "
        "\"variant\", \"section\" and \"spirv_version\" (as 1.3), lists "
        "\"capabilities\" and \"extensions\" of strings} with distinct "
        "variants and sections, string \"prefill\" and \"decode\", a list "
        "\"kernels\" of 1 to 256 {name, bindings of 1 to 64}, "
        "\"max_prefill_tokens\" of 1 to 65535, and optionally string "
        "\"decode_batch\" with \"max_batch\" of 1 to 65535";
    SpirvCode code;
    if (!spirv->is_object() ||
        !readSections(*spirv, {{"prefill", &code.prefillSection},
                               {"decode", &code.decodeSection}}) ||
        !readTokens(*spirv, code.maxPrefillTokens))
      return fail(shape);
    if (spirv->contains("decode_batch") || spirv->contains("max_batch")) {
      auto batch = spirv->find("max_batch");
      if (!readSections(*spirv, {{"decode_batch", &code.decodeBatchSection}}) ||
          batch == spirv->end() || !batch->is_number_integer() ||
          batch->get<int64_t>() < 1 || batch->get<int64_t>() > 65535)
        return fail(shape);
      code.maxBatch = batch->get<int64_t>();
    }
    auto libraries = spirv->find("libraries");
    if (libraries == spirv->end() || !libraries->is_array() ||
        libraries->empty() || libraries->size() > 8)
      return fail(shape);
    for (const nlohmann::json &entry : *libraries) {
      SpirvLibrary library;
      if (!entry.is_object() ||
          !readSections(entry, {{"variant", &library.variant},
                                {"section", &library.section},
                                {"spirv_version", &library.version}}))
        return fail(shape);
      if (spirvVersionNumber(library.version) < 0)
        return fail(shape);
      for (auto [key, out] :
           {std::pair{"capabilities", &library.capabilities},
            std::pair{"extensions", &library.extensions}}) {
        auto names = entry.find(key);
        if (names == entry.end() || !names->is_array() || names->size() > 256)
          return fail(shape);
        for (const nlohmann::json &name : *names) {
          if (!name.is_string() || name.get<std::string>().empty() ||
              !plain(name.get<std::string>()))
            return fail(shape);
          out->push_back(name.get<std::string>());
        }
      }
      for (const SpirvLibrary &earlier : code.libraries)
        if (earlier.variant == library.variant ||
            earlier.section == library.section)
          return fail(shape);
      code.libraries.push_back(std::move(library));
    }
    auto kernels = spirv->find("kernels");
    if (!readKernels(kernels == spirv->end() ? nullptr : &*kernels, 64,
                     code.kernels))
      return fail(shape);
    manifest.spirv = std::move(code);
  }
  for (auto [key, out] : {std::pair{"nvptx", &manifest.nvptx},
                          std::pair{"amdgpu", &manifest.amdgpu}}) {
    auto found = json.find(key);
    if (found == json.end())
      continue;
    std::vector<std::string> formats = gpuLibraryFormats(key);
    std::string formatList;
    for (const std::string &format : formats)
      formatList += (formatList.empty() ? "\"" : " or \"") + format + "\"";
    std::string shape =
        std::string("field \"") + key +
        "\" must hold a list \"libraries\" of 1 to 8 {string \"variant\" "
        "(letters, digits, '_'), \"format\" (" + formatList +
        ") and \"section\"} with distinct variants and sections, and a list "
        "\"kernels\" of 1 to 256 {name, bindings of 1 to 64, workgroup: 3 "
        "sizes of 1 to 1024 threads in all}";
    GpuCode code;
    auto libraries =
        found->is_object() ? found->find("libraries") : found->end();
    if (!found->is_object() || libraries == found->end() ||
        !libraries->is_array() || libraries->empty() || libraries->size() > 8)
      return fail(shape);
    for (const nlohmann::json &entry : *libraries) {
      GpuLibrary library;
      if (!entry.is_object() ||
          !readSections(entry, {{"variant", &library.variant},
                                {"format", &library.format},
                                {"section", &library.section}}) ||
          !isIdentifier(library.variant) ||
          std::find(formats.begin(), formats.end(), library.format) ==
              formats.end())
        return fail(shape);
      for (const GpuLibrary &earlier : code.libraries)
        if (earlier.variant == library.variant ||
            earlier.section == library.section)
          return fail(shape);
      code.libraries.push_back(std::move(library));
    }
    auto kernels = found->find("kernels");
    std::vector<std::pair<std::string, int>> named;
    if (!readKernels(kernels == found->end() ? nullptr : &*kernels, 64, named))
      return fail(shape);
    for (size_t k = 0; k < named.size(); ++k) {
      GpuKernel kernel;
      kernel.name = named[k].first;
      kernel.bindings = named[k].second;
      auto sizes = (*kernels)[k].find("workgroup");
      if (sizes == (*kernels)[k].end() || !sizes->is_array() ||
          sizes->size() != 3)
        return fail(shape);
      int64_t threads = 1;
      for (size_t d = 0; d < 3; ++d) {
        const nlohmann::json &size = (*sizes)[d];
        if (!size.is_number_integer() || size.get<int64_t>() < 1 ||
            size.get<int64_t>() > 1024)
          return fail(shape);
        kernel.workgroup[d] = size.get<int>();
        threads *= kernel.workgroup[d];
      }
      if (threads > 1024)
        return fail(shape);
      code.kernels.push_back(std::move(kernel));
    }
    *out = std::move(code);
  }
  if (auto plan = json.find("plan"); plan != json.end()) {
    const char *shape =
        "field \"plan\" must hold string \"system\", \"prefill\" and "
        "\"decode\", \"max_prefill_tokens\" of 1 to 65535, \"cpu_variants\", "
        "a list \"cpu_kernels\" of {name, bindings of 1 to 256} (with "
        "variants, or empty without), and \"units\", whole numbers by device";
    PlannedCode code;
    if (!plan->is_object() ||
        !readSections(*plan, {{"system", &code.system},
                              {"prefill", &code.prefillSection},
                              {"decode", &code.decodeSection}}) ||
        !readTokens(*plan, code.maxPrefillTokens))
      return fail(shape);
    auto variantList = plan->find("cpu_variants");
    if (variantList == plan->end() ||
        !readVariants(*variantList, "plan.cpu_variants", 0, code.cpuVariants))
      return fail(problem.empty() ? std::string(shape) : problem);
    auto kernels = plan->find("cpu_kernels");
    bool noKernels = kernels != plan->end() && kernels->is_array() &&
                     kernels->empty() && code.cpuVariants.empty();
    if (!noKernels &&
        (code.cpuVariants.empty() ||
         !readKernels(kernels == plan->end() ? nullptr : &*kernels,
                      static_cast<int>(kMaxSegmentBindings), code.cpuKernels)))
      return fail(shape);
    auto units = plan->find("units");
    if (units == plan->end() || !units->is_object() || units->empty() ||
        units->size() > 16)
      return fail(shape);
    for (auto it = units->begin(); it != units->end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
          it.value().get<int64_t>() > 1000000 || it.key().empty() ||
          !plain(it.key()))
        return fail(shape);
      code.units.emplace_back(it.key(), it.value().get<int64_t>());
    }
    if (auto host = plan->find("kv_host_blocks"); host != plan->end()) {
      if (!host->is_number_integer() || host->get<int64_t>() < 1 ||
          host->get<int64_t>() > (int64_t(1) << 40))
        return fail("field \"plan.kv_host_blocks\" must be a whole number of "
                    "blocks from 1 to 2^40 (the plan's host tier); compile "
                    "the model again");
      code.kvHostBlocks = host->get<int64_t>();
    }
    if (plan->contains("decode_batch") || plan->contains("max_batch")) {
      auto batch = plan->find("max_batch");
      if (!readSections(*plan, {{"decode_batch", &code.decodeBatchSection}}) ||
          batch == plan->end() || !batch->is_number_integer() ||
          batch->get<int64_t>() < 1 || batch->get<int64_t>() > 65535)
        return fail("field \"plan.decode_batch\" must name the section of "
                    "a batch's decode program, with \"max_batch\" of 1 to "
                    "65535; compile the model again");
      code.maxBatch = batch->get<int64_t>();
    }
    if (auto format = plan->find("kv_tier_format"); format != plan->end()) {
      if (!format->is_string() || (*format != "int8" && *format != "exact"))
        return fail("field \"plan.kv_tier_format\" must be \"exact\" or "
                    "\"int8\" (how the plan's host tier keeps KV blocks); "
                    "compile the model again");
      code.kvTierInt8 = *format == "int8";
    }
    if (auto predicted = plan->find("predicted"); predicted != plan->end()) {
      const char *predictedShape =
          "field \"plan.predicted\" must hold \"decode_seconds_per_step\" "
          "and \"decode_seconds_per_step_empty_cache\", numbers from 0 to "
          "1e6, \"context\", 1 to 2^31, and \"memory\", by device of the "
          "plan's units {\"weight_bytes\", \"kv_cache_bytes\", "
          "\"stream_buffer_bytes\", \"work_bytes\", \"capacity_bytes\"} "
          "of 0 to 2^60";
      if (!predicted->is_object())
        return fail(predictedShape);
      auto seconds = [&](const char *field, double &out) {
        auto value = predicted->find(field);
        if (value == predicted->end() || !value->is_number() ||
            !(value->get<double>() >= 0 && value->get<double>() <= 1e6))
          return false;
        out = value->get<double>();
        return true;
      };
      auto context = predicted->find("context");
      auto memory = predicted->find("memory");
      if (!seconds("decode_seconds_per_step", code.decodeSecondsPerStep) ||
          !seconds("decode_seconds_per_step_empty_cache",
                   code.emptyCacheDecodeSecondsPerStep) ||
          context == predicted->end() || !context->is_number_integer() ||
          context->get<int64_t>() < 1 ||
          context->get<int64_t>() > (int64_t(1) << 31) ||
          memory == predicted->end() || !memory->is_object() ||
          memory->size() > code.units.size())
        return fail(predictedShape);
      code.plannedContext = context->get<int64_t>();
      for (auto it = memory->begin(); it != memory->end(); ++it) {
        PlannedCode::PlannedMemory use;
        use.device = it.key();
        bool known = std::any_of(
            code.units.begin(), code.units.end(),
            [&](const auto &unit) { return unit.first == use.device; });
        if (!known || !it.value().is_object() || it.value().size() != 5)
          return fail(predictedShape);
        for (auto [field, out] :
             {std::pair{"weight_bytes", &use.weightBytes},
              std::pair{"kv_cache_bytes", &use.kvCacheBytes},
              std::pair{"stream_buffer_bytes", &use.streamBufferBytes},
              std::pair{"work_bytes", &use.workBytes},
              std::pair{"capacity_bytes", &use.capacityBytes}}) {
          auto value = it.value().find(field);
          if (value == it.value().end() || !value->is_number_unsigned() ||
              value->get<uint64_t>() > (uint64_t(1) << 60))
            return fail(predictedShape);
          *out = value->get<uint64_t>();
        }
        code.memory.push_back(std::move(use));
      }
    }
    manifest.plan = std::move(code);
  }
  return manifest;
}

std::optional<std::string> hashFile(const std::string &path,
                                    std::string &error) {
  uint64_t size = 0;
  int fd = openRegularFile(path, "a model file", size, error);
  if (fd < 0)
    return std::nullopt;
  XXH64_hash_t hash = XXH3_64bits(nullptr, 0);
  if (size > 0) {
    void *data = mmap(nullptr, static_cast<size_t>(size), PROT_READ,
                      MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      error = path + ": cannot map: " + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    registerMappedFile(data, static_cast<size_t>(size), path);
    hash = XXH3_64bits(data, static_cast<size_t>(size));
    unregisterMappedFile(data);
    munmap(data, static_cast<size_t>(size));
  }
  ::close(fd);
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(hash));
  return std::string(text);
}

} // namespace hetrt::format
