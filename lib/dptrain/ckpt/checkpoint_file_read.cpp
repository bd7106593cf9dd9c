// Reading a checkpoint file. Nothing is trusted: a file cut short by a full disk, a flipped bit on a
// parallel file system or a file of another program must give one clear sentence, never a crash or a
// silently wrong resume.
#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_layout.hpp"
#include "dptrain/ckpt/progress_attributes.hpp"
#include "dptrain/hdf5/checks.hpp"
#include "dptrain/hdf5/lock.hpp"

namespace dptrain::ckpt {
namespace {
h5::Handle open_checkpoint(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  DPTRAIN_CHECK(!ec, "checkpoint ", path, ": cannot read it (", ec.message(), ")");
  DPTRAIN_CHECK(size > 0, "checkpoint ", path, " is empty (zero bytes): its writer was killed before writing it");
  h5::Handle access = checkpoint_file_access();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.id());
  H5Eclear2(H5E_DEFAULT);
  DPTRAIN_CHECK(id >= 0, "checkpoint ", path, " is not a readable HDF5 file (truncated or corrupt?)");
  h5::Handle file(id, H5Fclose);
  h5::check_self_contained(file.id(), path);
  return file;
}

h5::Handle open_group(hid_t file, const char* name, const std::string& path) {
  DPTRAIN_CHECK(H5Lexists(file, name, H5P_DEFAULT) > 0, path, ": has no group /", name);
  return h5::Handle(DPTRAIN_H5_CHECK(H5Gopen2(file, name, H5P_DEFAULT)), H5Gclose);
}

// The names (relative to the group) of every link below it: all hard links, since open_checkpoint
// refused a file with any other. The callback only collects: an exception must not cross HDF5's C
// frames.
herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

// No tensor of ours is larger than this (ResNet-50's largest weight is 9 MB; the largest zoo model's
// is about 400 MB): a bound on what a damaged shape can make us allocate.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{16} << 30;

NamedTensor read_tensor(hid_t set, const std::string& name, const std::string& dataset, const std::string& path) {
  h5::Handle type(DPTRAIN_H5_CHECK(H5Dget_type(set)), H5Tclose);
  DPTRAIN_CHECK(H5Tget_class(type.id()) == H5T_FLOAT && H5Tget_size(type.id()) == 4, path, ": dataset ", dataset,
                " is not float32");
  const std::string where = path + ": dataset " + dataset;
  h5::check_storage(set, where);
  const std::vector<hsize_t> dims = h5::dataset_dims(set);
  // The storage HDF5 allocated must hold the whole shape: a dataset cut short is caught before reading,
  // and a shape too large for any model before anything is allocated for it.
  const std::uint64_t needed = h5::checked_bytes(dims, sizeof(float), kMaxTensorBytes, where);
  const hsize_t stored = H5Dget_storage_size(set);
  DPTRAIN_CHECK(stored == needed, path, ": dataset ", dataset, " stores ", stored, " bytes but its shape needs ",
                needed);
  Tensor value = Tensor::empty(Shape(std::vector<std::int64_t>(dims.begin(), dims.end())));
  if (value.bytes()) DPTRAIN_H5_CHECK(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw()));
  const auto expected = static_cast<std::uint32_t>(h5::read_int_attribute(set, "crc32", path + " dataset " + dataset));
  const std::uint32_t actual = tensor_crc32(value);
  DPTRAIN_CHECK(actual == expected, path, ": dataset ", dataset, " fails its checksum (crc32 ", actual, ", expected ",
                expected, "): the file is corrupt");
  return {name, std::move(value)};
}

