// prometheus_text: writes the Prometheus text exposition format, version 0.0.4
// (prometheus.io/docs/instrumenting/exposition_formats/): per family one `# HELP` and one `# TYPE`
// line, then its samples `name{label="value",...} value`. Label values escape `\`, `"` and line feeds;
// HELP text escapes `\` and line feeds. A histogram is written as cumulative `_bucket` samples with an
// `le` label ending at `+Inf` (equal to `_count`), then `_sum` and `_count`.
//
// The caller keeps each family's samples together (the format requires it) and uses valid metric and
// label names ([a-zA-Z_:][a-zA-Z0-9_:]*; checked by WEIR_ASSERT). Single-threaded.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "base/metrics.h"

namespace weir::metrics {

enum class metric_type { counter, gauge, histogram };

struct label {
  std::string_view name;
  std::string_view value;
};

// What GET /metrics answers with (the format's Content-Type).
inline constexpr std::string_view text_content_type = "text/plain; version=0.0.4; charset=utf-8";

class prometheus_text {
 public:
  // Starts a family: its HELP and TYPE lines.
  void family(std::string_view name, metric_type type, std::string_view help);
  // A family of one sample without labels: family() and sample() in one call.
  void single(std::string_view name, metric_type type, std::string_view help, std::uint64_t value) {
    family(name, type, help);
    sample(name, {}, value);
  }
  // One sample of the current family (`name` is the family's name for counters and gauges).
  void sample(std::string_view name, std::initializer_list<label> labels, std::uint64_t value);
  void sample(std::string_view name, std::span<const label> labels, std::uint64_t value);
  void sample_double(std::string_view name, std::span<const label> labels, double value);
  // The samples of one histogram of family `name`: bucket bounds and sum in the observations' units,
  // divided by `divisor` on output (1e6: microseconds observed, seconds exposed; a division, not a
  // multiplication by 1e-6, so that 100 us prints as 0.0001).
  void histogram(std::string_view name, std::span<const label> labels, std::span<const std::uint64_t> bounds,
                 const histogram_counts& h, std::uint64_t divisor = 1);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

  // `v` escaped as a label value (without the quotes).
  static void append_label_value(std::string& out, std::string_view v);
  // A sample value: integers as integers, others in the shortest form that reads back the same;
  // +Inf, -Inf and NaN as the format spells them.
  static void append_number(std::string& out, double v);

 private:
  void head(std::string_view name, std::span<const label> labels, std::string_view extra_name = {},
            std::string_view extra_value = {});

  std::string out_;
};

}  // namespace weir::metrics
