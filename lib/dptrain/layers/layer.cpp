#include "dptrain/layers/layer.hpp"

namespace dptrain {

void Layer::check_input_count(std::span<const Shape> inputs, std::size_t expected) const {
  DPTRAIN_CHECK(inputs.size() == expected, who(), ": takes ", expected, " input(s) but was given ", inputs.size());
}

void Layer::check_input(const Tensor& t, const Shape& expected, std::size_t index) const {
  DPTRAIN_CHECK(t.shape() == expected, who(), ": input ", index, " has shape ", t.shape().to_string(),
                " but the layer was set up for ", expected.to_string());
}

}  // namespace dptrain
