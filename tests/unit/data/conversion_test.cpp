#include <sys/resource.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "datasets/imagenet.hpp"
#include "datasets/progress.hpp"
#include "datasets/shard_plan.hpp"
#include "datasets/synth.hpp"
#include "datasets/verify.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

using namespace dptrain;
namespace fs = std::filesystem;

namespace {
// A fresh folder per test case, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("dptrain-conversion-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

data::Image gradient_image(int height, int width, int channels) {
  data::Image image{height, width, channels, {}};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        image.pixels.push_back(static_cast<std::uint8_t>(x * 150 / width + y * 60 / height + c * 20));
  return image;
}

double mean_abs_difference(const data::Image& a, const data::Image& b) {
  REQUIRE(a.pixels.size() == b.pixels.size());
  double total = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) total += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return total / static_cast<double>(a.pixels.size());
}

// A CMYK JPEG (stored Adobe-inverted values) compressed by TurboJPEG itself.
std::vector<std::uint8_t> cmyk_jpeg(int width, int height, const std::vector<std::uint8_t>& cmyk) {
  tjhandle compressor = tjInitCompress();
  REQUIRE(compressor != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;
  const int rc =
      tjCompress2(compressor, cmyk.data(), width, 0, height, TJPF_CMYK, &jpeg, &jpeg_size, TJSAMP_444, 100, 0);
  INFO(tjGetErrorStr2(compressor));
  REQUIRE(rc == 0);
  const std::vector<std::uint8_t> bytes(jpeg, jpeg + jpeg_size);
  tjFree(jpeg);
  REQUIRE(tjDestroy(compressor) == 0);
  return bytes;
}

constexpr int kClasses = 3, kPerClass = 6, kValPerClass = 2, kSize = 32;

fs::path make_synth_tree(const TempDir& dir) {
  datasets::SynthOptions o;
  o.output = (dir / "src").string();
  o.classes = kClasses;
  o.per_class = kPerClass;
  o.val_per_class = kValPerClass;
  o.size = 40;
  o.jobs = 2;
  datasets::write_synthetic_tree(o);
  return o.output;
}

datasets::ImagenetOptions convert_options(const fs::path& source, const fs::path& output) {
  datasets::ImagenetOptions o;
  o.source = source.string();
  o.output = output.string();
  o.size = kSize;
  o.train_shards = 2;
  o.validation_shards = 1;
  o.jobs = 2;
  o.progress = false;
  return o;
}

datasets::ImagenetReport convert(const datasets::ImagenetOptions& o, std::string* warnings = nullptr) {
  std::ostringstream out, warn;
  datasets::ImagenetReport report = datasets::convert_imagenet(o, out, warn);
  if (warnings) *warnings = warn.str();
  return report;
}

// What the converter should store for one source file, computed here without the converter.
data::Image expected_image(const fs::path& path) {
  const auto bytes = read_bytes(path);
  const data::Image decoded = data::decode_jpeg(bytes.data(), bytes.size(), 3, path.string());
  return data::center_crop(data::resize_shorter_side(decoded, kSize), kSize, kSize);
}

// Expected pixels of every image of a split, by class id (class c = the c-th wnid).
using ExpectedByClass = std::map<int, std::vector<std::vector<std::uint8_t>>>;
ExpectedByClass expected_by_class(const fs::path& source, const std::string& folder) {
  ExpectedByClass expected;
  for (int c = 0; c < kClasses; ++c) {
    const fs::path class_folder = source / folder / datasets::synthetic_wnid(c);
    std::vector<fs::path> files(fs::directory_iterator(class_folder), fs::directory_iterator{});
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) expected[c].push_back(expected_image(file).pixels);
  }
  return expected;
}

data::ShardHeader header_from_manifest(const data::Manifest& m, const std::string& split, std::size_t shard) {
  return data::expected_shard_header(m, split, shard);
}

struct StoredSample {
  int label;
  std::vector<std::uint8_t> pixels;  // raw pixels, or the JPEG bytes
};

