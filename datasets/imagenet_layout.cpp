#include "datasets/imagenet_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain::datasets {
namespace {
namespace fs = std::filesystem;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// The entries of a folder, split into sub-folders and JPEG files, both sorted by name.
struct Listing {
  std::vector<fs::path> folders, jpegs;
};

// A link that leads nowhere (dangling, or a loop) named like an image or a folder is reported on
// `warnings`, one line naming it and the cause, instead of vanishing from the dataset without a word.
Listing list_folder(const fs::path& folder, std::ostream& warnings) {
  Listing listing;
  std::error_code error;
  fs::directory_iterator it(folder, error);
  DPTRAIN_CHECK(!error, folder.string(), ": cannot list the folder (", error.message(), ")");
  for (const fs::directory_entry& entry : it) {
    // is_directory and is_regular_file follow symbolic links, so a tree of links (a common way to
    // subset ImageNet) reads like the real one.
    std::error_code followed;
    const fs::file_status target = fs::status(entry.path(), followed);
    if (followed || !fs::exists(target)) {
      std::error_code ignored;
      if (fs::is_symlink(entry.symlink_status(ignored))) {
        warnings << "warning: skipping " << escaped_name(entry.path().string())
                 << (followed ? ": a symbolic link that cannot be followed (" + followed.message() + ")"
                              : std::string(": a dangling symbolic link (its target does not exist)"))
                 << "\n";
      }
      continue;
    }
    if (fs::is_directory(target)) {
      listing.folders.push_back(entry.path());
    } else if (fs::is_regular_file(target) && is_jpeg_name(entry.path().filename().string())) {
      listing.jpegs.push_back(entry.path());
    }
  }
  std::sort(listing.folders.begin(), listing.folders.end());
  std::sort(listing.jpegs.begin(), listing.jpegs.end());
  return listing;
}

std::vector<fs::path> class_images(const fs::path& folder, std::ostream& warnings) {
  std::vector<fs::path> jpegs = list_folder(folder, warnings).jpegs;
  DPTRAIN_CHECK(!jpegs.empty(), folder.string(),
                ": empty class folder (it holds no .JPEG images); remove it or restore its images");
  return jpegs;
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), path.string(), ": cannot open (", std::strerror(errno), ")");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  DPTRAIN_CHECK(!in.bad(), path.string(), ": reading failed");
  return lines;
}

// "wnid rest of the line" files: LOC_synset_mapping.txt and synsets.txt. Returns (wnid, name) pairs
// in line order; blank lines are skipped.
std::vector<std::pair<std::string, std::string>> read_synset_list(const fs::path& path) {
  std::vector<std::pair<std::string, std::string>> synsets;
  for (const std::string& raw : read_lines(path)) {
    const std::string line = trim(raw);
    if (line.empty()) continue;
    const auto space = line.find_first_of(" \t");
    synsets.emplace_back(line.substr(0, space), space == std::string::npos ? "" : trim(line.substr(space)));
  }
  DPTRAIN_CHECK(!synsets.empty(), path.string(), ": holds no synsets");
  return synsets;
}

class ClassIndex {
 public:
  explicit ClassIndex(const std::vector<data::ClassInfo>& classes) {
    for (const data::ClassInfo& c : classes) ids_.emplace(c.key, c.id);
  }
  // The class id of `wnid`, or an Error naming `where` when train/ has no such class.
  std::int32_t id(const std::string& wnid, const std::string& where) const {
    const auto it = ids_.find(wnid);
    DPTRAIN_CHECK(it != ids_.end(), where, ": class '", wnid, "' is not one of the class folders in train/");
    return it->second;
  }

 private:
  std::map<std::string, std::int32_t> ids_;
};

