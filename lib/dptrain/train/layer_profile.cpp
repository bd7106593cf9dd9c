#include "dptrain/train/layer_profile.hpp"

#include <algorithm>
#include <map>

namespace dptrain {

double LayerProfile::layers_ms() const {
  double sum = 0;
  for (const LayerTime& t : layers) sum += t.forward_ms + t.backward_ms;
  return sum;
}

std::vector<LayerKindTime> LayerProfile::by_kind() const {
  std::map<std::string, LayerKindTime> kinds;
  for (const LayerTime& t : layers) {
    LayerKindTime& k = kinds[t.kind];
    k.kind = t.kind;
    ++k.layers;
    k.forward_ms += t.forward_ms;
    k.backward_ms += t.backward_ms;
  }
  std::vector<LayerKindTime> out;
  for (auto& [kind, time] : kinds) out.push_back(time);
  std::stable_sort(out.begin(), out.end(),
                   [](const LayerKindTime& a, const LayerKindTime& b) { return a.total_ms() > b.total_ms(); });
  return out;
}

LayerProfiler::LayerProfiler(Net& net)
    : net_(net), forward_ms_(net.nodes().size(), 0.0), backward_ms_(net.nodes().size(), 0.0) {
  net_.add_step_hooks(*this);
}

LayerProfiler::~LayerProfiler() { net_.remove_step_hooks(*this); }

void LayerProfiler::step_starting() {
  spans_.clear();
  backward_end_.reset();
  step_start_ = net_.backend().time_mark();
}

void LayerProfiler::layer_starting(std::size_t node, bool backward) {
  if (!step_start_) return;  // a pass outside a training step (an evaluation): not profiled
  spans_.push_back({node, backward, net_.backend().time_mark(), nullptr});
}

void LayerProfiler::layer_finished(std::size_t node, bool backward) {
  if (!step_start_) return;
  DPTRAIN_CHECK(
      !spans_.empty() && spans_.back().node == node && spans_.back().backward == backward && !spans_.back().end,
      "LayerProfiler: layer ", node, " finished without starting");
  spans_.back().end = net_.backend().time_mark();
}

void LayerProfiler::backward_queued() {
  if (step_start_) backward_end_ = net_.backend().time_mark();
}

void LayerProfiler::step_finished() {
  DPTRAIN_CHECK(step_start_ && backward_end_, "LayerProfiler::step_finished: no training step was profiled");
  const std::unique_ptr<TimeMark> end = net_.backend().time_mark();
  for (Span& span : spans_) {
    DPTRAIN_CHECK(span.end != nullptr, "LayerProfiler: layer ", span.node, " never finished");
    const double ms = span.end->milliseconds_since(*span.start);
    (span.backward ? backward_ms_ : forward_ms_).at(span.node) += ms;
  }
  step_ms_ += end->milliseconds_since(*step_start_);
  after_backward_ms_ += end->milliseconds_since(*backward_end_);
  ++steps_;
  spans_.clear();
  step_start_.reset();
  backward_end_.reset();
}

LayerProfile LayerProfiler::profile() const {
  LayerProfile p;
  p.steps = steps_;
  if (steps_ == 0) return p;
  const double per = 1.0 / steps_;
  p.step_ms = step_ms_ * per;
  p.after_backward_ms = after_backward_ms_ * per;
  const auto& nodes = net_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].layer) continue;
    LayerTime t;
    t.node = i;
    t.name = nodes[i].layer->name();
    t.kind = nodes[i].layer->kind();
    t.output = nodes[i].shape;
    t.forward_ms = forward_ms_[i] * per;
    t.backward_ms = backward_ms_[i] * per;
    p.layers.push_back(std::move(t));
  }
  return p;
}

}  // namespace dptrain