// Every sample of a split, read through ShardReader (which validates each shard against the
// manifest), with the labels seen per shard.
std::vector<StoredSample> read_split(const fs::path& dir, const std::string& split,
                                     std::vector<std::set<int>>* classes_per_shard = nullptr) {
  const data::Manifest m = data::Manifest::read(dir.string());
  std::vector<StoredSample> samples;
  for (std::size_t i = 0; i < m.split(split).shards.size(); ++i) {
    const data::ShardReader reader((dir / m.split(split).shards[i].file).string(), header_from_manifest(m, split, i));
    std::set<int> seen;
    for (std::int64_t k = 0; k < reader.header().samples; ++k) {
      StoredSample s{reader.labels()[static_cast<std::size_t>(k)], {}};
      if (m.encoding == "raw") {
        s.pixels.resize(static_cast<std::size_t>(m.height * m.width * m.channels));
        reader.read_image(k, s.pixels.data());
      } else {
        s.pixels = reader.read_jpeg(k);
      }
      seen.insert(s.label);
      samples.push_back(std::move(s));
    }
    if (classes_per_shard) classes_per_shard->push_back(seen);
  }
  return samples;
}

// Each stored sample equals, bit for bit, a distinct source image of its own class, and every source
// image is stored once.
void check_samples_match(const std::vector<StoredSample>& stored, ExpectedByClass expected) {
  std::size_t total = 0;
  for (const auto& [label, images] : expected) total += images.size();
  REQUIRE(stored.size() == total);
  for (const StoredSample& s : stored) {
    auto& candidates = expected[s.label];
    const auto match = std::find(candidates.begin(), candidates.end(), s.pixels);
    INFO("a stored sample of class " << s.label << " matches no unused source image of that class");
    REQUIRE(match != candidates.end());
    candidates.erase(match);
  }
}

void flatten_validation(const fs::path& source) {
  for (int c = 0; c < kClasses; ++c) {
    const fs::path folder = source / "val" / datasets::synthetic_wnid(c);
    for (const auto& entry : fs::directory_iterator(folder)) {
      fs::rename(entry.path(), source / "val" / entry.path().filename());
    }
    fs::remove(folder);
  }
}

// Class id by flat validation file name, from the class folders before flattening.
std::map<std::string, int> validation_labels(const fs::path& source) {
  std::map<std::string, int> labels;
  for (int c = 0; c < kClasses; ++c) {
    for (const auto& entry : fs::directory_iterator(source / "val" / datasets::synthetic_wnid(c))) {
      labels[entry.path().filename().string()] = c;
    }
  }
  return labels;
}
}  // namespace

TEST_CASE("jpeg: encode then decode is close, in colour and in grey", "[data][jpeg]") {
  const data::Image rgb = gradient_image(30, 40, 3);
  const auto bytes = data::encode_jpeg(rgb, 95);
  const data::Image back = data::decode_jpeg(bytes.data(), bytes.size(), 3, "rgb.jpg");
  CHECK(back.height == 30);
  CHECK(back.width == 40);
  CHECK(back.channels == 3);
  CHECK(mean_abs_difference(rgb, back) < 4.0);

  const data::Image grey = gradient_image(17, 23, 1);
  const auto grey_bytes = data::encode_jpeg(grey, 95);
  const data::Image grey_back = data::decode_jpeg(grey_bytes.data(), grey_bytes.size(), 1, "grey.jpg");
  CHECK(grey_back.channels == 1);
  CHECK(mean_abs_difference(grey, grey_back) < 3.0);
  // A grey JPEG decoded as RGB repeats the grey value in each channel (ImageNet has grey files).
  const data::Image as_rgb = data::decode_jpeg(grey_bytes.data(), grey_bytes.size(), 3, "grey.jpg");
  REQUIRE(as_rgb.channels == 3);
  for (std::size_t p = 0; p < grey_back.pixels.size(); ++p) {
    REQUIRE(as_rgb.pixels[p * 3] == grey_back.pixels[p]);
    REQUIRE(as_rgb.pixels[p * 3 + 1] == grey_back.pixels[p]);
    REQUIRE(as_rgb.pixels[p * 3 + 2] == grey_back.pixels[p]);
  }
}

