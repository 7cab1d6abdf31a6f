// A one-line progress bar on stderr (stdout stays clean for tables and JSON). On a
// terminal it redraws in place; into a file or pipe it writes a line per tenth, so
// logs of GPU jobs stay short.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace fdpp::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total)
      : label_(std::move(label)), total_(std::max<int64_t>(1, total)),
        tty_(::isatty(::fileno(stderr)) != 0), t0_(std::chrono::steady_clock::now()) {}
  // Left early (an error is about to be printed): end the line, claim nothing.
  ~ProgressBar() {
    if (!finished_ && tty_ && shown_ >= 0) std::fputc('\n', stderr);
  }

  // Moves `n` steps on; `note` (the shape or M being timed) is shown beside the bar.
  void step(const std::string& note = {}, int64_t n = 1) {
    done_ = std::min(total_, done_ + n);
    const int pct = static_cast<int>(100 * done_ / total_);
    if (tty_) {
      if (pct != shown_ || note != note_) draw(pct, note);
    } else if (pct / 10 != shown_ / 10) {
      std::fprintf(stderr, "%s: %3d%% (%.1f s)\n", label_.c_str(), pct, seconds());
      shown_ = pct;
    }
  }
  // The bar at 100% and its line ended; the total may have been an upper bound.
  void finish() {
    if (finished_) return;
    finished_ = true;
    done_ = total_;
    if (tty_) {
      draw(100, "");
      std::fputc('\n', stderr);
    } else if (shown_ < 100) {
      std::fprintf(stderr, "%s: 100%% (%.1f s)\n", label_.c_str(), seconds());
    }
  }

 private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  void draw(int pct, const std::string& note) {
    constexpr int kWidth = 30;
    const int fill = pct * kWidth / 100;
    std::string bar(static_cast<size_t>(fill), '#');
    bar.resize(kWidth, '.');
    // \033[K clears what a longer earlier note left on the line.
    std::fprintf(stderr, "\r%s [%s] %3d%% %5.1f s %s\033[K", label_.c_str(), bar.c_str(), pct,
                 seconds(), note.c_str());
    std::fflush(stderr);
    shown_ = pct;
    note_ = note;
  }

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  int shown_ = -1;
  bool tty_;
  bool finished_ = false;
  std::string note_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace fdpp::cli