std::vector<NamedTensor> read_section(hid_t file, const char* section, const std::string& path) {
  h5::Handle group = open_group(file, section, path);
  const std::string where = path + " /" + section;
  const std::int64_t count = h5::read_int_attribute(group.id(), "count", where);
  std::vector<std::string> names;
  DPTRAIN_H5_CHECK(H5Lvisit(group.id(), H5_INDEX_NAME, H5_ITER_INC, collect_link, &names));
  std::vector<std::pair<std::int64_t, NamedTensor>> indexed;
  for (const std::string& name : names) {
    h5::Handle object(DPTRAIN_H5_CHECK(H5Oopen(group.id(), name.c_str(), H5P_DEFAULT)), H5Oclose);
    const H5I_type_t kind = H5Iget_type(object.id());
    if (kind == H5I_GROUP) continue;  // an intermediate group of a nested name
    const std::string dataset = std::string("/") + section + "/" + name;
    DPTRAIN_CHECK(kind == H5I_DATASET, path, ": ", dataset, " is neither a group nor a dataset");
    const std::int64_t index = h5::read_int_attribute(object.id(), "index", path + " dataset " + dataset);
    indexed.emplace_back(index, read_tensor(object.id(), name, dataset, path));
  }
  DPTRAIN_CHECK(static_cast<std::int64_t>(indexed.size()) == count, where, ": holds ", indexed.size(),
                " datasets but its count says ", count);
  std::sort(indexed.begin(), indexed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NamedTensor> tensors;
  for (std::size_t i = 0; i < indexed.size(); ++i) {
    DPTRAIN_CHECK(indexed[i].first == static_cast<std::int64_t>(i), where, ": dataset indices are not 0..", count - 1,
                  " (", indexed[i].second.name, " has ", indexed[i].first, ")");
    tensors.push_back(std::move(indexed[i].second));
  }
  return tensors;
}

void check_momentum(const TrainingState& s, const std::string& path) {
  std::unordered_map<std::string, const Tensor*> parameters;
  for (const NamedTensor& p : s.parameters) parameters.emplace(p.name, &p.value);
  for (const NamedTensor& m : s.optimizer.momentum) {
    const auto it = parameters.find(m.name);
    DPTRAIN_CHECK(it != parameters.end(), path, ": momentum buffer ", m.name, " belongs to no parameter");
    DPTRAIN_CHECK(it->second->shape() == m.value.shape(), path, ": momentum buffer ", m.name, " has shape ",
                  m.value.shape().to_string(), " but its parameter ", it->second->shape().to_string());
  }
}

TrainingState read_validated(const std::string& path) {
  h5::Handle file = open_checkpoint(path);
  const hid_t f = file.id();
  const std::string format = h5::read_string_attribute(f, "format", path);
  DPTRAIN_CHECK(format == kFormat, path, ": is not a dptrain checkpoint (format '", format, "')");
  const std::int64_t version = h5::read_int_attribute(f, "format_version", path);
  DPTRAIN_CHECK(version == kFormatVersion, path, ": checkpoint format version ", version, " is not ", kFormatVersion,
                ", the one this dptrain reads; use the dptrain that wrote it");
  TrainingState s;
  s.source = path;
  s.model = h5::read_string_attribute(f, "model", path);
  s.configuration = h5::read_string_attribute(f, "configuration", path);
  s.dptrain_version = h5::read_string_attribute(f, "dptrain_version", path);
  // Added with GPU resumes that continue bit for bit; absent from CPU runs and older checkpoints.
  if (h5::has_attribute(f, "tuned_choices")) s.tuned_choices = h5::read_string_attribute(f, "tuned_choices", path);
  s.parameters = read_section(f, kParamsGroup, path);
  s.buffers = read_section(f, kBuffersGroup, path);
  {
    h5::Handle optimizer = open_group(f, kOptimizerGroup, path);
    s.optimizer = read_optimizer_attributes(optimizer.id(), path);
  }
  s.optimizer.momentum = read_section(f, kMomentumGroup, path);
  {
    h5::Handle progress = open_group(f, kProgressGroup, path);
    s.progress = read_progress(progress.id(), path);
  }
  check_momentum(s, path);
  return s;
}
}  // namespace

TrainingState read_checkpoint(const std::string& path) {
  const h5::Lock lock(h5::global_mutex());
  h5::quiet_errors();
  try {
    return read_validated(path);
  } catch (const Error& e) {
    // HDF5 failures (a damaged object header) name the call, not the file: add it.
    const std::string message = e.what();
    if (message.find(path) != std::string::npos) throw;
    throw Error(detail::concat("checkpoint ", path, ": ", message));
  }
}

}  // namespace dptrain::ckpt
