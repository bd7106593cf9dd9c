// Writing a checkpoint file: one contiguous float32 dataset per tensor, written straight from the
// host copy (no chunking or compression: weights do not compress, and the write is bandwidth-bound).
#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_layout.hpp"
#include "dptrain/ckpt/progress_attributes.hpp"
#include "dptrain/core/file_write.hpp"
#include "dptrain/hdf5/lock.hpp"

namespace dptrain::ckpt {
namespace {
h5::Handle create_group(hid_t parent, const char* name) {
  const h5::Handle create = h5::untimed_creation(H5P_GROUP_CREATE);
  return h5::Handle(DPTRAIN_H5_CHECK(H5Gcreate2(parent, name, H5P_DEFAULT, create.id(), H5P_DEFAULT)), H5Gclose);
}

void write_tensor(hid_t group, hid_t link_create, const NamedTensor& t, std::int64_t index) {
  DPTRAIN_CHECK(!t.name.empty() && t.name.front() != '/' && t.name.back() != '/', "tensor name '", t.name,
                "' cannot be stored in a checkpoint");
  DPTRAIN_CHECK(t.value.dtype() == DType::f32 && t.value.device().is_cpu() && t.value.layout() == Layout::plain,
                "checkpoint tensor ", t.name, " must be a plain f32 host tensor");
  const auto& shape = t.value.shape().dims();
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  h5::Handle space(
      DPTRAIN_H5_CHECK(dims.empty() ? H5Screate(H5S_SCALAR)
                                    : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)),
      H5Sclose);
  const h5::Handle create = h5::untimed_creation(H5P_DATASET_CREATE);
  h5::Handle set(DPTRAIN_H5_CHECK(H5Dcreate2(group, t.name.c_str(), H5T_IEEE_F32LE, space.id(), link_create,
                                             create.id(), H5P_DEFAULT)),
                 H5Dclose);
  if (t.value.bytes())
    DPTRAIN_H5_CHECK(H5Dwrite(set.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.value.raw()));
  h5::write_attribute(set.id(), "crc32", std::int64_t{tensor_crc32(t.value)});
  h5::write_attribute(set.id(), "index", index);
}

// A section: a group holding one dataset per tensor, nested at the '/' in the names.
void write_section(hid_t file, const char* name, const std::vector<NamedTensor>& tensors) {
  h5::Handle group = create_group(file, name);
  h5::write_attribute(group.id(), "count", static_cast<std::int64_t>(tensors.size()));
  h5::Handle link_create(DPTRAIN_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  DPTRAIN_H5_CHECK(H5Pset_create_intermediate_group(link_create.id(), 1));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    write_tensor(group.id(), link_create.id(), tensors[i], static_cast<std::int64_t>(i));
  }
}
}  // namespace

std::string checkpoint_file_image(const TrainingState& state) {
  const h5::Lock lock(h5::global_mutex());
  h5::quiet_errors();
  h5::Handle access = checkpoint_file_access();
  return h5::build_file_image(access.id(), [&](hid_t f) {
    h5::write_attribute(f, "format", std::string(kFormat));
    h5::write_attribute(f, "format_version", kFormatVersion);
    h5::write_attribute(f, "model", state.model);
    h5::write_attribute(f, "configuration", state.configuration);
    h5::write_attribute(f, "dptrain_version", state.dptrain_version);
    // Only where the run chose something by measuring (a GPU): CPU checkpoints stay as they were.
    if (!state.tuned_choices.empty()) h5::write_attribute(f, "tuned_choices", state.tuned_choices);
    write_section(f, kParamsGroup, state.parameters);
    write_section(f, kBuffersGroup, state.buffers);
    {
      h5::Handle optimizer = create_group(f, kOptimizerGroup);
      write_optimizer_attributes(optimizer.id(), state.optimizer);
    }
    write_section(f, kMomentumGroup, state.optimizer.momentum);
    {
      h5::Handle progress = create_group(f, kProgressGroup);
      write_progress(progress.id(), state.progress);
    }
  });
}

void write_checkpoint_file(const std::string& path, const TrainingState& state) {
  std::string image;
  try {
    image = checkpoint_file_image(state);
  } catch (const Error& e) {
    throw Error(detail::concat("writing checkpoint ", path, ": ", e.what()));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno_error("open", path);
  try {
    write_all(fd, image, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw_errno_error("close", path);
}

}  // namespace dptrain::ckpt
