#include "dptrain/ckpt/progress_attributes.hpp"

#include <bit>
#include <vector>

#include "dptrain/hdf5/handle.hpp"

namespace dptrain::ckpt {
namespace {
// Milestones as a one-dimensional int64 attribute (an empty list is a null dataspace: a zero-length
// simple dataspace is not accepted for attributes by every HDF5 release).
void write_int_array(hid_t object, const char* name, const std::vector<std::int64_t>& values) {
  const hsize_t dims[1] = {values.size()};
  h5::Handle space(DPTRAIN_H5_CHECK(values.empty() ? H5Screate(H5S_NULL) : H5Screate_simple(1, dims, nullptr)), H5Sclose);
  h5::Handle attribute(DPTRAIN_H5_CHECK(H5Acreate2(object, name, H5T_STD_I64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT)),
                       H5Aclose);
  if (!values.empty()) DPTRAIN_H5_CHECK(H5Awrite(attribute.id(), H5T_NATIVE_INT64, values.data()));
}

std::vector<std::int64_t> read_int_array(hid_t object, const char* name, const std::string& path) {
  DPTRAIN_CHECK(H5Aexists(object, name) > 0, path, ": attribute '", name, "' is missing");
  h5::Handle attribute(DPTRAIN_H5_CHECK(H5Aopen(object, name, H5P_DEFAULT)), H5Aclose);
  h5::Handle space(DPTRAIN_H5_CHECK(H5Aget_space(attribute.id())), H5Sclose);
  const hssize_t count = DPTRAIN_H5_CHECK(H5Sget_simple_extent_npoints(space.id()));
  std::vector<std::int64_t> values(static_cast<std::size_t>(count));
  if (count > 0) DPTRAIN_H5_CHECK(H5Aread(attribute.id(), H5T_NATIVE_INT64, values.data()));
  return values;
}
}  // namespace

std::string schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant: return "constant";
    case ScheduleKind::step: return "step";
    case ScheduleKind::poly: return "poly";
    case ScheduleKind::cosine: return "cosine";
  }
  return "?";
}

void write_progress(hid_t group, const Progress& p) {
  h5::write_attribute(group, "epoch", p.epoch);
  h5::write_attribute(group, "global_step", p.global_step);
  h5::write_attribute(group, "samples_in_epoch", p.samples_in_epoch);
  // The seed is unsigned; its bits travel in an int64 and come back unchanged.
  h5::write_attribute(group, "seed", std::bit_cast<std::int64_t>(p.seed));
  h5::write_attribute(group, "global_batch", p.global_batch);
  h5::write_attribute(group, "world_size", p.world_size);
  h5::write_double_attribute(group, "loss_scale", p.loss_scale);
  h5::write_attribute(group, "loss_scale_clean_steps", p.loss_scale_clean_steps);
  const ScheduleConfig& s = p.schedule;
  h5::write_attribute(group, "lr_schedule", schedule_name(s.kind));
  h5::write_double_attribute(group, "lr_base", p.base_lr);
  h5::write_double_attribute(group, "lr_per_256", s.lr_per_256);
  h5::write_attribute(group, "lr_global_batch", s.global_batch);
  h5::write_attribute(group, "lr_total_steps", s.total_steps);
  h5::write_attribute(group, "lr_warmup_steps", s.warmup_steps);
  h5::write_double_attribute(group, "lr_warmup_start_factor", s.warmup_start_factor);
  write_int_array(group, "lr_milestones", s.milestones);
  h5::write_double_attribute(group, "lr_gamma", s.gamma);
  h5::write_double_attribute(group, "lr_poly_power", s.poly_power);
  h5::write_double_attribute(group, "lr_final", s.final_lr);
}

Progress read_progress(hid_t group, const std::string& path) {
  const std::string where = path + " /progress";
  Progress p;
  p.epoch = h5::read_int_attribute(group, "epoch", where);
  p.global_step = h5::read_int_attribute(group, "global_step", where);
  p.samples_in_epoch = h5::read_int_attribute(group, "samples_in_epoch", where);
  p.seed = std::bit_cast<std::uint64_t>(h5::read_int_attribute(group, "seed", where));
  p.global_batch = h5::read_int_attribute(group, "global_batch", where);
  p.world_size = h5::read_int_attribute(group, "world_size", where);
  p.loss_scale = h5::read_double_attribute(group, "loss_scale", where);
  // Added with mixed precision: checkpoints written before it come from runs without loss scaling.
  p.loss_scale_clean_steps = -1;
  if (H5Aexists(group, "loss_scale_clean_steps") > 0) {
    p.loss_scale_clean_steps = h5::read_int_attribute(group, "loss_scale_clean_steps", where);
  }
  ScheduleConfig& s = p.schedule;
  s.kind = parse_schedule(h5::read_string_attribute(group, "lr_schedule", where));
  p.base_lr = h5::read_double_attribute(group, "lr_base", where);
  s.lr_per_256 = h5::read_double_attribute(group, "lr_per_256", where);
  s.global_batch = h5::read_int_attribute(group, "lr_global_batch", where);
  s.total_steps = h5::read_int_attribute(group, "lr_total_steps", where);
  s.warmup_steps = h5::read_int_attribute(group, "lr_warmup_steps", where);
  s.warmup_start_factor = h5::read_double_attribute(group, "lr_warmup_start_factor", where);
  s.milestones = read_int_array(group, "lr_milestones", where);
  s.gamma = h5::read_double_attribute(group, "lr_gamma", where);
  s.poly_power = h5::read_double_attribute(group, "lr_poly_power", where);
  s.final_lr = h5::read_double_attribute(group, "lr_final", where);
  DPTRAIN_CHECK(p.epoch >= 0 && p.global_step >= 0 && p.samples_in_epoch >= 0, where,
                ": epoch, global_step and samples_in_epoch must not be negative");
  DPTRAIN_CHECK(p.world_size > 0 && p.global_batch >= 0, where, ": world_size must be positive");
  return p;
}

void write_optimizer_attributes(hid_t group, const OptimizerState& o) {
  h5::write_attribute(group, "type", o.type);
  h5::write_double_attribute(group, "momentum", o.sgd.momentum);
  h5::write_double_attribute(group, "weight_decay", o.sgd.weight_decay);
  h5::write_attribute(group, "nesterov", std::int64_t{o.sgd.nesterov});
  h5::write_attribute(group, "decay_all", std::int64_t{o.sgd.decay_all});
}

OptimizerState read_optimizer_attributes(hid_t group, const std::string& path) {
  const std::string where = path + " /optimizer";
  OptimizerState o;
  o.type = h5::read_string_attribute(group, "type", where);
  DPTRAIN_CHECK(o.type == "sgd", where, ": optimizer type '", o.type, "' is not known; this dptrain reads sgd");
  o.sgd.momentum = static_cast<float>(h5::read_double_attribute(group, "momentum", where));
  o.sgd.weight_decay = static_cast<float>(h5::read_double_attribute(group, "weight_decay", where));
  o.sgd.nesterov = h5::read_int_attribute(group, "nesterov", where) != 0;
  o.sgd.decay_all = h5::read_int_attribute(group, "decay_all", where) != 0;
  return o;
}

}  // namespace dptrain::ckpt