TEST_CASE("jpeg: a CMYK file decodes to RGB = inverted ink times inverted black", "[data][jpeg]") {
  // Four flat 8x8 blocks of stored (Adobe-inverted) CMYK values, compressed by TurboJPEG itself.
  const std::uint8_t blocks[4][4] = {
      {255, 255, 255, 255}, {200, 100, 50, 255}, {255, 128, 0, 128}, {90, 180, 240, 200}};
  std::vector<std::uint8_t> cmyk(16 * 16 * 4);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 4; ++c) cmyk[static_cast<std::size_t>((y * 16 + x) * 4 + c)] = blocks[(y / 8) * 2 + x / 8][c];
  const std::vector<std::uint8_t> bytes = cmyk_jpeg(16, 16, cmyk);
  CHECK_NOTHROW(data::check_jpeg(bytes.data(), bytes.size(), "cmyk.jpg"));
  const data::Image rgb = data::decode_jpeg(bytes.data(), bytes.size(), 3, "cmyk.jpg");
  REQUIRE(rgb.channels == 3);
  const data::Image grey = data::decode_jpeg(bytes.data(), bytes.size(), 1, "cmyk.jpg");
  for (int b = 0; b < 4; ++b) {
    const int y = (b / 2) * 8 + 4, x = (b % 2) * 8 + 4;  // the block's centre, away from DCT ringing
    const std::uint8_t* px = &rgb.pixels[static_cast<std::size_t>((y * 16 + x) * 3)];
    double expected_rgb[3];
    for (int c = 0; c < 3; ++c) {
      expected_rgb[c] = blocks[b][c] * blocks[b][3] / 255.0;
      INFO("block " << b << " channel " << c);
      CHECK(std::abs(px[c] - expected_rgb[c]) <= 3.0);
    }
    const double luma = 0.299 * expected_rgb[0] + 0.587 * expected_rgb[1] + 0.114 * expected_rgb[2];
    CHECK(std::abs(grey.pixels[static_cast<std::size_t>(y * 16 + x)] - luma) <= 3.0);
  }
}

TEST_CASE("jpeg: corrupt and truncated bytes throw an Error naming the file", "[data][jpeg]") {
  const auto bytes = data::encode_jpeg(gradient_image(128, 128, 3), 90);
  // Cut inside the entropy-coded data (the headers take the first ~600 bytes): libjpeg only warns
  // about this and fills in grey, which must still be an error.
  const std::vector<std::uint8_t> truncated(bytes.begin(),
                                            bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() * 3 / 4));
  REQUIRE(truncated.size() > 1000);
  CHECK_THROWS_WITH(data::decode_jpeg(truncated.data(), truncated.size(), 3, "/data/x/cut.JPEG"),
                    Catch::Contains("/data/x/cut.JPEG") && Catch::Contains("Premature end"));
  CHECK_THROWS_WITH(data::check_jpeg(truncated.data(), truncated.size(), "/data/x/cut.JPEG"),
                    Catch::Contains("/data/x/cut.JPEG"));
  const std::vector<std::uint8_t> garbage = {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13};
  CHECK_THROWS_AS(data::decode_jpeg(garbage.data(), garbage.size(), 3, "png.JPEG"), Error);
  CHECK_THROWS_WITH(data::check_jpeg(garbage.data(), garbage.size(), "png.JPEG"), Catch::Contains("png.JPEG"));
  CHECK_THROWS_WITH(data::decode_jpeg(nullptr, 0, 3, "empty.JPEG"), Catch::Contains("empty.JPEG"));
  CHECK_NOTHROW(data::check_jpeg(bytes.data(), bytes.size(), "good.JPEG"));
}

TEST_CASE("resize_shorter_side and center_crop", "[data][jpeg]") {
  SECTION("geometry keeps the aspect ratio") {
    const data::Image tall = gradient_image(100, 50, 3);
    const data::Image small = data::resize_shorter_side(tall, 25);
    CHECK(small.height == 50);
    CHECK(small.width == 25);
    const data::Image wide = data::resize_shorter_side(gradient_image(30, 40, 3), 32);
    CHECK(wide.height == 32);
    CHECK(wide.width == 43);  // 40 * 32 / 30 = 42.67
  }
  SECTION("a constant image stays constant, growing, shrinking a little and a lot") {
    data::Image flat{20, 30, 3, std::vector<std::uint8_t>(20 * 30 * 3, 77)};
    for (int side : {40, 15, 3}) {
      const data::Image out = data::resize_shorter_side(flat, side);
      CHECK(std::all_of(out.pixels.begin(), out.pixels.end(), [](std::uint8_t v) { return v == 77; }));
    }
  }
  SECTION("shrinking by more than 2x averages areas instead of aliasing") {
    // A one-pixel checkerboard shrunk 4x: each output pixel covers a 4x4 block, half black, half white.
    data::Image checker{8, 8, 1, {}};
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) checker.pixels.push_back((x + y) % 2 ? 255 : 0);
    const data::Image out = data::resize_shorter_side(checker, 2);
    REQUIRE(out.pixels.size() == 4);
    for (std::uint8_t v : out.pixels) CHECK(v == 128);  // 127.5 rounded
  }
  SECTION("bilinear when shrinking by 2x or less: pixel centres interpolate") {
    const data::Image out = data::resize_shorter_side(data::Image{2, 4, 1, {0, 100, 200, 255, 0, 100, 200, 255}}, 1);
    REQUIRE(out.width == 2);
    CHECK(out.pixels[0] == 50);   // halfway between 0 and 100
    CHECK(out.pixels[1] == 228);  // halfway between 200 and 255, rounded
  }
  SECTION("center_crop takes the middle") {
    data::Image image{4, 6, 1, {}};
    for (int i = 0; i < 24; ++i) image.pixels.push_back(static_cast<std::uint8_t>(i));
    const data::Image out = data::center_crop(image, 2, 2);
    CHECK(out.pixels == std::vector<std::uint8_t>{8, 9, 14, 15});
    CHECK_THROWS_AS(data::center_crop(image, 5, 2), Error);
  }
}

