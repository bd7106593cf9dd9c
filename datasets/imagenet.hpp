#pragma once
// `dptrain data convert imagenet SRC OUT`: an ILSVRC2012 JPEG tree (see imagenet_layout.hpp) into a
// dataset directory of HDF5 shards and manifest.json (see README.md).
//
// Each image is decoded (grey and CMYK become RGB), its shorter side resized to `size` and the centre
// size x size kept, stored raw (uint8 HWC) or re-encoded as JPEG at quality 90. Samples are assigned
// to shards by plan_shards (shuffled, every shard has every class). Shards are converted by `jobs`
// threads and, when launched by mpiexec/srun with several ranks, rank r converts the shards g with
// g % ranks == r (g numbers the train shards, then the validation shards); rank 0 writes the manifest.
//
// Corrupt images: a first pass checks every file (check_jpeg: all the entropy-coded data at 1/8 scale,
// several times cheaper than decoding) and skips the unreadable ones with a warning, so the shard plan
// already knows the final sample counts and no rank depends on what another decoded.
//
// Restart: a shard whose file exists, matches the plan's header and holds the planned labels is read
// back (for the statistics and checksum) instead of written, so an interrupted conversion run again
// with the same options writes only the missing shards. The manifest is removed when a conversion
// starts and written last, so a directory with a manifest is complete.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace dptrain::datasets {

struct ImagenetOptions {
  std::string source, output;
  int size = 256;           // stored height and width
  int train_shards = 1024;  // lowered to the sample count when there are fewer samples
  int validation_shards = 128;
  std::string encoding = "raw";          // "raw" or "jpeg"
  int jobs = 0;                          // threads per rank; 0: the node's cores divided among its ranks
  int jpeg_quality = 90;                 // for encoding "jpeg"
  std::uint64_t seed = 0x1f5a9c2012ULL;  // the shard plan's shuffle; fixed so conversions are reproducible
  bool progress = true;                  // progress on stderr (rank 0 only)
};

struct ImagenetReport {
  int classes = 0;
  std::int64_t train_samples = 0, validation_samples = 0;
  int train_shards = 0, validation_shards = 0;
  int shards_written = 0, shards_reused = 0;  // over all ranks
  std::vector<std::string> skipped;           // unreadable images, over all ranks
};

// `out` gets notes and the summary (rank 0), `warnings` the skipped files and other warnings (every
// rank prints what it found). Errors are dptrain::Error; with several ranks a failing rank prints its
// error and aborts the job, so no rank waits forever in a collective.
ImagenetReport convert_imagenet(const ImagenetOptions& options, std::ostream& out, std::ostream& warnings);

}  // namespace dptrain::datasets
