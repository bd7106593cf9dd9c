// dptrain eval: scores a checkpoint (loss, top-1, top-5) on a split of a dataset, on one rank or many
// (srun / mpiexec). Rank 0 reads and validates the checkpoint and broadcasts how to build the model
// and then its weights; every rank scores its slice of each batch and the sums are reduced, so the
// result does not depend on the number of ranks.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include "backend_options.hpp"
#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/distributed/broadcast.hpp"
#include "dptrain/distributed/parameter_sync.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/evaluation.hpp"
#include "dptrain/train/memory_check.hpp"
#include "dptrain/train/run_config.hpp"
#include "dptrain/train/shared_manifest.hpp"
#include "dptrain/train/trainer.hpp"
#include "eval_images.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
struct EvalOptions {
  std::string checkpoint, data, split = "validation", json, images, logits;
  int batch = 64, threads = 0;
  distributed::JobOptions dist;
  BackendOptions device;
};

// What every rank needs to build the checkpoint's model, as rank 0 read it.
struct CheckpointModel {
  std::string path, model;
  std::int64_t step = 0;
  int crop = 0;  // 0: the dataset's image size
  bool aux_heads = true;
  double label_smoothing = 0;  // the loss is the one training reported

  template <class Self, class Visit>
  static void fields(Self& m, Visit&& visit) {
    visit(Field{"path"}, m.path);
    visit(Field{"model"}, m.model);
    visit(Field{"step"}, m.step);
    visit(Field{"crop"}, m.crop);
    visit(Field{"aux_heads"}, m.aux_heads);
    visit(Field{"label_smoothing"}, m.label_smoothing);
  }
};

CheckpointModel describe(const ckpt::TrainingState& state) {
  // The configuration `dptrain train` stored; a field it lacks keeps the training default.
  const TrainingRunConfig c = parse_stored_configuration(state.configuration, state.source + " configuration");
  CheckpointModel m;
  m.path = state.source;
  m.model = state.model;
  m.step = state.progress.global_step;
  m.crop = c.crop;
  m.aux_heads = c.aux_heads;
  m.label_smoothing = c.label_smoothing;
  return m;
}

// A checkpoint of another class count differs from the net only in the first dimension of its
// classifier's tensors: name the two counts instead of a tensor shape.
void check_classes(const ckpt::TrainingState& state, Net& net, const data::Manifest& manifest,
                   const std::string& directory) {
  const int classes = manifest.class_count();
  for (Parameter* p : net.parameters()) {
    const Shape& mine = p->value.shape();
    if (mine.rank() == 0 || mine[0] != classes) continue;
    const auto saved = std::find_if(state.parameters.begin(), state.parameters.end(),
                                    [&](const ckpt::NamedTensor& t) { return t.name == p->name; });
    if (saved == state.parameters.end()) continue;
    const Shape& theirs = saved->value.shape();
    if (theirs.rank() != mine.rank() || theirs[0] == mine[0]) continue;
    const bool only_classes = std::equal(mine.dims().begin() + 1, mine.dims().end(), theirs.dims().begin() + 1);
    DPTRAIN_CHECK(!only_classes, "checkpoint ", state.source, " holds a ", state.model, " for ", theirs[0],
                  " classes (its ", p->name, " is ", theirs.to_string(), "), but dataset '", manifest.name, "' in ",
                  directory, " has ", classes, " classes; evaluate it on data with the classes it was trained on");
  }
}

void write_json(const EvalOptions& o, const CheckpointModel& m, const data::Manifest& manifest, int ranks, int batch,
                const Evaluation& e) {
  std::ofstream file(o.json);
  DPTRAIN_CHECK(file.good(), "cannot write the evaluation result to '", o.json, "': ", std::strerror(errno));
  JsonLine j(file);
  j.field("checkpoint", m.path).field("model", m.model).field("step", m.step).field("dataset", manifest.name);
  j.field("data", o.data).field("split", o.split).field("world_size", ranks).field("batch_size", batch);
  j.field("samples", e.samples).field("loss", e.loss).field("top1", e.top1).field("top5", e.top5);
  j.field("seconds", e.seconds);
  j.close();
  file.flush();
  DPTRAIN_CHECK(file.good(), "writing the evaluation result to '", o.json, "' failed: ", std::strerror(errno));
}

