#include "datasets/synth.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <thread>

#include "datasets/parallel.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"
#include "dptrain/data/jpeg.hpp"

namespace dptrain::datasets {
namespace {
namespace fs = std::filesystem;

struct Rgb {
  double r, g, b;
};

// A saturated colour for hue h in [0, 1) (HSV with s = 0.75, v = 0.9).
Rgb hue_colour(double h) {
  const double v = 0.9, s = 0.75, sector = h * 6.0;
  const double f = sector - std::floor(sector), p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (static_cast<int>(sector) % 6) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

data::Image make_image(const SynthOptions& o, int label, int split, int index) {
  // One Philox stream per image: any image can be made on its own, by any thread, identically.
  const CounterRng rng(o.seed, (std::uint64_t(split) << 48) ^ (std::uint64_t(label) << 24) ^ std::uint64_t(index));
  const int long_side = o.size * 4 / 3;
  data::Image image;
  image.channels = 3;
  image.height = index % 3 == 2 ? long_side : o.size;
  image.width = index % 3 == 1 ? long_side : o.size;
  image.pixels.resize(static_cast<std::size_t>(image.height) * static_cast<std::size_t>(image.width) * 3);

  const Rgb colour = hue_colour(static_cast<double>(label) / o.classes);
  // The golden angle spreads the stripe directions of successive classes evenly.
  const double angle = std::fmod(label * 2.39996322972865332, std::numbers::pi);
  const double cycles = 2.0 + label % 4;  // stripes across the shorter side
  const double phase = 2 * std::numbers::pi * rng.uniform(0);
  const double dx = std::cos(angle), dy = std::sin(angle);
  std::uint64_t draw = 1;
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const double t = (x * dx + y * dy) / o.size;
      const double shade = 0.65 + 0.35 * std::sin(2 * std::numbers::pi * cycles * t + phase);
      const double channel[3] = {colour.r, colour.g, colour.b};
      for (int c = 0; c < 3; ++c) {
        const double value = 255.0 * channel[c] * shade + 14.0 * rng.normal(draw++);
        image.pixels[(static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) +
                      static_cast<std::size_t>(x)) *
                         3 +
                     static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
      }
    }
  }
  return image;
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  DPTRAIN_CHECK(out.good(), path.string(), ": cannot create the file");
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  DPTRAIN_CHECK(out.good(), path.string(), ": writing failed (disk full?)");
}

void make_folder(const fs::path& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  DPTRAIN_CHECK(!error && fs::is_directory(folder), folder.string(), ": cannot create the folder (",
                error ? error.message() : "a file is in the way", ")");
}
}  // namespace

std::string synthetic_wnid(int c) {
  char text[16];
  std::snprintf(text, sizeof text, "n%08d", c);
  return text;
}

SynthReport write_synthetic_tree(const SynthOptions& o) {
  DPTRAIN_CHECK(o.classes >= 2 && o.classes <= 100000, "--classes must be between 2 and 100000, not ", o.classes);
  DPTRAIN_CHECK(o.per_class >= 1, "--per-class must be at least 1, not ", o.per_class);
  DPTRAIN_CHECK(o.val_per_class >= 1, "--val-per-class must be at least 1, not ", o.val_per_class);
  DPTRAIN_CHECK(o.size >= 8 && o.size <= 4096, "--size must be between 8 and 4096, not ", o.size);
  const fs::path root(o.output);
  for (int c = 0; c < o.classes; ++c) {
    make_folder(root / "train" / synthetic_wnid(c));
    make_folder(root / "val" / synthetic_wnid(c));
  }
  {
    std::ofstream mapping(root / "LOC_synset_mapping.txt", std::ios::trunc);
    for (int c = 0; c < o.classes; ++c) mapping << synthetic_wnid(c) << " synthetic class " << c << "\n";
    mapping.flush();
    DPTRAIN_CHECK(mapping.good(), (root / "LOC_synset_mapping.txt").string(), ": writing failed");
  }

  const std::int64_t train = std::int64_t{o.classes} * o.per_class;
  const std::int64_t validation = std::int64_t{o.classes} * o.val_per_class;
  const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  parallel_for(train + validation, jobs, [&](std::int64_t n) {
    fs::path path;
    data::Image image;
    if (n < train) {
      const int label = static_cast<int>(n / o.per_class), i = static_cast<int>(n % o.per_class);
      image = make_image(o, label, 0, i);
      path = root / "train" / synthetic_wnid(label) / (synthetic_wnid(label) + "_" + std::to_string(i) + ".JPEG");
    } else {
      // Classes interleaved in the numbering, as in ILSVRC2012, where file order says nothing of the class.
      const std::int64_t v = n - train;
      const int label = static_cast<int>(v % o.classes), i = static_cast<int>(v / o.classes);
      image = make_image(o, label, 1, i);
      char name[48];
      std::snprintf(name, sizeof name, "ILSVRC2012_val_%08lld.JPEG", static_cast<long long>(v + 1));
      path = root / "val" / synthetic_wnid(label) / name;
    }
    write_bytes(path, data::encode_jpeg(image, 90));
  });
  return {train, validation};
}

}  // namespace dptrain::datasets
