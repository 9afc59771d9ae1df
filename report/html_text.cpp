#include "report/html_text.hpp"

#include <cmath>
#include <cstdio>

namespace atvoss::report {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(double v, int precision) {
  if (!std::isfinite(v)) return "&ndash;";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string fmt_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  return fmt(b, 1) + " " + units[u];
}

}  // namespace atvoss::report
