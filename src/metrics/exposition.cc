#include "metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace ringtrain::metrics {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // The shortest round-trip digits in %g's style, as Go's strconv 'g' (Prometheus' own
  // clients) writes them: 0.0005 and 16.384 rather than 5e-04.
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

namespace {

std::string Escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

bool NameChar(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) { return Escape(v, true); }
std::string EscapeHelp(std::string_view v) { return Escape(v, false); }

std::string FormatLabels(const Labels& labels, std::string_view extra_name, std::string_view extra_value) {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ',';
    out += name + "=\"" + EscapeLabelValue(value) + "\"";
  }
  if (!extra_name.empty()) {
    if (out.size() > 1) out += ',';
    out += std::string(extra_name) + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  return out + "}";
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, false)) return false;
  }
  return true;
}

}  // namespace ringtrain::metrics