TEST_CASE("plan_shards: balanced, complete, every class in every shard, reproducible", "[data][convert]") {
  std::vector<std::int32_t> labels;
  for (int c = 0; c < 5; ++c)
    for (int i = 0; i < 7 + c; ++i) labels.push_back(c);
  const auto plan = datasets::plan_shards(labels, 4, 7, 1);
  REQUIRE(plan.size() == 4);
  std::vector<std::int64_t> all;
  for (const auto& shard : plan) {
    std::set<int> classes;
    for (std::int64_t i : shard) classes.insert(labels[static_cast<std::size_t>(i)]);
    CHECK(classes.size() == 5);
    CHECK(shard.size() >= labels.size() / 4);
    CHECK(shard.size() <= labels.size() / 4 + 1);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> every(labels.size());
  std::iota(every.begin(), every.end(), 0);
  CHECK(all == every);
  CHECK(datasets::plan_shards(labels, 4, 7, 1) == plan);
  CHECK(datasets::plan_shards(labels, 4, 8, 1) != plan);
  CHECK_THROWS_AS(datasets::plan_shards(labels, 1000, 7, 1), Error);
}

TEST_CASE("progress: plain lines about every 5% when not on a terminal", "[data][convert]") {
  std::ostringstream out;
  {
    datasets::Progress progress("converting", 100, true, false, out);
    for (int i = 0; i < 100; ++i) progress.add(1);
  }
  const std::string text = out.str();
  const auto lines = std::count(text.begin(), text.end(), '\n');
  CHECK(lines >= 19);
  CHECK(lines <= 21);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("100/100") != std::string::npos);
}

TEST_CASE("progress: a plain line at least every interval, however slow the 5% marks", "[data][convert]") {
  const char* saved = std::getenv("DPTRAIN_PROGRESS_SECONDS");
  const std::string before = saved ? saved : "";
  ::setenv("DPTRAIN_PROGRESS_SECONDS", "0", 1);  // every update is an interval late
  std::ostringstream out;
  {
    datasets::Progress progress("converting", 1000, true, false, out);
    for (int i = 0; i < 30; ++i) progress.add(1);  // 3%: no 5% mark reached
  }
  if (saved) {
    ::setenv("DPTRAIN_PROGRESS_SECONDS", before.c_str(), 1);
  } else {
    ::unsetenv("DPTRAIN_PROGRESS_SECONDS");
  }
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 31);  // one per item, then the final line
  CHECK(text.find("converting:   3% 30/1000") != std::string::npos);
}

TEST_CASE("synth writes an ImageNet-layout tree of real JPEGs", "[data][synth]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  for (int c = 0; c < kClasses; ++c) {
    const std::string wnid = datasets::synthetic_wnid(c);
    const fs::path train = source / "train" / wnid;
    CHECK(std::distance(fs::directory_iterator(train), fs::directory_iterator{}) == kPerClass);
    CHECK(std::distance(fs::directory_iterator(source / "val" / wnid), fs::directory_iterator{}) == kValPerClass);
    // Square, landscape and portrait in turn, all 40 pixels on the shorter side.
    const auto bytes = read_bytes(train / (wnid + "_1.JPEG"));
    const data::Image image = data::decode_jpeg(bytes.data(), bytes.size(), 3, "synth");
    CHECK(image.height == 40);
    CHECK(image.width == 53);
  }
  CHECK(datasets::synthetic_wnid(2) == "n00000002");
  std::ifstream mapping(source / "LOC_synset_mapping.txt");
  std::string first;
  std::getline(mapping, first);
  CHECK(first.rfind("n00000000 ", 0) == 0);
  // Same options, same bytes.
  TempDir again;
  const fs::path copy = make_synth_tree(again);
  CHECK(read_bytes(copy / "train/n00000001/n00000001_3.JPEG") ==
        read_bytes(source / "train/n00000001/n00000001_3.JPEG"));
}

