#pragma once
// What our tensors are called elsewhere. Our names are the stable names checkpoints use
// (`layer1.0/conv2/bn/scale`); torchvision's are its state_dict keys (`layer1.0.bn2.weight`) for the
// three models whose structure is exactly torchvision's: resnet50, inception-v3 and alexnet. The
// tensors' layouts are the same in both (convolution weights [out, in, kh, kw], linear weights
// [out, in] over the NCHW flattening), so a name is all that changes.
#include <optional>
#include <string>
#include <vector>

namespace dptrain::interop {

enum class NameStyle { dptrain, torchvision };

// "dptrain" or "torchvision"; anything else is an error listing them.
NameStyle parse_name_style(const std::string& text);
const char* to_string(NameStyle style);

// Whether torchvision has a model of exactly this structure (and so a name for each of its tensors).
bool has_torchvision_names(const std::string& model);
// The models that do, for messages.
std::vector<std::string> torchvision_models();

// A parameter's or buffer's name in `style`: ours unchanged, or torchvision's state_dict key (an
// error for a model without torchvision names, or a name the model does not have).
std::string external_name(const std::string& model, NameStyle style, const std::string& ours);

// torchvision keeps a step counter beside each batch norm's statistics (`bn1.num_batches_tracked`,
// int64, shape []); our batch norms have none. For a running-mean buffer, the counter's name.
std::optional<std::string> batch_count_name(const std::string& model, NameStyle style, const std::string& ours);

}  // namespace dptrain::interop
