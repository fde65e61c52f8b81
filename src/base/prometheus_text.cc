#include "base/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "base/assert.h"

namespace weir::metrics {
namespace {

bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto* e = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, static_cast<std::size_t>(e - buf));
}

}  // namespace

void prometheus_text::append_label_value(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void prometheus_text::append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto* e = std::to_chars(buf, buf + sizeof buf, v).ptr;  // shortest round-trip form
    out.append(buf, static_cast<std::size_t>(e - buf));
  }
}

void prometheus_text::family(std::string_view name, metric_type type, std::string_view help) {
  WEIR_ASSERT(valid_name(name), "invalid metric name '{}'", name);
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  for (char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == metric_type::counter ? " counter\n"
          : type == metric_type::gauge ? " gauge\n"
                                       : " histogram\n";
}

void prometheus_text::head(std::string_view name, std::span<const label> labels, std::string_view extra_name,
                           std::string_view extra_value) {
  WEIR_ASSERT(valid_name(name), "invalid metric name '{}'", name);
  out_ += name;
  if (labels.empty() && extra_name.empty()) {
    out_ += ' ';
    return;
  }
  out_ += '{';
  bool first = true;
  auto one = [&](std::string_view n, std::string_view v) {
    WEIR_ASSERT(valid_name(n) && n.substr(0, 2) != "__", "invalid label name '{}'", n);
    if (!first) out_ += ',';
    first = false;
    out_ += n;
    out_ += "=\"";
    append_label_value(out_, v);
    out_ += '"';
  };
  for (const label& l : labels) one(l.name, l.value);
  if (!extra_name.empty()) one(extra_name, extra_value);
  out_ += "} ";
}

void prometheus_text::sample(std::string_view name, std::initializer_list<label> labels,
                             std::uint64_t value) {
  sample(name, std::span<const label>(labels.begin(), labels.size()), value);
}

void prometheus_text::sample(std::string_view name, std::span<const label> labels, std::uint64_t value) {
  head(name, labels);
  append_uint(out_, value);
  out_ += '\n';
}

void prometheus_text::sample_double(std::string_view name, std::span<const label> labels, double value) {
  head(name, labels);
  append_number(out_, value);
  out_ += '\n';
}

void prometheus_text::histogram(std::string_view name, std::span<const label> labels,
                                std::span<const std::uint64_t> bounds, const histogram_counts& h,
                                std::uint64_t divisor) {
  WEIR_ASSERT(h.counts.empty() || h.counts.size() == bounds.size() + 1,
              "histogram {}: {} counts for {} bounds", name, h.counts.size(), bounds.size());
  std::string bucket_name(name);
  bucket_name += "_bucket";
  std::string le;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    le.clear();
    if (i < bounds.size()) {
      append_number(le, static_cast<double>(bounds[i]) / static_cast<double>(divisor));
    } else {
      le = "+Inf";
    }
    head(bucket_name, labels, "le", le);
    append_uint(out_, cumulative);
    out_ += '\n';
  }
  std::string other(name);
  other += "_sum";
  if (divisor == 1) {
    sample(other, labels, h.sum);
  } else {
    sample_double(other, labels, static_cast<double>(h.sum) / static_cast<double>(divisor));
  }
  other.resize(name.size());
  other += "_count";
  sample(other, labels, cumulative);
}

}  // namespace weir::metrics