TEST_CASE("convert imagenet (raw): every sample is its source image, every shard has every class", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  // ImageNet also holds grey and CMYK JPEGs; both must come out as RGB.
  {
    const fs::path grey_file = source / "train/n00000000/n00000000_0.JPEG";
    const auto bytes = read_bytes(grey_file);
    write_bytes(grey_file, data::encode_jpeg(data::decode_jpeg(bytes.data(), bytes.size(), 1, "grey"), 90));
    std::vector<std::uint8_t> cmyk;
    for (int p = 0; p < 50 * 40; ++p)
      for (int c = 0; c < 4; ++c) cmyk.push_back(static_cast<std::uint8_t>(c == 3 ? 230 : (p * (c + 1)) % 200 + 40));
    write_bytes(source / "train/n00000001/n00000001_0.JPEG", cmyk_jpeg(50, 40, cmyk));
  }
  const fs::path out = dir / "out";
  const datasets::ImagenetReport report = convert(convert_options(source, out));
  CHECK(report.classes == kClasses);
  CHECK(report.train_samples == kClasses * kPerClass);
  CHECK(report.validation_samples == kClasses * kValPerClass);
  CHECK(report.shards_written == 3);
  CHECK(report.skipped.empty());

  const data::Manifest m = data::Manifest::read(out.string());
  CHECK(m.name == "imagenet");
  CHECK(m.encoding == "raw");
  CHECK((m.height == kSize && m.width == kSize && m.channels == 3));
  REQUIRE(m.class_count() == kClasses);
  CHECK(m.classes[1].key == "n00000001");
  CHECK(m.classes[1].name == "synthetic class 1");
  CHECK(m.split("train").samples == kClasses * kPerClass);
  CHECK(m.split("train").shards.size() == 2);
  CHECK(m.split("train").shards[0].samples == 9);
  CHECK(m.split("train").shards[1].first_sample == 9);
  CHECK(m.split("validation").samples == kClasses * kValPerClass);
  for (const auto& [name, split] : m.splits)
    for (const auto& shard : split.shards) CHECK(shard.checksum == data::file_checksum((out / shard.file).string()));

  std::vector<std::set<int>> classes_per_shard;
  const auto train = read_split(out, "train", &classes_per_shard);
  for (const auto& classes : classes_per_shard) CHECK(classes.size() == kClasses);
  const ExpectedByClass expected = expected_by_class(source, "train");
  check_samples_match(train, expected);
  check_samples_match(read_split(out, "validation"), expected_by_class(source, "val"));

  // Mean and std over the train split, from the independently decoded images.
  double sum[3] = {}, squares[3] = {}, pixels = 0;
  for (const auto& [label, images] : expected) {
    for (const auto& image : images) {
      for (std::size_t p = 0; p < image.size(); p += 3) {
        for (int c = 0; c < 3; ++c) {
          sum[c] += image[p + static_cast<std::size_t>(c)];
          squares[c] += image[p + static_cast<std::size_t>(c)] * image[p + static_cast<std::size_t>(c)];
        }
        pixels += 1;
      }
    }
  }
  for (int c = 0; c < 3; ++c) {
    const double mean = sum[c] / pixels;
    CHECK(m.mean[static_cast<std::size_t>(c)] == Approx(mean).epsilon(1e-12));
    CHECK(m.stddev[static_cast<std::size_t>(c)] == Approx(std::sqrt(squares[c] / pixels - mean * mean)).epsilon(1e-9));
  }
}

