// cuDNN descriptors' host-side checks (need the CUDA headers and libraries, not a GPU): a tensor
// beyond cuDNN's 2^31 - 1 elements is refused before cuDNN is called, naming the op and the remedy.
#include "dptrain/backend/cuda/descriptors.hpp"

#include <catch2/catch.hpp>

#include "dptrain/core/error.hpp"

using dptrain::DType;
using dptrain::Shape;
using dptrain::cuda::nchw_descriptor;

TEST_CASE("a tensor of more than 2^31 - 1 elements is refused naming the op, its shape and the remedy") {
  // ResNet-50's first convolution output at 2,731 images: 2731 x 64 x 112 x 112 = 2,192,490,496.
  const Shape huge{2731, 64, 112, 112};
  try {
    nchw_descriptor(huge, DType::bf16, "conv1");
    FAIL("no error for " << huge.to_string());
  } catch (const dptrain::Error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("conv1: ") == 0);
    CHECK(message.find(huge.to_string()) != std::string::npos);
    CHECK(message.find("2192490496 elements") != std::string::npos);
    CHECK(message.find("--batch-size") != std::string::npos);
  }
  // A shape of rank 5 is refused naming the op as well.
  CHECK_THROWS_WITH(nchw_descriptor(Shape{1, 1, 1, 1, 1}, DType::f32, "pool1"),
                    Catch::Contains("pool1: cuDNN cannot describe a tensor of shape"));
}
