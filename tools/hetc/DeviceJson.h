// The JSON both runners (hetc run and hetrt-run) print for what a device of
// a session holds, so scripts read one shape from either.
#ifndef HETC_TOOLS_HETC_DEVICEJSON_H
#define HETC_TOOLS_HETC_DEVICEJSON_H

#include "hetrt/hetrt.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace hetc::cli {

/// The share of the streamed weights' copy time that computing hid.
inline double hiddenShare(const hetrt_device_memory_t &memory) {
  if (memory.stream_ns == 0)
    return 1.0;
  return std::max(0.0, 1.0 - double(memory.stream_wait_ns) /
                                 double(memory.stream_ns));
}

/// hetrt_device_memory_t as {"weight_bytes", "kv_cache_bytes", "work_bytes",
/// "streamed": {...}}; the streamed weights' object holds the bytes per step
/// and the share of the copies' time that computing hid.
inline nlohmann::json memoryJson(const hetrt_device_memory_t &memory) {
  nlohmann::json out = {{"weight_bytes", memory.weight_bytes},
                        {"kv_cache_bytes", memory.kv_cache_bytes},
                        {"stream_buffer_bytes", memory.stream_buffer_bytes},
                        {"work_bytes", memory.work_bytes}};
  if (memory.planned_weight_bytes || memory.planned_kv_cache_bytes ||
      memory.planned_stream_buffer_bytes || memory.planned_work_bytes)
    out["planned"] = {
        {"weight_bytes", memory.planned_weight_bytes},
        {"kv_cache_bytes", memory.planned_kv_cache_bytes},
        {"stream_buffer_bytes", memory.planned_stream_buffer_bytes},
        {"work_bytes", memory.planned_work_bytes}};
  if (memory.budget_bytes)
    out["budget_bytes"] = memory.budget_bytes;
  if (memory.streamed_bytes == 0)
    return out;
  out["streamed"] = {
      {"bytes", memory.streamed_bytes},
      {"bytes_per_step",
       memory.steps ? memory.streamed_bytes / memory.steps : 0},
      {"copy_ms", memory.stream_ns / 1e6},
      {"wait_ms", memory.stream_wait_ns / 1e6},
      {"hidden", hiddenShare(memory)}};
  return out;
}

/// hetrt_memory_space_t as {"name", "device", "held": {by role}, ...}:
/// what `hetc run --json` and `hetrt-run --json` print under
/// "memory_spaces".
inline nlohmann::json memorySpaceJson(const hetrt_memory_space_t &space) {
  nlohmann::json out = {
      {"name", space.name},
      {"device", space.device},
      {"capacity_bytes", space.capacity_bytes},
      {"held", {{"weight_bytes", space.weight_bytes},
                {"kv_cache_bytes", space.kv_cache_bytes},
                {"stream_buffer_bytes", space.stream_buffer_bytes},
                {"work_bytes", space.work_bytes},
                {"kv_tier_bytes", space.kv_tier_bytes}}},
      {"peak_bytes", space.peak_bytes},
      {"migrations_in", space.migrations_in},
      {"migrations_out", space.migrations_out},
      {"bytes_in", space.bytes_in},
      {"bytes_out", space.bytes_out},
      {"wait_ms", space.wait_ns / 1e6}};
  if (space.budget_bytes)
    out["budget_bytes"] = space.budget_bytes;
  return out;
}

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_DEVICEJSON_H