// Kaggle's LOC_val_solution.csv: "ImageId,PredictionString" then "ILSVRC2012_val_00000001,n01751748 x y x y ...".
std::map<std::string, std::string> read_val_solution(const fs::path& path) {
  const std::vector<std::string> lines = read_lines(path);
  DPTRAIN_CHECK(!lines.empty() && trim(lines[0]).rfind("ImageId,", 0) == 0, path.string(),
                ": the first line is not the header 'ImageId,PredictionString'");
  std::map<std::string, std::string> wnid_of;
  for (std::size_t n = 1; n < lines.size(); ++n) {
    const std::string line = trim(lines[n]);
    if (line.empty()) continue;
    const auto comma = line.find(',');
    std::istringstream prediction(comma == std::string::npos ? "" : line.substr(comma + 1));
    std::string wnid;
    prediction >> wnid;
    DPTRAIN_CHECK(comma != std::string::npos && comma > 0 && !wnid.empty(), path.string(), ": line ", n + 1,
                  " is not 'ImageId,wnid ...'");
    wnid_of[line.substr(0, comma)] = wnid;
  }
  return wnid_of;
}

std::vector<SourceImage> label_flat_validation(const fs::path& source, const fs::path& val,
                                               const std::vector<fs::path>& jpegs, const ClassIndex& index,
                                               std::ostream& warnings) {
  std::vector<SourceImage> images;
  const fs::path solution = source / "LOC_val_solution.csv";
  if (fs::exists(solution)) {
    const auto wnid_of = read_val_solution(solution);
    for (const fs::path& jpeg : jpegs) {
      const auto it = wnid_of.find(jpeg.stem().string());
      DPTRAIN_CHECK(it != wnid_of.end(), jpeg.string(), ": has no row in ", solution.string(),
                    " (its ImageId would be '", jpeg.stem().string(), "')");
      images.push_back({jpeg.string(), index.id(it->second, solution.string() + " (row " + it->first + ")")});
    }
    return images;
  }

  fs::path truth = source / "ILSVRC2012_validation_ground_truth.txt";
  if (!fs::exists(truth)) truth = source / "ILSVRC2012_devkit_t12" / "data" / "ILSVRC2012_validation_ground_truth.txt";
  DPTRAIN_CHECK(fs::exists(truth), val.string(),
                ": holds images without class folders, and neither LOC_val_solution.csv nor "
                "ILSVRC2012_validation_ground_truth.txt is in ",
                source.string(), " to label them");
  // synsets.txt first: it is the list a user writes to match the devkit's numbering (meta.mat order).
  // LOC_synset_mapping.txt is in sorted wnid order, which is NOT the order of the official devkit's
  // ILSVRC ids; it is right only for a ground-truth file renumbered to sorted order.
  fs::path synsets = source / "synsets.txt";
  if (!fs::exists(synsets)) {
    synsets = source / "LOC_synset_mapping.txt";
    DPTRAIN_CHECK(fs::exists(synsets), truth.string(),
                  ": needs a synset list (synsets.txt or LOC_synset_mapping.txt in ", source.string(),
                  ") to turn its ILSVRC ids into wnids");
    warnings << "warning: labelling " << val.string() << " with " << truth.filename().string() << " and "
             << synsets.string() << ", whose line order (sorted wnids) is taken as the ILSVRC id order; the "
             << "official devkit numbers classes in meta.mat order instead, so give a synsets.txt in that order "
             << "or LOC_val_solution.csv if the validation accuracy looks like chance\n";
  }
  const auto synset_list = read_synset_list(synsets);
  const std::vector<std::string> lines = read_lines(truth);
  std::vector<std::int32_t> ids;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string line = trim(lines[n]);
    if (line.empty()) continue;
    std::size_t used = 0;
    long id = 0;
    try {
      id = std::stol(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    DPTRAIN_CHECK(used == line.size() && id >= 1 && id <= static_cast<long>(synset_list.size()), truth.string(),
                  ": line ", n + 1, " ('", line, "') is not an ILSVRC id between 1 and ", synset_list.size(),
                  " (the synsets in ", synsets.string(), ")");
    ids.push_back(index.id(synset_list[static_cast<std::size_t>(id - 1)].first,
                           synsets.string() + " (line " + std::to_string(id) + ")"));
  }
  DPTRAIN_CHECK(ids.size() == jpegs.size(), truth.string(), ": has ", ids.size(), " labels but ", val.string(),
                " holds ", jpegs.size(), " images (line k labels the k-th image in sorted file-name order)");
  for (std::size_t i = 0; i < jpegs.size(); ++i) images.push_back({jpegs[i].string(), ids[i]});
  return images;
}

void sort_by_label_then_path(std::vector<SourceImage>& images) {
  std::sort(images.begin(), images.end(), [](const SourceImage& a, const SourceImage& b) {
    return a.label != b.label ? a.label < b.label : a.path < b.path;
  });
}
}  // namespace

