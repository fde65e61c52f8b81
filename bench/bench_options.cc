#include "bench/bench_options.h"

#include <charconv>

#include <fmt/format.h>

namespace weir::bench {
namespace {

error bad(std::string reason) {
  return error{1, std::move(reason)};
}

template <class T>
bool parse_uint(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

// "URL,URL,...": at least one.
result<std::vector<endpoint>> parse_url_list(std::string_view list, std::string_view option,
                                             std::string_view spec) {
  std::vector<endpoint> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    auto ep = parse_endpoint(list.substr(0, comma));
    if (!ep) return ep.err();
    out.push_back(*ep);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) return bad(fmt::format("{} {}: no URL", option, spec));
  return out;
}

}  // namespace

std::string target_spec::urls() const {
  std::string out;
  for (const auto& b : bases) out += (out.empty() ? "" : ",") + b.url;
  return out;
}

result<target_spec> parse_target(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return bad(fmt::format("--target {}: expected NAME=URL or NAME=URL,URL,...", spec));
  // redis://HOST:PORT reads as http://HOST:PORT for the address; its path is never used.
  std::string urls(spec.substr(eq + 1));
  constexpr std::string_view redis_scheme = "redis://";
  const bool redis = urls.rfind(redis_scheme, 0) == 0;
  if (redis) {
    std::string rewritten;
    std::string_view rest = urls;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const auto url = rest.substr(0, comma);
      if (url.rfind(redis_scheme, 0) != 0)
        return bad(fmt::format("--target {}: every URL of a redis:// target must be redis://", spec));
      rewritten +=
          (rewritten.empty() ? "http://" : ",http://") + std::string(url.substr(redis_scheme.size()));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    urls = std::move(rewritten);
  }
  auto bases = parse_url_list(urls, "--target", spec);
  if (!bases) return bases.err();
  target_spec t{std::string(spec.substr(0, eq)), std::move(*bases), {}};
  t.redis = redis;
  if (redis) {
    std::string_view rest = spec.substr(eq + 1);
    for (auto& b : t.bases) {  // the report shows the URL as given
      const auto comma = rest.find(',');
      b.url = std::string(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return t;
}

status apply_read_bases(std::string_view spec, std::vector<target_spec>& targets) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return bad(fmt::format("--read-bases {}: expected NAME=URL,URL,...", spec));
  }
  const auto name = spec.substr(0, eq);
  target_spec* t = nullptr;
  for (auto& candidate : targets) {
    if (candidate.name == name) t = &candidate;
  }
  if (!t) return bad(fmt::format("--read-bases {}: no --target named {}", spec, name));
  auto bases = parse_url_list(spec.substr(eq + 1), "--read-bases", spec);
  if (!bases) return bases.err();
  t->read_bases = std::move(*bases);
  return {};
}

result<std::vector<unsigned>> parse_concurrency(std::string_view list) {
  std::vector<unsigned> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    unsigned c = 0;
    if (!parse_uint(list.substr(0, comma), c) || c == 0 || c > 100'000) {
      return bad(fmt::format("--concurrency: bad level '{}'", list.substr(0, comma)));
    }
    if (!out.empty() && c <= out.back()) return bad("--concurrency: levels must increase");
    out.push_back(c);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) return bad("--concurrency: no level");
  return out;
}

status validate(const bench_options& o) {
  if (o.targets.empty()) return bad("at least one --target NAME=URL is required");
  for (std::size_t i = 0; i < o.targets.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (o.targets[i].name == o.targets[j].name)
        return bad(fmt::format("two targets named {}", o.targets[i].name));
    }
  }
  if (o.concurrency.empty()) return bad("--concurrency: no level");
  if (o.payload_bytes == 0 || o.small_payload_bytes == 0 || o.read_payload_bytes == 0) {
    return bad("payload sizes must be positive");
  }
  if (o.sse_payload_bytes < 32) return bad("--sse-payload-bytes must be at least 32 (the event tag)");
  if (o.latency_count == 0) return bad("--latency-count must be positive");
  if (!(o.throughput_secs > 0) || o.throughput_secs > 3600)
    return bad("--throughput-secs must be in (0, 3600]");
  if (o.sse_readers == 0) return bad("--sse-readers must be positive");
  for (const auto& t : o.targets) {
    if (t.redis && (o.work.workloads.size() != 1 || o.work.workloads[0] != workload::saturation))
      return bad(fmt::format("target {} is redis://: only --workloads saturation can drive it", t.name));
  }
  return {};
}

}  // namespace weir::bench
