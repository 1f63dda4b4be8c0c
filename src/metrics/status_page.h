// The chief's live page (GET /): one self-contained HTML file (inline CSS and
// JavaScript; no external scripts, fonts or images, so it works offline), compiled into
// the binary from status_page.html. It fetches /status.json and /history.json every 2 s
// and draws the cluster table and SVG curves of loss, accuracy and images/s.
//
// Threading: returns a constant; any thread.
#pragma once

#include <string_view>

namespace ringtrain::metrics {

std::string_view StatusPageHtml();

}  // namespace ringtrain::metrics