TEST_CASE("convert imagenet (jpeg): shards hold the re-encoded images", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const fs::path out = dir / "out";
  auto options = convert_options(source, out);
  options.encoding = "jpeg";
  convert(options);
  const data::Manifest m = data::Manifest::read(out.string());
  CHECK(m.encoding == "jpeg");
  const auto stored = read_split(out, "train");
  for (const StoredSample& s : stored) {
    const data::Image image = data::decode_jpeg(s.pixels.data(), s.pixels.size(), 3, "stored");
    CHECK((image.height == kSize && image.width == kSize));
  }
  // Encoding is deterministic, so each stored JPEG is exactly the encoding of its source's crop.
  ExpectedByClass encoded;
  for (const auto& [label, images] : expected_by_class(source, "train")) {
    for (const auto& pixels : images) encoded[label].push_back(data::encode_jpeg({kSize, kSize, 3, pixels}, 90));
  }
  check_samples_match(stored, encoded);
}

TEST_CASE("convert imagenet: flat val labelled by LOC_val_solution.csv", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const ExpectedByClass expected = expected_by_class(source, "val");
  const auto labels = validation_labels(source);
  flatten_validation(source);
  {
    std::ofstream csv(source / "LOC_val_solution.csv");
    csv << "ImageId,PredictionString\n";
    for (const auto& [file, label] : labels) {
      csv << fs::path(file).stem().string() << "," << datasets::synthetic_wnid(label) << " 1 2 30 40 "
          << datasets::synthetic_wnid(label) << " 5 6 7 8\n";
    }
  }
  convert(convert_options(source, dir / "out"));
  check_samples_match(read_split(dir / "out", "validation"), expected);
}

TEST_CASE("convert imagenet: flat val labelled by the devkit's ground truth and a synset list", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const ExpectedByClass expected = expected_by_class(source, "val");
  const auto labels = validation_labels(source);  // sorted by file name, as the ground truth is
  flatten_validation(source);

  SECTION("synsets.txt in an order of its own (the devkit's ILSVRC ids are not sorted wnids)") {
    const int ilsvrc_id_of_class[kClasses] = {3, 1, 2};  // class c is on line ilsvrc_id_of_class[c]
    {
      std::ofstream synsets(source / "synsets.txt");
      synsets << datasets::synthetic_wnid(1) << "\n"
              << datasets::synthetic_wnid(2) << "\n"
              << datasets::synthetic_wnid(0) << "\n";
      std::ofstream truth(source / "ILSVRC2012_validation_ground_truth.txt");
      for (const auto& [file, label] : labels) truth << ilsvrc_id_of_class[label] << "\n";
    }
    convert(convert_options(source, dir / "out"));
    check_samples_match(read_split(dir / "out", "validation"), expected);
  }
  SECTION("LOC_synset_mapping.txt, with a warning about its order") {
    {
      std::ofstream truth(source / "ILSVRC2012_validation_ground_truth.txt");
      for (const auto& [file, label] : labels) truth << label + 1 << "\n";
    }
    std::string warnings;
    datasets::ImagenetOptions options = convert_options(source, dir / "out");
    convert(options, &warnings);
    CHECK(warnings.find("meta.mat") != std::string::npos);
    check_samples_match(read_split(dir / "out", "validation"), expected);
  }
  SECTION("a ground truth with the wrong number of lines is refused") {
    {
      std::ofstream truth(source / "ILSVRC2012_validation_ground_truth.txt");
      truth << "1\n2\n";
    }
    CHECK_THROWS_WITH(convert(convert_options(source, dir / "out")),
                      Catch::Contains("ILSVRC2012_validation_ground_truth.txt") && Catch::Contains("has 2 labels"));
  }
}

