#pragma once
// Where a training step's time goes, layer by layer (`dptrain bench --layers`): step hooks that put a
// time mark of the backend (CUDA events on a GPU, the host clock on the CPU) before and after every
// layer's forward and backward work, resolved into milliseconds after each step. Used outside the
// timed steps of a benchmark: on a GPU each mark is an event on the compute stream, cheap but not free.
#include <memory>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/net/net.hpp"

namespace dptrain {

struct LayerTime {
  std::size_t node = 0;  // the layer's index in Net::nodes()
  std::string name, kind;
  Shape output;
  double forward_ms = 0, backward_ms = 0;  // mean over the profiled steps
};

struct LayerKindTime {
  std::string kind;
  int layers = 0;
  double forward_ms = 0, backward_ms = 0;
  double total_ms() const { return forward_ms + backward_ms; }
};

struct LayerProfile {
  int steps = 0;
  double step_ms = 0;             // a whole step, first mark to last (mean)
  double after_backward_ms = 0;   // from the end of the backward pass to the end of the step: the
                                  // gradients' sum over ranks, loss scaling, the update, the loss read
  std::vector<LayerTime> layers;  // in build order
  double layers_ms() const;       // the sum over every layer and pass
  // Per kind, the most time first.
  std::vector<LayerKindTime> by_kind() const;
};

class LayerProfiler final : public StepHooks {
 public:
  // Adds itself to `net`'s step hooks until destroyed.
  explicit LayerProfiler(Net& net);
  ~LayerProfiler() override;
  LayerProfiler(const LayerProfiler&) = delete;
  LayerProfiler& operator=(const LayerProfiler&) = delete;

  void step_starting() override;
  void layer_starting(std::size_t node, bool backward) override;
  void layer_finished(std::size_t node, bool backward) override;
  void backward_queued() override;
  // After Trainer::step returned: marks the step's end and adds its times (waits for the device).
  void step_finished();
  LayerProfile profile() const;

 private:
  struct Span {
    std::size_t node;
    bool backward;
    std::unique_ptr<TimeMark> start, end;
  };
  Net& net_;
  std::unique_ptr<TimeMark> step_start_, backward_end_;
  std::vector<Span> spans_;                       // this step's, in order
  std::vector<double> forward_ms_, backward_ms_;  // per node, summed over the steps
  double step_ms_ = 0, after_backward_ms_ = 0;
  int steps_ = 0;
};

}  // namespace dptrain
