// Reading the tables of the documentation (Markdown) and the string literals of the
// sources, for the tests that hold a table in docs/ to the code it documents.
#pragma once

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace ringtrain::testing {

// The cells of every table row ("| a | b |") of `markdown`, trimmed, with the
// separator rows ("|---|") left out; `first_cell` keeps only rows whose first cell
// matches it.
inline std::vector<std::vector<std::string>> TableRows(const std::string& markdown, const std::regex& first_cell) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(markdown);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::string cell;
    bool in_code = false;
    for (size_t i = 1; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '`') in_code = !in_code;
      if (c == '|' && !in_code && line[i - 1] != '\\') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    for (std::string& c : cells) {
      const size_t b = c.find_first_not_of(' ');
      const size_t e = c.find_last_not_of(' ');
      c = b == std::string::npos ? std::string() : c.substr(b, e - b + 1);
    }
    if (cells.empty() || cells[0].find("---") == 0) continue;
    if (!std::regex_match(cells[0], first_cell)) continue;
    rows.push_back(cells);
  }
  return rows;
}

// `s` without backquotes.
inline std::string Unquoted(std::string s) {
  std::string out;
  for (char c : s) {
    if (c != '`') out += c;
  }
  return out;
}

// The contents of every string literal of a C++ source (comments left out; raw
// strings included), in order.
inline std::vector<std::string> StringLiterals(const std::string& s) {
  std::vector<std::string> out;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      const size_t e = s.find("*/", i + 2);
      if (e == std::string::npos) break;
      i = e + 2;
      continue;
    }
    if (s[i] == '\'') {
      size_t j = i + 1;
      while (j < n && s[j] != '\'') j += s[j] == '\\' ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (s[i] == '"') {
      if (i > 0 && s[i - 1] == 'R') {  // R"delim( ... )delim"
        const size_t open = s.find('(', i);
        if (open == std::string::npos) break;
        const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
        const size_t e = s.find(close, open);
        if (e == std::string::npos) break;
        out.push_back(s.substr(open + 1, e - open - 1));
        i = e + close.size();
        continue;
      }
      size_t j = i + 1;
      while (j < n && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      out.push_back(s.substr(i + 1, j - i - 1));
      i = j + 1;
      continue;
    }
    ++i;
  }
  return out;
}

// Every C++ source and header under `dir` (recursively), as paths relative to `root`.
inline std::vector<std::string> SourceFiles(const std::string& root, const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/" + dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cc" || ext == ".h" || ext == ".cu")) {
      files.push_back(std::filesystem::relative(e.path(), root).string());
    }
  }
  return files;
}

}  // namespace ringtrain::testing
