// What `GET /metrics` reports, in the Prometheus text format: the engine's
// requests, tokens, queue, batch and KV cache, and latency histograms.
#ifndef HETC_SERVER_METRICS_H
#define HETC_SERVER_METRICS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hetc::server {

/// A Prometheus histogram: cumulative counts at fixed upper bounds.
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// `name`'s _bucket, _sum and _count lines, with HELP and TYPE.
  std::string render(const std::string &name, const std::string &help) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct EngineMetrics {
  /// Finished requests by how they ended: stop, length, cancelled, error.
  std::map<std::string, uint64_t> requestsFinished;
  uint64_t promptTokens = 0;
  uint64_t generatedTokens = 0;
  /// Prompt tokens whose keys came from the prefix cache.
  uint64_t reusedPromptTokens = 0;
  uint64_t decodeSteps = 0;
  uint64_t preemptions = 0;
  int64_t queued = 0;
  int64_t running = 0;
  int64_t lastBatch = 0;
  /// The KV cache: the pool's blocks and those in use, and what the host
  /// and disk tiers hold.
  int64_t kvPoolBlocks = 0;
  int64_t kvPoolBlocksUsed = 0;
  int64_t kvHostBytes = 0;
  int64_t kvDiskBytes = 0;
  int64_t kvHostBlocks = 0;
  int64_t kvDiskBlocks = 0;
  Histogram batchSize{{1, 2, 4, 8, 16, 32, 64}};
  Histogram timeToFirstToken{
      {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}};
  Histogram timePerToken{
      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
};

/// The HTTP side's counts: responses by endpoint and status.
struct HttpMetrics {
  std::map<std::pair<std::string, int>, uint64_t> responses;
};

std::string renderPrometheus(const EngineMetrics &engine,
                             const HttpMetrics &http);

} // namespace hetc::server

#endif // HETC_SERVER_METRICS_H
