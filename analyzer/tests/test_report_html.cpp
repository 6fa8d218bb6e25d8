// The HTML report: escaping of trace strings, the pixel aggregation of the timeline, and a page made
// from a hostile trace (the headless-browser test is analyzer/tests/html/check_html_report.py).
#include "findings/analysis.h"
#include "report/report_html.h"
#include "report/report_html_timeline.h"
#include "report/report_job.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {
constexpr uint64_t kS = 1000 * kMs;
}  // namespace

TEST(ReportHtml, EscapesMarkupQuotesAndControls) {
  EXPECT_EQ(html_text("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(html_text("plain name_kernel<int>"), "plain name_kernel&lt;int&gt;");
  // What printable() makes visible stays visible (a terminal escape, invalid UTF-8, a bidi override).
  EXPECT_EQ(html_text("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(html_text("bad\xff"), "bad\\xff");
  EXPECT_EQ(html_text("x\u202ey"), "x\\u202ey");
  EXPECT_EQ(html_text("caf\u00e9.py"), "caf\u00e9.py");  // valid UTF-8 unchanged
}

TEST(ReportHtml, PixelLaneMergesSubPixelCallsAndStaysBounded) {
  // A million 100 ns calls, one every microsecond, over a second in 960 pixels.
  PixelLane lane(0, kS, 960);
  for (uint64_t i = 0; i < 1'000'000; ++i) lane.add(i * kUs, i * kUs + 100, "cudaLaunchKernel k");
  std::vector<PictureBar> bars = lane.finish();
  ASSERT_FALSE(bars.empty());
  EXPECT_LE(bars.size(), 480u);  // a bar per run of touching columns: at most width / 2
  uint64_t calls = 0, busy = 0;
  for (const auto& b : bars) {
    calls += b.calls;
    busy += b.busy_ns;
    EXPECT_EQ(b.finding, -1);
    EXPECT_GE(b.x1 - b.x0, PixelLane::kMinBarWidth - 1e-9);
    EXPECT_GE(b.x0, 0.0);
    EXPECT_LE(b.x1, 960.0);
  }
  EXPECT_EQ(calls, 1'000'000u);
  EXPECT_EQ(busy, 100'000'000u);
}

TEST(ReportHtml, PixelLaneKeepsSeparateCallsApartAndTheLongestLabel) {
  PixelLane lane(0, 1000 * kUs, 1000);  // 1 us per pixel
  lane.add(10 * kUs, 20 * kUs, "a");
  lane.add(20 * kUs + 200, 20 * kUs + 900, "b");  // touches a's last column: merged
  lane.add(500 * kUs, 600 * kUs, "c");            // far away: its own bar
  std::vector<PictureBar> bars = lane.finish();
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0].calls, 2u);
  EXPECT_EQ(bars[0].label, "a");  // the longer of the two
  EXPECT_NEAR(bars[0].x0, 10.0, 1e-9);
  EXPECT_NEAR(bars[0].x1, 20.9, 1e-9);
  EXPECT_EQ(bars[1].calls, 1u);
  EXPECT_NEAR(bars[1].x0, 500.0, 1e-9);
  EXPECT_NEAR(bars[1].x1, 600.0, 1e-9);
}

TEST(ReportHtml, FlaggedCallsAreAlwaysDrawnAndBounded) {
  PixelLane lane(0, kS, 960);
  // Dense plain calls with one flagged call in their midst: it is its own bar, drawn after them.
  for (uint64_t i = 0; i < 100'000; ++i) lane.add(i * 10 * kUs, i * 10 * kUs + 5 * kUs, "call");
  lane.add(500 * kMs + 1, 500 * kMs + 2, "flagged copy", 0, 3, 1);
  std::vector<PictureBar> bars = lane.finish();
  ASSERT_FALSE(bars.empty());
  EXPECT_EQ(bars.back().finding, 3);
  EXPECT_EQ(bars.back().calls, 1u);
  EXPECT_EQ(bars.back().label, "flagged copy");
  EXPECT_GE(bars.back().x1 - bars.back().x0, PixelLane::kMinBarWidth - 1e-9);
  for (size_t i = 0; i + 1 < bars.size(); ++i) EXPECT_EQ(bars[i].finding, -1);

  // Flagged calls of many findings, interleaved, in every column: bounded, none lost.
  PixelLane many(0, kS, 960);
  for (uint64_t i = 0; i < 200'000; ++i)
    many.add(i * 5 * kUs, i * 5 * kUs + kUs, "f", 0, static_cast<int32_t>(i % 7), static_cast<uint8_t>(i % 3));
  bars = many.finish();
  EXPECT_LE(bars.size(), PixelLane::kMaxFlaggedBars + 960);
  uint64_t calls = 0;
  uint8_t worst = 0;
  for (const auto& b : bars) {
    calls += b.calls;
    EXPECT_NE(b.finding, -1);
    worst = std::max(worst, b.severity);
  }
  EXPECT_EQ(calls, 200'000u);
  EXPECT_EQ(worst, 2);
}

TEST(ReportHtml, PageFromAHostileTraceIsEscapedAndLinksTheFlaggedCall) {
  TraceBuilder b(4242, "/work/app/<seed>\"&");
  add_seed_calls(b, "/work/app/seed", "main<b>", "evil<script>alert(1)</script>");
  std::string path = write_trace(b, "html-hostile.awtrace");
  std::vector<TraceMarks> marks;
  Report report = analyze_job({path}, Options{}, {}, ReportSelection{}, 1, &marks);
  ASSERT_EQ(report.processes.size(), 1u);
  ASSERT_EQ(marks.size(), 1u);
  std::vector<ProcessPicture> pictures{process_picture(report.processes[0], &marks[0], report)};
  ASSERT_TRUE(pictures[0].error.empty()) << pictures[0].error;
  std::ostringstream out;
  write_report_html(out, report, pictures);
  const std::string html = out.str();
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("main<b>"), std::string::npos);
  EXPECT_NE(html.find("evil&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("main&lt;b&gt; (tid 1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;seed&gt;&quot;&amp;"), std::string::npos);
  // The copy is flagged: drawn in the warning colour's class, linked to its finding.
  EXPECT_NE(html.find("<a href=\"#finding-1\"><rect class=\"bar flagged sev-warning\""), std::string::npos);
  EXPECT_NE(html.find("<article class=\"finding sev-warning\" id=\"finding-1\">"), std::string::npos);
  EXPECT_NE(html.find("class=\"lane host-lane\""), std::string::npos);
  EXPECT_EQ(html.find("stream-lane"), std::string::npos);  // no GPU times: no stream lane
  // Nothing fetched: no URL but the page's own anchors.
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

// PictureWalk's runs: calls spanning less than half a column, placed with place_run (the first call,
// then the rest at once), give the bars placing each call gives, labels included.
TEST(ReportHtml, PixelLaneRunsGiveTheBarsOfTheirCalls) {
  const uint64_t length = 1'000'000'000;  // 1 s in 960 columns: ~1.04 ms a column
  const double width = 960;
  PixelLane each(0, length, width), runs(0, length, width);
  uint64_t seed = 12345;
  auto next = [&](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  struct Call {
    uint64_t start, end;
    std::string label;
  };
  std::vector<Call> run;
  auto place_run = [&] {
    if (run.empty()) return;
    uint64_t min_start = run[0].start, max_start = run[0].start, max_end = run[0].end, busy = 0, longest = 0;
    size_t longest_at = 0;
    for (size_t i = 0; i < run.size(); ++i) {
      min_start = std::min(min_start, run[i].start);
      max_start = std::max(max_start, run[i].start);
      max_end = std::max(max_end, run[i].end);
      const uint64_t d = run[i].end - run[i].start;
      busy += d;
      if (i == 0 || d > longest) longest = d, longest_at = i;
    }
    bool is_longest = false;
    if (PictureBar* bar = runs.place_run(run[0].start, run[0].end, min_start, max_start, max_end, run.size(), busy,
                                         longest, 0, -1, 0, &is_longest))
      bar->label = is_longest ? run[longest_at].label : run[0].label;
    run.clear();
  };
  uint64_t t = 0;
  for (int i = 0; i < 20000; ++i) {
    // Mostly short calls close together, now and then a gap of a few columns or a long call.
    t += next(10) == 0 ? next(5'000'000) : next(20'000);
    const uint64_t dur = next(50) == 0 ? next(3'000'000) : next(30'000);
    Call c{t, t + dur, "call " + std::to_string(i)};
    t += dur;
    if (t > length) break;
    each.add(c.start, c.end, c.label);
    // A run goes on while it spans less than half a column (of the final scale: here known).
    const uint64_t lo = run.empty() ? c.start : std::min(run[0].start, c.start);
    if (!run.empty() && static_cast<double>(c.end - lo) * 2 * width >= static_cast<double>(length)) place_run();
    run.push_back(c);
  }
  place_run();
  EXPECT_EQ(each.calls(), runs.calls());
  const auto a = each.finish(), b = runs.finish();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 100u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].x0, b[i].x0) << i;
    EXPECT_EQ(a[i].x1, b[i].x1) << i;
    EXPECT_EQ(a[i].start_ns, b[i].start_ns) << i;
    EXPECT_EQ(a[i].end_ns, b[i].end_ns) << i;
    EXPECT_EQ(a[i].calls, b[i].calls) << i;
    EXPECT_EQ(a[i].busy_ns, b[i].busy_ns) << i;
    EXPECT_EQ(a[i].label, b[i].label) << i;
    EXPECT_EQ(a[i].label_ns, b[i].label_ns) << i;
  }
}
