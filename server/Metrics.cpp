#include "server/Metrics.h"

#include <cstdio>
#include <sstream>

namespace hetc::server {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

void metric(std::ostringstream &out, const std::string &name,
            const std::string &type, const std::string &help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " "
      << type << "\n";
}

} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::observe(double value) {
  for (size_t b = 0; b < bounds_.size(); ++b)
    if (value <= bounds_[b])
      ++counts_[b];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(const std::string &name,
                              const std::string &help) const {
  std::ostringstream out;
  metric(out, name, "histogram", help);
  for (size_t b = 0; b < bounds_.size(); ++b)
    out << name << "_bucket{le=\"" << number(bounds_[b]) << "\"} "
        << counts_[b] << "\n";
  out << name << "_bucket{le=\"+Inf\"} " << count_ << "\n";
  out << name << "_sum " << number(sum_) << "\n";
  out << name << "_count " << count_ << "\n";
  return out.str();
}

std::string renderPrometheus(const EngineMetrics &engine,
                             const HttpMetrics &http) {
  std::ostringstream out;
  metric(out, "hetc_http_responses_total", "counter",
         "HTTP responses by endpoint and status code.");
  for (const auto &[key, count] : http.responses)
    out << "hetc_http_responses_total{endpoint=\"" << key.first
        << "\",code=\"" << key.second << "\"} " << count << "\n";
  metric(out, "hetc_requests_finished_total", "counter",
         "Generations finished, by reason: stop, length, cancelled (the "
         "client left), error.");
  for (const char *reason : {"stop", "length", "cancelled", "error"}) {
    auto found = engine.requestsFinished.find(reason);
    out << "hetc_requests_finished_total{reason=\"" << reason << "\"} "
        << (found == engine.requestsFinished.end() ? 0 : found->second)
        << "\n";
  }
  auto counter = [&](const char *name, const char *help, uint64_t value) {
    metric(out, name, "counter", help);
    out << name << " " << value << "\n";
  };
  auto gauge = [&](const char *name, const char *help, int64_t value) {
    metric(out, name, "gauge", help);
    out << name << " " << value << "\n";
  };
  counter("hetc_prompt_tokens_total", "Prompt tokens read.",
          engine.promptTokens);
  counter("hetc_generated_tokens_total", "Tokens generated.",
          engine.generatedTokens);
  counter("hetc_prompt_tokens_reused_total",
          "Prompt tokens whose keys and values came from the prefix cache.",
          engine.reusedPromptTokens);
  counter("hetc_decode_steps_total", "Batched decode steps run.",
          engine.decodeSteps);
  counter("hetc_preemptions_total",
          "Requests sent back to the queue because the KV pool was full.",
          engine.preemptions);
  gauge("hetc_queue_length", "Requests waiting for a place in the batch.",
        engine.queued);
  gauge("hetc_running_requests", "Requests in the running batch.",
        engine.running);
  gauge("hetc_batch_size", "Sequences in the last decode step.",
        engine.lastBatch);
  metric(out, "hetc_kv_blocks", "gauge",
         "KV-cache blocks per tier: the pool the model code reads (all, and "
         "used), and those moved out of it to host memory and disk.");
  out << "hetc_kv_blocks{tier=\"pool\",state=\"total\"} "
      << engine.kvPoolBlocks << "\n";
  out << "hetc_kv_blocks{tier=\"pool\",state=\"used\"} "
      << engine.kvPoolBlocksUsed << "\n";
  out << "hetc_kv_blocks{tier=\"host\",state=\"used\"} "
      << engine.kvHostBlocks << "\n";
  out << "hetc_kv_blocks{tier=\"disk\",state=\"used\"} "
      << engine.kvDiskBlocks << "\n";
  metric(out, "hetc_kv_tier_bytes", "gauge",
         "Bytes of KV-cache blocks moved out of the pool, by tier.");
  out << "hetc_kv_tier_bytes{tier=\"host\"} " << engine.kvHostBytes << "\n";
  out << "hetc_kv_tier_bytes{tier=\"disk\"} " << engine.kvDiskBytes << "\n";
  out << engine.batchSize.render("hetc_batch_size_per_step",
                                 "Sequences decoded per step.");
  out << engine.timeToFirstToken.render(
      "hetc_time_to_first_token_seconds",
      "From a request's arrival to its first token.");
  out << engine.timePerToken.render(
      "hetc_time_per_output_token_seconds",
      "Between a request's consecutive tokens.");
  return out.str();
}

} // namespace hetc::server