TEST_CASE("convert imagenet: a restart writes only the missing shard", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const fs::path out = dir / "out";
  const auto options = convert_options(source, out);
  convert(options);
  const data::Manifest before = data::Manifest::read(out.string());
  std::map<std::string, fs::file_time_type> times;
  for (const auto& [name, split] : before.splits)
    for (const auto& shard : split.shards) times[shard.file] = fs::last_write_time(out / shard.file);
  const std::string removed = before.split("train").shards[1].file;
  fs::remove(out / removed);

  const datasets::ImagenetReport report = convert(options);
  CHECK(report.shards_written == 1);
  CHECK(report.shards_reused == 2);
  for (const auto& [file, time] : times) {
    REQUIRE(fs::exists(out / file));
    if (file != removed) CHECK(fs::last_write_time(out / file) == time);
  }
  const data::Manifest after = data::Manifest::read(out.string());
  CHECK(after.mean == before.mean);
  CHECK(after.stddev == before.stddev);
  CHECK(after.split("train").shards[1].checksum == data::file_checksum((out / removed).string()));
  check_samples_match(read_split(out, "train"), expected_by_class(source, "train"));
  CHECK(datasets::verify_dataset(out.string()).ok());

  // A shard damaged since it was listed is written again, not adopted with its new checksum; so is
  // one damaged while a re-conversion was interrupted (the manifest then set aside, not yet rewritten).
  for (const bool interrupted : {false, true}) {
    const std::string damaged = before.split("train").shards[0].file;
    auto bytes = read_bytes(out / damaged);
    bytes[bytes.size() / 2] ^= 0x5a;
    write_bytes(out / damaged, bytes);
    const std::string damaged_checksum = data::file_checksum((out / damaged).string());
    if (interrupted) fs::rename(out / "manifest.json", out / ".manifest-previous.json");
    std::string notes;
    const datasets::ImagenetReport repaired = convert(options, &notes);
    INFO(notes);
    CHECK(repaired.shards_written == 1);
    CHECK(notes.find("writing " + (out / damaged).string() + " again") != std::string::npos);
    const data::Manifest again = data::Manifest::read(out.string());
    // The file written again (HDF5 stores creation times, so not byte for byte the first one).
    CHECK(again.split("train").shards[0].checksum == data::file_checksum((out / damaged).string()));
    CHECK(again.split("train").shards[0].checksum != damaged_checksum);
    CHECK(datasets::verify_dataset(out.string()).ok());
    CHECK(again.mean == before.mean);
    CHECK(again.stddev == before.stddev);
    CHECK_FALSE(fs::exists(out / ".manifest-previous.json"));
  }

  // A shard left by a conversion with other shard counts is pointed out, not silently kept.
  write_bytes(out / "train-00003-of-00007.h5", {1, 2, 3});
  std::string warnings;
  CHECK(convert(options, &warnings).shards_reused == 3);
  CHECK(warnings.find("train-00003-of-00007.h5 is not part of this conversion") != std::string::npos);
}

TEST_CASE("convert imagenet: corrupt JPEGs are skipped, named and counted", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const fs::path cut = source / "train/n00000001/n00000001_2.JPEG";
  const fs::path png = source / "val/n00000002/not_really.JPEG";
  const auto bytes = read_bytes(cut);
  write_bytes(cut,
              std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2)));
  write_bytes(png, {0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13, 'I', 'H', 'D', 'R'});

  std::string warnings;
  const datasets::ImagenetReport report = convert(convert_options(source, dir / "out"), &warnings);
  CHECK(report.skipped.size() == 2);
  CHECK(std::count(report.skipped.begin(), report.skipped.end(), cut.string()) == 1);
  CHECK(std::count(report.skipped.begin(), report.skipped.end(), png.string()) == 1);
  CHECK(warnings.find(cut.string()) != std::string::npos);
  CHECK(warnings.find(png.string()) != std::string::npos);
  CHECK(report.train_samples == kClasses * kPerClass - 1);
  CHECK(report.validation_samples == kClasses * kValPerClass);
  const data::Manifest m = data::Manifest::read((dir / "out").string());
  CHECK(m.split("train").samples == kClasses * kPerClass - 1);
  CHECK(read_split(dir / "out", "train").size() == kClasses * kPerClass - 1);
}

TEST_CASE("convert imagenet: layout errors name the folder", "[data][convert]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  SECTION("an empty class folder") {
    fs::create_directories(source / "train/n00000042");
    CHECK_THROWS_WITH(convert(convert_options(source, dir / "out")),
                      Catch::Contains((source / "train/n00000042").string()) && Catch::Contains("empty class folder"));
  }
  SECTION("a validation class that train/ does not have") {
    fs::rename(source / "val/n00000002", source / "val/n00000077");
    CHECK_THROWS_WITH(convert(convert_options(source, dir / "out")),
                      Catch::Contains((source / "val/n00000077").string()));
  }
}

