// Text for the report's HTML: escaping and number formatting, shared by the page
// (html_report.cpp) and its graph-run section (graph_view.cpp). Pure functions.
#pragma once

#include <string>

namespace atvoss::report {

std::string esc(const std::string& s);         // &, <, >, " as entities
std::string fmt(double v, int precision = 2);  // "&ndash;" when not finite
std::string fmt_bytes(double b);               // "1.5 MB"

}  // namespace atvoss::report
