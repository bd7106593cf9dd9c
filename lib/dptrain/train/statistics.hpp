#pragma once
#include <vector>

namespace dptrain {

// Summary of repeated measurements (images/sec of each step), as tf_cnn_benchmarks reports them:
// mean, standard error of the mean, and the spread (min, max).
struct Summary {
  double mean = 0, stderr_of_mean = 0, min = 0, max = 0;
  int count = 0;
};

Summary summarize(const std::vector<double>& values);

}  // namespace dptrain
