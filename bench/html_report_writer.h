// html_report_writer: report.html, one self-contained page a person can open to see who won where: the
// warnings first (a saturated load generator, errors, lost events), the summary, every table, the
// SVG charts inline, the machine, the versions, the targets and the exact command. No scripts, no
// external files. Pure: a bench_report in, the page's text out.
#pragma once

#include <string>
#include <string_view>

#include "bench/bench_report.h"

namespace weir::bench {

std::string to_html(const bench_report& report);

// &, <, >, " and ' as entities.
std::string html_escape(std::string_view s);

}  // namespace weir::bench
