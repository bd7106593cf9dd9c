#include "dptrain/data/manifest.hpp"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "dptrain/core/file_write.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain::data {
namespace {
using json = nlohmann::json;

// Reads a required field with the expected JSON type, or fails naming the file and the field.
template <typename T>
T field(const json& object, const char* key, const std::string& where, const std::string& path) {
  DPTRAIN_CHECK(object.is_object() && object.contains(key), path, ": field '", where, key, "' is missing");
  try {
    return object.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(
        detail::concat(path, ": field '", where, key, "' has the wrong type (", object.at(key).type_name(), ")"));
  }
}
}  // namespace

Manifest Manifest::read(const std::string& directory) {
  const std::string path = (std::filesystem::path(directory) / "manifest.json").string();
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), path, ": cannot open the dataset manifest (", std::strerror(errno), "; is '", directory,
                "' a directory made by 'dptrain data convert'?)");
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  DPTRAIN_CHECK(!ec && static_cast<std::int64_t>(bytes) <= ManifestLimits::file_bytes, path, ": the manifest is ",
                ec ? std::string("unreadable") : detail::concat(bytes, " bytes"), ", more than a dataset manifest (",
                ManifestLimits::file_bytes, " bytes at most) can be");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Manifest Manifest::parse(const std::string& json_text, const std::string& path) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error(detail::concat(path, ": not valid JSON (", e.what(), ")"));
  }
  const auto format = field<std::string>(j, "format", "", path);
  DPTRAIN_CHECK(format == kManifestFormat, path, ": format is '", format, "', not '", kManifestFormat, "'");
  const int version = field<int>(j, "version", "", path);
  DPTRAIN_CHECK(version == kManifestVersion, path, ": manifest format version ", version,
                " is not supported (this dptrain reads version ", kManifestVersion, "); convert the dataset again");
  Manifest m;
  m.name = field<std::string>(j, "name", "", path);
  const json image = field<json>(j, "image", "", path);
  m.height = field<int>(image, "height", "image.", path);
  m.width = field<int>(image, "width", "image.", path);
  m.channels = field<int>(image, "channels", "image.", path);
  DPTRAIN_CHECK(m.height > 0 && m.width > 0 && (m.channels == 1 || m.channels == 3), path, ": image geometry ",
                m.height, "x", m.width, "x", m.channels, " is not valid");
  DPTRAIN_CHECK(m.height <= ManifestLimits::side && m.width <= ManifestLimits::side, path, ": images of ", m.height,
                "x", m.width, " are larger than the ", ManifestLimits::side, " pixels a side dptrain reads");
  m.encoding = field<std::string>(j, "encoding", "", path);
  DPTRAIN_CHECK(m.encoding == "raw" || m.encoding == "jpeg", path, ": encoding '", m.encoding,
                "' is neither 'raw' nor 'jpeg'");
  m.mean = field<std::vector<double>>(j, "mean", "", path);
  m.stddev = field<std::vector<double>>(j, "std", "", path);
  DPTRAIN_CHECK(static_cast<int>(m.mean.size()) == m.channels && static_cast<int>(m.stddev.size()) == m.channels, path,
                ": 'mean' and 'std' need one value per channel (", m.channels, ")");
  for (double s : m.stddev) DPTRAIN_CHECK(std::isfinite(s) && s > 0, path, ": 'std' values must be positive");
  for (double v : m.mean) DPTRAIN_CHECK(std::isfinite(v), path, ": 'mean' values must be finite");
  const json classes = field<json>(j, "classes", "", path);
  DPTRAIN_CHECK(classes.is_array() && static_cast<std::int64_t>(classes.size()) <= ManifestLimits::classes, path,
                ": 'classes' must be a list of at most ", ManifestLimits::classes, " classes");
  for (const json& c : classes) {
    ClassInfo info{field<int>(c, "id", "classes[].", path), field<std::string>(c, "key", "classes[].", path),
                   field<std::string>(c, "name", "classes[].", path)};
    DPTRAIN_CHECK(info.id == static_cast<int>(m.classes.size()), path, ": class ids must be 0, 1, 2, ... in order");
    m.classes.push_back(std::move(info));
  }
  DPTRAIN_CHECK(m.classes.size() >= 2, path, ": a dataset needs at least two classes");
  // Named, not a temporary: a range-for does not extend the life of a temporary that `.items()` is
  // called on (before C++23), and the loop would read a destroyed object.
  const json splits = field<json>(j, "splits", "", path);
  for (const auto& [name, s] : splits.items()) {
    SplitInfo split;
    const std::string where = "splits." + name + ".";
    split.samples = field<std::int64_t>(s, "samples", where, path);
    DPTRAIN_CHECK(split.samples >= 0 && split.samples <= ManifestLimits::split_samples, path, ": split '", name,
                  "' says ", split.samples, " samples (0 to ", ManifestLimits::split_samples, ")");
    const json shards = field<json>(s, "shards", where, path);
    DPTRAIN_CHECK(shards.is_array() && static_cast<std::int64_t>(shards.size()) <= ManifestLimits::shards, path,
                  ": split '", name, "' must list at most ", ManifestLimits::shards, " shards");
    std::int64_t next = 0;
    for (const json& shard : shards) {
      ShardInfo info{field<std::string>(shard, "file", where + "shards[].", path),
                     field<std::int64_t>(shard, "samples", where + "shards[].", path),
                     field<std::int64_t>(shard, "first_sample", where + "shards[].", path),
                     field<std::string>(shard, "checksum", where + "shards[].", path)};
      DPTRAIN_CHECK(info.samples > 0, path, ": shard '", info.file, "' of split '", name, "' holds ", info.samples,
                    " samples; a shard holds at least one (reconvert the dataset)");
      DPTRAIN_CHECK(info.first_sample == next, path, ": shard '", info.file,
                    "' does not continue where the previous shard of split '", name, "' ended");
      DPTRAIN_CHECK(info.samples <= ManifestLimits::shard_samples, path, ": shard '", info.file, "' says ",
                    info.samples, " samples, more than the ", ManifestLimits::shard_samples, " a shard may hold");
      DPTRAIN_CHECK(info.file.find('/') == std::string::npos, path, ": shard file '", info.file,
                    "' must be a plain file name in the dataset directory");
      next += info.samples;
      split.shards.push_back(std::move(info));
    }
    DPTRAIN_CHECK(next == split.samples, path, ": split '", name, "' says ", split.samples,
                  " samples but its shards hold ", next);
    m.splits.emplace(name, std::move(split));
  }
  return m;
}

