#include "tuner/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace atvoss::tuner {
namespace {

std::string fmt_us(double us) {
  if (!std::isfinite(us) || us <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", us);
  return buf;
}

std::string speedup(double default_us, double best_us) {
  if (!std::isfinite(default_us) || !std::isfinite(best_us) || best_us <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", default_us / best_us);
  return buf;
}

std::string fmt_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const long t = std::lround(s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

Progress::Mode Progress::detect(bool quiet, std::FILE* out) {
  if (quiet) return Mode::quiet;
  return isatty(fileno(out)) ? Mode::terminal : Mode::plain;
}

Progress::Progress(Mode mode, int budget, std::chrono::seconds plain_interval, std::FILE* out)
    : mode_(mode), budget_(budget), interval_(plain_interval), out_(out) {}

void Progress::start(int start_trials) {
  start_trials_ = start_trials;
  started_ = std::chrono::steady_clock::now();
  last_plain_ = started_ - interval_;
}

double Progress::eta_seconds(int trials) const {
  const int done = trials - start_trials_;
  if (done <= 0) return NAN;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return elapsed / done * std::max(0, budget_ - trials);
}

std::string Progress::bar(int trials, int budget, double eta, int width) {
  const double frac = budget > 0 ? std::min(1.0, double(trials) / budget) : 1.0;
  const int filled = static_cast<int>(frac * width);
  std::string s = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " + std::to_string(trials) +
                  "/" + std::to_string(budget) + " trials  eta " + fmt_eta(eta);
  return s;
}

void Progress::update(const std::vector<TaskLine>& tasks, int trials, double objective_us,
                      double default_objective_us) {
  draw(tasks, trials, objective_us, default_objective_us, false);
}

void Progress::finish(const std::vector<TaskLine>& tasks, int trials, double objective_us,
                      double default_objective_us) {
  draw(tasks, trials, objective_us, default_objective_us, true);
}

void Progress::draw(const std::vector<TaskLine>& tasks, int trials, double objective_us, double default_objective_us,
                    bool final) {
  if (mode_ == Mode::quiet) return;
  const std::string overall = bar(trials, budget_, final ? 0.0 : eta_seconds(trials)) + "  end-to-end " +
                              fmt_us(objective_us) + " " + speedup(default_objective_us, objective_us);
  if (mode_ == Mode::plain) {
    const auto now = std::chrono::steady_clock::now();
    if (!final && now - last_plain_ < interval_) return;
    last_plain_ = now;
    std::fprintf(out_, "%s%s\n", final ? "done: " : "", overall.c_str());
    std::fflush(out_);
    return;
  }
  std::string text;
  if (lines_drawn_ > 0) text += "\x1b[" + std::to_string(lines_drawn_) + "F";  // back to the top
  for (const auto& t : tasks) {
    char line[256];
    std::snprintf(line, sizeof line, "\x1b[2K%-28.28s %5d trials  best %-12s %s%s\n", t.name.c_str(), t.trials,
                  fmt_us(t.best_us).c_str(), speedup(t.default_us, t.best_us).c_str(), t.finished ? "  (done)" : "");
    text += line;
  }
  text += "\x1b[2K" + overall + "\n";
  lines_drawn_ = static_cast<int>(tasks.size()) + 1;
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

}  // namespace atvoss::tuner