int run_eval(const EvalOptions& o) {
  distributed::Job job(o.dist, visible_devices(o.device));
  if (!o.images.empty()) return run_eval_images({o.checkpoint, o.images, o.logits, o.batch, o.device}, job);
  DPTRAIN_CHECK(!o.data.empty(), "give --data (a dataset to score) or --images and --logits");
  distributed::Communicator& comm = job.communicator();
  const data::Manifest manifest = read_manifest(o.data, comm);
  // An unknown split is an error naming the known ones, before any work. A batch larger than the
  // split would be only padding: it is cut to the split before a net of that size is built (the
  // score is the same at every batch size), so --batch-size 1000000000 allocates nothing absurd.
  const std::int64_t split_samples = manifest.split(o.split).samples;
  const int batch = static_cast<int>(std::min<std::int64_t>(o.batch, std::max<std::int64_t>(split_samples, 1)));

  std::optional<ckpt::TrainingState> state;
  CheckpointModel m;
  if (job.is_root()) {
    const std::string path = ckpt::resolve_checkpoint_path(o.checkpoint);
    state = ckpt::read_checkpoint(path);
    ckpt::require_finite(*state, path);  // a diverged net's score means nothing, as resume refuses it
    m = describe(*state);
  }
  distributed::broadcast_record(m, comm);

  auto backend = make_backend(o.device, job);
  ModelConfig config;
  config.batch = batch;
  config.channels = manifest.channels;
  config.image_size = m.crop > 0 ? m.crop : std::min(manifest.height, manifest.width);
  config.classes = manifest.class_count();
  config.aux_heads = m.aux_heads;
  config.label_smoothing = static_cast<float>(m.label_smoothing);
  config.memory = memory_options(o.device, NetPurpose::inference);  // forward only: a fraction of training's memory
  check_memory_fits(m.model, config, o.device, *backend, job.topology().local_size(), comm.size());
  auto net = build_model(m.model, *backend, config);
  Trainer trainer(*net, TrainerConfig{});  // its optimizer only receives the checkpoint's momentum
  if (state) {
    check_classes(*state, *net, manifest, o.data);
    ckpt::apply_state(*state, m.model, *net, trainer.optimizer());
    state.reset();
  }
  distributed::broadcast_parameters(*net, comm);  // the weights and batch-norm statistics; no momentum

  data::LoaderConfig cfg;
  cfg.split = o.split;
  cfg.batch = batch;
  cfg.rank = job.rank();
  cfg.world_size = job.size();
  cfg.training = false;
  cfg.crop = config.image_size;
  cfg.flip = false;
  cfg.threads = loader_threads(o.threads, job, !backend->device().is_cpu());
  data::Loader loader(manifest, o.data, cfg);
  const Evaluation e = evaluate(*net, trainer, loader, comm, job.is_root() ? &std::cout : nullptr, "eval");

  if (job.is_root()) {
    std::cout << std::left << std::setw(12) << "checkpoint" << m.path << "\n"
              << std::setw(12) << "model" << m.model << " (" << config.image_size << "x" << config.image_size << "x"
              << config.channels << ", " << config.classes << " classes)\n"
              << std::setw(12) << "step" << m.step << "\n"
              << std::setw(12) << "split" << o.split << " of " << manifest.name << " (" << o.data << "), " << job.size()
              << " rank" << (job.size() == 1 ? "" : "s") << " x batch " << batch << ", " << backend->name() << ", "
              << o.device.precision << "\n"
              << std::setw(12) << "samples" << e.samples << "\n"
              << std::fixed << std::setprecision(4) << std::setw(12) << "loss" << e.loss << "\n"
              << std::setw(12) << "top-1" << e.top1 << "\n"
              << std::setw(12) << "top-5" << e.top5 << "\n"
              << std::setprecision(1) << std::setw(12) << "seconds" << e.seconds << "\n";
    if (!o.json.empty()) write_json(o, m, manifest, job.size(), batch, e);
  }
  return 0;
}
}  // namespace

Command add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval",
                                 "Score a checkpoint (loss, top-1, top-5) on a split of a dataset, on one "
                                 "process or many (srun, mpiexec)");
  auto o = std::make_shared<EvalOptions>();
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint (ckpt-*.h5) or checkpoint directory (its latest)")
      ->required();
  auto* data = cmd->add_option("--data", o->data, "Dataset directory made by 'dptrain data convert'")
                   ->check(CLI::ExistingDirectory);
  auto* images = cmd->add_option("--images", o->images,
                                 "Instead of --data: a safetensors file whose tensor 'images' [N, C, H, W] holds "
                                 "cropped, normalised images; the logits go to --logits (one process)")
                     ->check(CLI::ExistingFile)
                     ->excludes(data);
  cmd->add_option("--logits", o->logits, "With --images: the safetensors file to write the logits [N, classes] to")
      ->check(output_file())
      ->needs(images);
  images->needs(cmd->get_option("--logits"));
  cmd->add_option("--batch-size", o->batch, "Images per step on each rank (with --images: per forward pass)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--split", o->split, "The split to score")->capture_default_str();
  add_loader_threads_option(cmd, o->threads);
  cmd->add_option("--json", o->json, "Also write the result as one JSON object to this file (rank 0)")
      ->check(output_file());
  add_backend_options(cmd, o->device, false);
  add_distributed_options(cmd, o->dist);
  return [o] { return run_eval(*o); };
}

}  // namespace dptrain::app
