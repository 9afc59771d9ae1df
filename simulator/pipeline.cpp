#include "simulator/internal/pipeline.hpp"

#include <algorithm>
#include <array>

namespace atvoss::simulator {
namespace {

constexpr int kMaxDepth = 8;
constexpr double kSimLoads = 6;  // loads simulated per tile before extrapolating
constexpr double kSimSteps = 6;  // steps simulated per load before extrapolating
constexpr int kSimTiles = 3;     // tiles simulated; the last gives the period

// Release times of a queue's buffer slots, used round-robin.
class Slots {
 public:
  explicit Slots(int depth) : depth_(std::clamp(depth, 1, kMaxDepth)) {}
  double next_free() const { return free_[next_]; }
  void fill(double release) {
    free_[next_] = release;
    next_ = (next_ + 1) % depth_;
  }
  void shift(double dt) {
    for (int i = 0; i < depth_; ++i) free_[i] += dt;
  }

 private:
  int depth_;
  int next_ = 0;
  std::array<double, kMaxDepth> free_{};
};

class Core {
 public:
  Core(const StageCosts& c, int depth) : c_(c), l1_(depth), l0_(depth), out_(depth) {}

  // Runs one tile; returns the time its output is in GM.
  double run_tile() {
    double compute_end = 0;
    double prev_load_end = 0;
    const int sim_loads = int(std::min(c_.loads, kSimLoads));
    for (int j = 0; j < sim_loads; ++j) {
      const double load_start = std::max(mte2_free_, l1_.next_free());
      const double load_end = load_start + c_.mte2_per_load;
      mte2_free_ = load_end;
      compute_end = run_steps(load_end, j == 0);
      l1_.fill(compute_end);
      if (j + 1 == sim_loads && c_.loads > kSimLoads) {
        // Steady state: every further load costs what the last one did.
        const double per_load = compute_end - prev_load_end;
        const double dt = per_load * (c_.loads - kSimLoads);
        shift_compute(dt);
        mte2_free_ += dt;
        l1_.shift(dt);
        compute_end += dt;
      }
      prev_load_end = compute_end;
    }
    return run_tail(compute_end);
  }

 private:
  double run_steps(double data_ready, bool first_load) {
    double end = 0, prev = 0;
    const int n = int(std::min(c_.steps_per_load, kSimSteps));
    for (int s = 0; s < n; ++s) {
      double ready = data_ready;
      if (c_.mte1_per_step > 0) {
        const double start = std::max({ready, mte1_free_, l0_.next_free()});
        mte1_free_ = start + c_.mte1_per_step;
        ready = mte1_free_;
      }
      if (c_.cube_per_step > 0) {
        double start = std::max(ready, cube_free_);
        if (first_load && s == 0) start = std::max(start, acc_free_);
        cube_free_ = start + c_.cube_per_step;
        ready = cube_free_;
      }
      l0_.fill(ready);
      if (c_.vec_per_step > 0) {
        double start = std::max(ready, vec_free_);
        if (first_load && s == 0) start = std::max(start, out_.next_free());
        vec_free_ = start + c_.vec_per_step;
        ready = vec_free_;
      }
      prev = end;
      end = ready;
    }
    if (c_.steps_per_load > kSimSteps) {
      const double dt = (end - prev) * (c_.steps_per_load - kSimSteps);
      shift_compute(dt);
      end += dt;
    }
    return end;
  }

  // The later steps of a load only occupy the compute side (MTE1, cube,
  // vector); MTE2 keeps prefetching into free slots meanwhile.
  void shift_compute(double dt) {
    mte1_free_ += dt;
    cube_free_ += dt;
    vec_free_ += dt;
    l0_.shift(dt);
  }

  double run_tail(double compute_end) {
    double t = compute_end;
    if (c_.fix_per_tile > 0) {
      t = std::max(t, fix_free_) + c_.fix_per_tile;
      fix_free_ = t;
    }
    acc_free_ = t;
    if (c_.epi_per_tile > 0) {
      t = std::max(t, vec_free_) + c_.epi_per_tile;
      vec_free_ = t;
    }
    if (c_.mte3_per_tile > 0) {
      t = std::max(t, mte3_free_) + c_.mte3_per_tile;
      mte3_free_ = t;
    }
    out_.fill(t);
    return t;
  }

  StageCosts c_;
  Slots l1_, l0_, out_;
  double mte2_free_ = 0, mte1_free_ = 0, cube_free_ = 0, vec_free_ = 0;
  double fix_free_ = 0, mte3_free_ = 0, acc_free_ = 0;
};

}  // namespace

StreamResult simulate_stream(const StageCosts& costs, int depth) {
  Core core(costs, depth);
  StreamResult r;
  double prev = 0, end = 0;
  for (int t = 0; t < kSimTiles; ++t) {
    prev = end;
    end = core.run_tile();
    if (t == 0) r.first_tile = end;
  }
  r.period = end - prev;
  const double steps = costs.loads * costs.steps_per_load;
  r.mte2_busy = costs.loads * costs.mte2_per_load;
  r.mte1_busy = steps * costs.mte1_per_step;
  r.cube_busy = steps * costs.cube_per_step;
  r.vec_busy = steps * costs.vec_per_step + costs.epi_per_tile;
  r.out_busy = costs.fix_per_tile + costs.mte3_per_tile;
  return r;
}

}  // namespace atvoss::simulator