std::string Manifest::to_json() const {
  json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["name"] = name;
  j["image"] = {{"height", height}, {"width", width}, {"channels", channels}};
  j["encoding"] = encoding;
  j["mean"] = mean;
  j["std"] = stddev;
  j["classes"] = json::array();
  for (const ClassInfo& c : classes) j["classes"].push_back({{"id", c.id}, {"key", c.key}, {"name", c.name}});
  j["splits"] = json::object();
  for (const auto& [split_name, s] : splits) {
    json shards = json::array();
    for (const ShardInfo& info : s.shards) {
      shards.push_back({{"file", info.file},
                        {"samples", info.samples},
                        {"first_sample", info.first_sample},
                        {"checksum", info.checksum}});
    }
    j["splits"][split_name] = {{"samples", s.samples}, {"shards", shards}};
  }
  return json_text(j, 2) + "\n";
}

void Manifest::write(const std::string& directory) const {
  const auto final_path = std::filesystem::path(directory) / "manifest.json";
  const auto temporary = std::filesystem::path(directory) / "manifest.json.tmp";
  // Removed on failure; the error names it and the cause (a full disk: "No space left on device").
  write_file_through_temporary(temporary.string(), final_path.string(), to_json());
}

const SplitInfo& Manifest::split(const std::string& split_name) const {
  auto it = splits.find(split_name);
  if (it == splits.end()) {
    std::string known;
    for (const auto& [n, s] : splits) known += (known.empty() ? "" : ", ") + n;
    throw Error(detail::concat("dataset '", name, "' has no split '", split_name, "' (it has: ", known, ")"));
  }
  return it->second;
}

std::string shard_file_name(const std::string& split, int index, int count) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "-%05d-of-%05d.h5", index, count);
  return split + buffer;
}

std::string file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DPTRAIN_CHECK(in.good(), path, ": cannot open to compute its checksum (", std::strerror(errno), ")");
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = in.gcount();
    if (got > 0) crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
  }
  char text[32];
  std::snprintf(text, sizeof text, "crc32:%08lx", static_cast<unsigned long>(crc));
  return text;
}

}  // namespace dptrain::data
