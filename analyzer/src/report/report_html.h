// The HTML report (`report --format html`): one self-contained page (inline CSS and SVG, no script,
// nothing fetched) with the summary, a timeline picture per process (report_html_timeline.h), the
// GPU overlap figures, and the findings with their call sites, stacks and fixes. docs/timeline.md.
#pragma once

#include "findings/analysis.h"
#include "report/report_html_timeline.h"

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace asyncwatch {

// Text from a trace made safe for HTML element content and attribute values (double or single
// quoted): first printable() (control characters, invalid UTF-8 and the Unicode controls that
// reorder text become visible escapes), then & < > " ' as character references.
std::string html_text(std::string_view text);

// `pictures`: one per process of the report, in its order (a process without one has no picture).
void write_report_html(std::ostream& out, const Report& report, const std::vector<ProcessPicture>& pictures);

}  // namespace asyncwatch
