// Prometheus' text exposition format 0.0.4, the pieces every metric type shares: how a
// sample value, a label value and a help text are written, and what a valid metric or
// label name is (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Threading: pure functions. Errors: none (validity is a bool).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringtrain::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The shortest text that reads back as the same double ("1", "0.0005", "1e-05"); "NaN",
// "+Inf" and "-Inf" as the format spells them.
std::string FormatValue(double v);
// A label value between its double quotes: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view v);
// A # HELP text: backslash and newline escaped.
std::string EscapeHelp(std::string_view v);
// `{a="x",b="y"}` (empty for no labels), with `extra` appended as the last label
// (the histogram's le) when its name is not empty.
std::string FormatLabels(const Labels& labels, std::string_view extra_name = {}, std::string_view extra_value = {});

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__" (reserved for Prometheus).
bool IsValidLabelName(std::string_view name);

}  // namespace ringtrain::metrics
