#pragma once
#include <string>

namespace dptrain::app {

// dptrain inspect CKPT: a checkpoint's model, progress, configuration and per-tensor statistics, as a
// table or (json) as one JSON object. `path` is a ckpt-*.h5 file or a checkpoint directory (its latest).
int inspect_checkpoint(const std::string& path, bool json);

}  // namespace dptrain::app
