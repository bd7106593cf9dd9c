#pragma once
// `dptrain bench --layers`: the tables of where a step's time goes (per layer kind, per layer) and of
// what cuDNN's algorithm searches found for every convolution (the best algorithm against the best
// deterministic one), as text.
#include <ostream>
#include <vector>

#include "dptrain/backend/tuned_choices.hpp"
#include "dptrain/train/layer_profile.hpp"

namespace dptrain::app {

void print_layer_tables(std::ostream& out, const LayerProfile& profile, const std::string& clock);
// Nothing where there were no searches (the CPU backend).
void print_convolution_searches(std::ostream& out, const std::vector<ConvolutionSearch>& searches);

}  // namespace dptrain::app
