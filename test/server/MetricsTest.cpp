// /metrics in the Prometheus text format: counters, gauges and cumulative
// histogram buckets.
#include "server/Metrics.h"

#include <gtest/gtest.h>

#include <sstream>

namespace hetc::server {
namespace {

TEST(Histogram, BucketsAreCumulative) {
  Histogram histogram({1, 2, 4});
  for (double value : {0.5, 1.0, 3.0, 9.0})
    histogram.observe(value);
  std::string text = histogram.render("x", "help");
  EXPECT_NE(text.find("# TYPE x histogram\n"), std::string::npos);
  EXPECT_NE(text.find("x_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_bucket{le=\"2\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("x_bucket{le=\"4\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("x_sum 13.5\n"), std::string::npos);
  EXPECT_NE(text.find("x_count 4\n"), std::string::npos);
}

TEST(Metrics, EveryFamilyIsTypedAndEveryLineParses) {
  EngineMetrics engine;
  engine.requestsFinished["stop"] = 3;
  engine.generatedTokens = 42;
  engine.queued = 2;
  engine.kvPoolBlocks = 64;
  engine.kvPoolBlocksUsed = 5;
  engine.kvHostBlocks = 3;
  engine.timeToFirstToken.observe(0.02);
  HttpMetrics http;
  http.responses[{"/v1/completions", 200}] = 3;
  std::string text = renderPrometheus(engine, http);
  EXPECT_NE(text.find("hetc_requests_finished_total{reason=\"stop\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("hetc_requests_finished_total{reason=\"error\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("hetc_generated_tokens_total 42\n"), std::string::npos);
  EXPECT_NE(text.find("hetc_queue_length 2\n"), std::string::npos);
  EXPECT_NE(text.find("hetc_kv_blocks{tier=\"pool\",state=\"used\"} 5\n"),
            std::string::npos);
  EXPECT_NE(text.find("hetc_kv_blocks{tier=\"host\",state=\"used\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("hetc_http_responses_total{endpoint=\"/v1/completions\","
                      "code=\"200\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("hetc_time_to_first_token_seconds_count 1\n"),
            std::string::npos);
  // Each sample line is a name (with labels) and a number; each name has
  // its TYPE line before it.
  std::istringstream lines(text);
  std::string line, typed;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.rfind("#", 0) == 0)
      continue;
    size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_EQ(line.rfind(typed, 0), 0u) << line << " is not of " << typed;
    size_t used = 0;
    std::stod(line.substr(space + 1), &used);
    EXPECT_EQ(used, line.size() - space - 1) << line;
  }
}

} // namespace
} // namespace hetc::server