bool is_jpeg_name(const std::string& file_name) {
  const std::string extension = lower(fs::path(file_name).extension().string());
  return extension == ".jpeg" || extension == ".jpg";
}

ImagenetTree scan_imagenet_tree(const std::string& source_text, std::ostream& warnings) {
  const fs::path source(source_text);
  DPTRAIN_CHECK(fs::is_directory(source), source_text,
                ": not found or not a directory (give the ImageNet folder "
                "that holds train/ and val/)");
  const fs::path train = source / "train";
  DPTRAIN_CHECK(fs::is_directory(train), train.string(),
                ": not found; the source must be in the ILSVRC2012 layout "
                "(train/<wnid>/*.JPEG and val/)");
  ImagenetTree tree;
  const Listing classes = list_folder(train, warnings);
  DPTRAIN_CHECK(classes.folders.size() >= 2, train.string(), ": holds ", classes.folders.size(),
                " class folders, but a dataset needs at least two");

  std::map<std::string, std::string> names;
  if (const fs::path mapping = source / "LOC_synset_mapping.txt"; fs::exists(mapping)) {
    for (auto& [wnid, name] : read_synset_list(mapping)) names[wnid] = name;
  }
  for (const fs::path& folder : classes.folders) {
    const std::string wnid = folder.filename().string();
    // The manifest (JSON) keeps a class by its folder name, which must then be UTF-8 to be kept byte
    // for byte: refused here, before any shard is written, rather than after the whole conversion.
    DPTRAIN_CHECK(is_valid_utf8(wnid), escaped_name(folder.string()),
                  ": the class folder's name is not valid UTF-8, which the dataset's manifest (JSON) cannot "
                  "hold; rename the folder (e.g. convmv -f latin1 -t utf8)");
    const auto id = static_cast<std::int32_t>(tree.classes.size());
    const auto named = names.find(wnid);
    tree.classes.push_back({id, wnid, named != names.end() && !named->second.empty() ? named->second : wnid});
    for (const fs::path& jpeg : class_images(folder, warnings)) tree.train.push_back({jpeg.string(), id});
  }
  const ClassIndex index(tree.classes);

  const fs::path val = source / "val";
  DPTRAIN_CHECK(fs::is_directory(val), val.string(),
                ": not found; the source needs a val/ folder (class folders, or flat with a ground-truth file)");
  const Listing listing = list_folder(val, warnings);
  DPTRAIN_CHECK(listing.folders.empty() || listing.jpegs.empty(), val.string(),
                ": holds both class folders and images; keep one layout");
  DPTRAIN_CHECK(!listing.folders.empty() || !listing.jpegs.empty(), val.string(), ": holds no images");
  if (!listing.folders.empty()) {
    for (const fs::path& folder : listing.folders) {
      const std::int32_t id = index.id(folder.filename().string(), folder.string());
      for (const fs::path& jpeg : class_images(folder, warnings)) tree.validation.push_back({jpeg.string(), id});
    }
  } else {
    tree.validation = label_flat_validation(source, val, listing.jpegs, index, warnings);
  }
  sort_by_label_then_path(tree.train);
  sort_by_label_then_path(tree.validation);
  return tree;
}

}  // namespace dptrain::datasets
