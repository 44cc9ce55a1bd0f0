// Playing a request through a plan: a prefill and decode steps, unit by
// unit on their devices with the hand-overs between them, as a timeline with
// each device's busy time, and an SVG Gantt chart of it.
#ifndef HETC_PARTITION_SIMULATE_H
#define HETC_PARTITION_SIMULATE_H

#include "hetc/Partition/ModelPlan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hetc::partition {

/// The most decode steps whose intervals a timeline keeps by default: far
/// past what a chart shows readably, small enough to print as JSON.
inline constexpr int64_t kMaxRecordedDecodeSteps = 10000;

/// The `unit` of the host's sampling intervals.
extern const char *const kSamplingUnit;

/// One interval of the timeline: a unit running on a device, the host
/// sampling the next tokens (unit kSamplingUnit), or activations, token ids
/// or logits crossing a link (device -1).
struct TimelineEvent {
  int device = -1;
  std::string unit;
  /// "prefill" or "decode N" (N from 1).
  std::string phase;
  double start = 0;
  double end = 0;
};

struct Timeline {
  /// The prefill's intervals and those of the first recordedDecodeSteps
  /// decode steps; the sums below cover every step.
  std::vector<TimelineEvent> events;
  int64_t recordedDecodeSteps = 0;
  /// Busy seconds per device (ModelPlan::devices order) and on links.
  std::vector<double> busySeconds;
  double linkSeconds = 0;
  double prefillSeconds = 0;
  double totalSeconds = 0;
  int64_t decodeSteps = 0;
  /// Generated tokens per second over the decode steps (all sequences).
  double decodeTokensPerS = 0;
};

/// Runs a prefill of the plan's prompt, then `decodeSteps` steps whose KV
/// cache grows from the prompt's length, units one after the other as the
/// chain executes. `plannedContext` is the context the plan was costed at.
/// Intervals are kept for the first `maxRecordedSteps` decode steps only, so
/// a long request is summed in constant memory.
Timeline simulate(const ModelPlan &plan, const cost::Workload &workload,
                  int64_t plannedContext, int64_t decodeSteps,
                  int64_t maxRecordedSteps = kMaxRecordedDecodeSteps);

/// The timeline as an SVG Gantt chart: a row per device and one for links,
/// units coloured by kind, the prefill/decode boundary marked.
std::string timelineSvg(const ModelPlan &plan, const Timeline &timeline,
                        const std::string &title);

} // namespace hetc::partition

#endif // HETC_PARTITION_SIMULATE_H
