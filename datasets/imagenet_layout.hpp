#pragma once
// Reading an ImageNet (ILSVRC2012) source tree: which classes there are, and every image of each
// split with its class id. Nothing here decodes an image.
//
//   SRC/train/<wnid>/*.JPEG              one folder per class; class ids are the sorted wnids
//   SRC/val/<wnid>/*.JPEG                validation in class folders, or
//   SRC/val/*.JPEG                       flat, labelled by one of:
//     SRC/LOC_val_solution.csv                     Kaggle: ImageId,PredictionString (first token: wnid)
//     SRC/ILSVRC2012_validation_ground_truth.txt   devkit: one 1-based ILSVRC id per line, in
//                                                  sorted file-name order, with a synset list
//                                                  (synsets.txt, else LOC_synset_mapping.txt) whose
//                                                  line k is the wnid of ILSVRC id k
//   SRC/LOC_synset_mapping.txt           optional: "wnid name..." per line, for the class names
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "dptrain/data/manifest.hpp"

namespace dptrain::datasets {

struct SourceImage {
  std::string path;
  std::int32_t label = 0;
};

struct ImagenetTree {
  std::vector<data::ClassInfo> classes;  // ids 0.. in sorted wnid order
  // Each sorted by (label, path), so everything planned from them is independent of directory order.
  std::vector<SourceImage> train, validation;
};

// Scans SRC. Every problem with the layout (no train/, an empty class folder, a validation image
// without a label, a label that is no train class) is an Error naming the path. Notes about
// ambiguous inputs go to `warnings`.
ImagenetTree scan_imagenet_tree(const std::string& source, std::ostream& warnings);

// Whether a file name ends in .JPEG/.jpeg/.jpg (any case), the images the tree holds.
bool is_jpeg_name(const std::string& file_name);

}  // namespace dptrain::datasets
