// The request timeline of a plan and its SVG rendering.
#include "hetc/Partition/Simulate.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace hetc::partition {

const char *const kSamplingUnit = "sampling";

Timeline simulate(const ModelPlan &plan, const cost::Workload &workload,
                  int64_t plannedContext, int64_t decodeSteps,
                  int64_t maxRecordedSteps) {
  Timeline timeline;
  timeline.recordedDecodeSteps = std::min(decodeSteps, maxRecordedSteps);
  bool recording = true;
  timeline.busySeconds.assign(plan.devices.size(), 0);
  timeline.decodeSteps = decodeSteps;
  double now = 0;
  auto run = [&](int device, const std::string &unit, const std::string &phase,
                 double seconds) {
    if (seconds <= 0)
      return;
    if (recording)
      timeline.events.push_back({device, unit, phase, now, now + seconds});
    if (device >= 0)
      timeline.busySeconds[device] += seconds;
    else
      timeline.linkSeconds += seconds;
    now += seconds;
  };
  // Token ids reach the embedding before it runs; logits leave the output
  // after it.
  auto runUnit = [&](const PlacedUnit &unit, const std::string &phase,
                     double handOver, double seconds, double hostTransfer) {
    bool first = unit.unit.kind == cost::UnitKind::Embedding;
    if (first)
      run(-1, unit.unit.name, phase, hostTransfer);
    run(-1, unit.unit.name, phase, handOver);
    run(unit.device, unit.unit.name, phase, seconds);
    if (!first)
      run(-1, unit.unit.name, phase, hostTransfer);
  };
  for (const PlacedUnit &unit : plan.units)
    runUnit(unit, "prefill", unit.prefillHandOverSeconds, unit.prefillSeconds,
            unit.prefillHostTransferSeconds);
  timeline.prefillSeconds = now;
  for (int64_t step = 1; step <= decodeSteps; ++step) {
    recording = step <= timeline.recordedDecodeSteps;
    std::string phase = recording ? "decode " + std::to_string(step) : "";
    // Step `step` reads the prompt and the tokens generated before it.
    int64_t context = workload.promptTokens + step - 1;
    for (const PlacedUnit &unit : plan.units)
      runUnit(unit, phase, unit.handOverSeconds,
              unit.decodeSecondsAt(context, plannedContext),
              unit.hostTransferSeconds);
    run(plan.hostDevice, kSamplingUnit, phase, plan.samplingSeconds);
  }
  timeline.totalSeconds = now;
  double decodeSeconds = now - timeline.prefillSeconds;
  if (decodeSeconds > 0)
    timeline.decodeTokensPerS = static_cast<double>(decodeSteps * workload.batch) /
                                decodeSeconds;
  return timeline;
}

namespace {

const char *colourOf(cost::UnitKind kind) {
  switch (kind) {
  case cost::UnitKind::Embedding:
    return "#8c8c8c";
  case cost::UnitKind::Attention:
    return "#4e79a7";
  case cost::UnitKind::Ffn:
    return "#f28e2b";
  case cost::UnitKind::Output:
    return "#59a14f";
  }
  return "#000000";
}

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

} // namespace

std::string timelineSvg(const ModelPlan &plan, const Timeline &timeline,
                        const std::string &title) {
  const double width = 1200, left = 150, right = 20, rowHeight = 28,
               top = 40;
  size_t rows = plan.devices.size() + 1;
  double height = top + rowHeight * static_cast<double>(rows) + 50;
  double scale = timeline.totalSeconds > 0
                     ? (width - left - right) / timeline.totalSeconds
                     : 0;
  std::map<std::string, cost::UnitKind> kindOf;
  for (const PlacedUnit &unit : plan.units)
    kindOf[unit.unit.name] = unit.unit.kind;

  std::ostringstream svg;
  char number[64];
  auto fmt = [&](double value) {
    std::snprintf(number, sizeof number, "%.2f", value);
    return std::string(number);
  };
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
      << "\" height=\"" << fmt(height) << "\" font-family=\"sans-serif\" "
      << "font-size=\"12\">\n";
  svg << "<title>" << escape(title) << "</title>\n";
  svg << "<text x=\"10\" y=\"20\" font-size=\"14\">" << escape(title)
      << "</text>\n";
  for (size_t row = 0; row < rows; ++row) {
    double y = top + rowHeight * static_cast<double>(row);
    std::string label = row < plan.devices.size()
                            ? plan.devices[row].id + " (" +
                                  plan.devices[row].device->name + ")"
                            : "links";
    svg << "<text x=\"10\" y=\"" << fmt(y + rowHeight * 0.65) << "\">"
        << escape(label) << "</text>\n";
  }
  for (const TimelineEvent &event : timeline.events) {
    size_t row = event.device >= 0 ? static_cast<size_t>(event.device)
                                   : plan.devices.size();
    double y = top + rowHeight * static_cast<double>(row) + 3;
    double x = left + event.start * scale;
    double w = std::max(0.5, (event.end - event.start) * scale);
    auto kind = kindOf.find(event.unit);
    const char *colour = event.device < 0        ? "#b07aa1"
                         : kind != kindOf.end() ? colourOf(kind->second)
                                                : "#e15759";
    svg << "<rect x=\"" << fmt(x) << "\" y=\"" << fmt(y) << "\" width=\""
        << fmt(w) << "\" height=\"" << fmt(rowHeight - 6) << "\" fill=\""
        << colour << "\"><title>" << escape(event.unit) << ", "
        << escape(event.phase) << ": " << fmt((event.end - event.start) * 1e3)
        << " ms</title></rect>\n";
  }
  double boundary = left + timeline.prefillSeconds * scale;
  double bottom = top + rowHeight * static_cast<double>(rows);
  svg << "<line x1=\"" << fmt(boundary) << "\" y1=\"" << fmt(top - 5)
      << "\" x2=\"" << fmt(boundary) << "\" y2=\"" << fmt(bottom)
      << "\" stroke=\"#000\" stroke-dasharray=\"4 2\"/>\n";
  svg << "<text x=\"" << fmt(left) << "\" y=\"" << fmt(bottom + 20)
      << "\">0 s</text>\n";
  svg << "<text x=\"" << fmt(width - right) << "\" y=\"" << fmt(bottom + 20)
      << "\" text-anchor=\"end\">" << fmt(timeline.totalSeconds * 1e3)
      << " ms</text>\n";
  svg << "<text x=\"" << fmt(boundary + 4) << "\" y=\"" << fmt(bottom + 20)
      << "\">prefill | decode</text>\n";
  svg << "<text x=\"" << fmt(left) << "\" y=\"" << fmt(bottom + 40)
      << "\">embedding: grey, attention: blue, FFN: orange, output: green, "
         "sampling: red, transfers: purple</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

} // namespace hetc::partition