TEST_CASE("verify: a good dataset passes; a truncated shard and a wrong checksum are named", "[data][verify]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const fs::path out = dir / "out";
  convert(convert_options(source, out));
  const datasets::VerifyReport good = datasets::verify_dataset(out.string());
  INFO(good.summary);
  CHECK(good.ok());
  CHECK(good.shards == 3);
  CHECK(good.samples == kClasses * (kPerClass + kValPerClass));

  const data::Manifest m = data::Manifest::read(out.string());
  SECTION("truncated shard") {
    const fs::path shard = out / m.split("train").shards[0].file;
    fs::resize_file(shard, fs::file_size(shard) / 2);
    const datasets::VerifyReport bad = datasets::verify_dataset(out.string());
    REQUIRE(bad.problems.size() == 1);
    CHECK_THAT(bad.problems[0], Catch::StartsWith(shard.string() + ": "));
  }
  SECTION("wrong checksum in the manifest") {
    data::Manifest edited = m;
    edited.splits["validation"].shards[0].checksum = "crc32:00000000";
    edited.write(out.string());
    const datasets::VerifyReport bad = datasets::verify_dataset(out.string());
    REQUIRE(bad.problems.size() == 1);
    CHECK_THAT(bad.problems[0],
               Catch::StartsWith((out / m.split("validation").shards[0].file).string()) && Catch::Contains("checksum"));
  }
  SECTION("missing shard") {
    fs::remove(out / m.split("train").shards[1].file);
    const datasets::VerifyReport bad = datasets::verify_dataset(out.string());
    REQUIRE(bad.problems.size() == 1);
    CHECK_THAT(bad.problems[0], Catch::Contains(m.split("train").shards[1].file) && Catch::Contains("missing"));
  }
}

TEST_CASE("convert imagenet: a class folder named in Latin-1 is refused, escaped, before any shard",
          "[data][convert][hostile]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  // Names that are bytes, not UTF-8: Latin-1 e-acute, a lone continuation byte, a truncated sequence.
  for (const std::string& bad : {std::string("caf\xe9"), std::string("x\x80y"), std::string("ab\xe2\x82")}) {
    const fs::path folder = source / "train" / bad;
    fs::create_directories(folder);
    fs::copy_file(source / "train/n00000001/n00000001_2.JPEG", folder / "a.JPEG");
    INFO(escaped_name(bad));
    CHECK_THROWS_WITH(convert(convert_options(source, dir / "out")),
                      Catch::Contains(escaped_name(folder.string())) && Catch::Contains("not valid UTF-8"));
    CHECK_FALSE(fs::exists(dir / "out/manifest.json"));
    if (fs::exists(dir / "out")) {
      for (const auto& e : fs::directory_iterator(dir / "out")) CHECK(e.path().extension() != ".h5");
    }
    fs::remove_all(folder);
  }
}

TEST_CASE("convert imagenet: dangling and looping .JPEG links are named in a warning", "[data][convert][hostile]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  const fs::path dangling = source / "train/n00000001/gone.JPEG";
  const fs::path loop = source / "train/n00000002/loop.JPEG";
  fs::create_symlink(source / "nowhere.JPEG", dangling);
  fs::create_symlink(loop, loop);
  std::string warnings;
  const datasets::ImagenetReport report = convert(convert_options(source, dir / "out"), &warnings);
  CHECK(report.train_samples == kClasses * kPerClass);
  CHECK_THAT(warnings, Catch::Contains(dangling.string() +
                                       ": a symbolic link that cannot be followed (No such file or directory)"));
  CHECK_THAT(warnings, Catch::Contains(loop.string() + ": a symbolic link that cannot be followed (Too many levels"));
}

TEST_CASE("shards and the manifest: a failed write names the file and the cause and leaves no temporary",
          "[data][convert][hostile]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = 600;  // fewer bytes than any shard
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  std::string message;
  try {
    convert(convert_options(source, dir / "out"));
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  CHECK_THAT(message, Catch::Contains("File too large") && Catch::Contains(".h5.tmp"));
  for (const auto& e : fs::directory_iterator(dir / "out")) CHECK(e.path().extension() != ".tmp");
}

TEST_CASE("manifest: an empty shard is refused as holding 0 samples", "[data][hostile]") {
  TempDir dir;
  const fs::path source = make_synth_tree(dir);
  convert(convert_options(source, dir / "out"));
  const fs::path manifest = dir / "out/manifest.json";
  std::ifstream in(manifest);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"samples\": ", text.find("\"shards\""));
  REQUIRE(at != std::string::npos);
  const auto end = text.find_first_of(",\n}", at + 11);
  text.replace(at + 11, end - (at + 11), "0");
  std::ofstream(manifest, std::ios::trunc) << text;
  CHECK_THROWS_WITH(data::Manifest::read((dir / "out").string()), Catch::Contains("holds 0 samples"));
}
