#include "dptrain/ckpt/progress_attributes.hpp"

#include "dptrain/hdf5/record_attributes.hpp"

namespace dptrain::ckpt {
void write_progress(hid_t group, const Progress& p) { h5::write_record_attributes(group, p); }

Progress read_progress(hid_t group, const std::string& path) {
  const std::string where = path + " /progress";
  Progress p;
  h5::read_record_attributes(group, p, where);
  DPTRAIN_CHECK(p.epoch >= 0 && p.global_step >= 0 && p.samples_in_epoch >= 0, where,
                ": epoch, global_step and samples_in_epoch must not be negative");
  DPTRAIN_CHECK(p.world_size > 0 && p.global_batch >= 0, where, ": world_size must be positive");
  return p;
}

void write_optimizer_attributes(hid_t group, const OptimizerState& o) { h5::write_record_attributes(group, o); }

OptimizerState read_optimizer_attributes(hid_t group, const std::string& path) {
  const std::string where = path + " /optimizer";
  OptimizerState o;
  h5::read_record_attributes(group, o, where);
  DPTRAIN_CHECK(o.type == "sgd", where, ": optimizer type '", o.type, "' is not known; this dptrain reads sgd");
  return o;
}

}  // namespace dptrain::ckpt
