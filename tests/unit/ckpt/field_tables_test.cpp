// The field tables of the records a checkpoint and a shard hold: every field round-trips through
// every form it is stored or sent in, and the format tables of the documentation name every field.
#include <catch2/catch.hpp>

#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/data/shard.hpp"
#include "support/field_testing.hpp"

namespace dptrain {
namespace {
const std::filesystem::path kSource = DPTRAIN_SOURCE_DIR;

TEST_CASE("Progress: every field round-trips and is documented", "[ckpt][fields]") {
  testing::check_field_table<ckpt::Progress>(kSource / "docs" / "checkpoints.md");
}

TEST_CASE("the optimizer's attributes round-trip and are documented", "[ckpt][fields]") {
  testing::check_field_table<ckpt::OptimizerState>(kSource / "docs" / "checkpoints.md");
}

TEST_CASE("the shard header round-trips and is documented", "[data][fields]") {
  testing::check_field_table<data::ShardHeader>(kSource / "datasets" / "README.md");
}

TEST_CASE("a record that is missing a required field names it; an optional one keeps its default", "[ckpt][fields]") {
  ckpt::Progress p;
  testing::fill_distinct(p);
  nlohmann::json j = record_json(p);
  j.erase("loss_scale_clean_steps");
  ckpt::Progress back;
  read_record_json(j, back, "where");
  CHECK(back.loss_scale_clean_steps == -1);
  CHECK(back.global_step == p.global_step);
  j.erase("global_step");
  CHECK_THROWS_WITH(read_record_json(j, back, "where"), Catch::Contains("where: 'global_step' is missing"));
  j = record_json(p);
  j["epoch"] = "three";
  CHECK_THROWS_WITH(read_record_json(j, back, "where"), Catch::Contains("'epoch' has the wrong type"));
  j = record_json(p);
  j["seed"] = -1;  // an unsigned field
  CHECK_THROWS_WITH(read_record_json(j, back, "where"), Catch::Contains("'seed' has the wrong type"));
}

TEST_CASE("record bytes of another length are refused", "[ckpt][fields]") {
  ckpt::Progress p;
  std::vector<char> bytes = record_bytes(p);
  ckpt::Progress back;
  bytes.push_back(0);
  CHECK_THROWS_WITH(read_record_bytes(bytes, back), Catch::Contains("beyond its fields"));
  bytes.resize(bytes.size() - 9);
  CHECK_THROWS_WITH(read_record_bytes(bytes, back), Catch::Contains("ends before its fields do"));
}

}  // namespace
}  // namespace dptrain
