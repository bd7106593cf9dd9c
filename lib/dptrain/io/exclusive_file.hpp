#pragma once
// A temporary file (a checkpoint's `ckpt-<step>.h5.tmp` and `latest.tmp`, an export's, a trace's),
// created so that nothing planted at its name is ever written through.
//
// A checkpoint directory is often shared (a project directory that a group can write). With
// open(O_CREAT|O_TRUNC), or H5Fcreate(H5F_ACC_TRUNC), a symbolic link planted at a temporary name
// would be followed and the file it points to truncated and overwritten with our bytes. So the file is
// created with O_CREAT|O_EXCL|O_NOFOLLOW, which fails on any existing name, symlinks included, and
// never resolves a link: the descriptor then refers to a new, empty, regular file that we made.
// HDF5 opens files by name, so it is given /proc/self/fd/N, which reaches exactly that inode whatever
// sits at the name by then (a name swapped after our open cannot redirect it). Before the rename the
// name is checked to still be ours, so a swapped name is refused instead of published.
#include <sys/types.h>

#include <string>
#include <string_view>

namespace dptrain::io {

class ExclusiveFile {
 public:
  // Creates `path` exclusively. A regular file already there is the leftover of a writer killed
  // mid-write (a directory has one writer: see directory_lock.hpp) and is unlinked first; unlink
  // removes a name and never follows it. Anything else at the name (a symlink, a directory, a FIFO)
  // is an error naming it: dptrain did not make it and will not remove or write through it.
  explicit ExclusiveFile(std::string path);
  // Unlinks the file when it was not renamed into place (a failed write leaves no temporary behind),
  // but only while the name still refers to our file.
  ~ExclusiveFile();
  ExclusiveFile(const ExclusiveFile&) = delete;
  ExclusiveFile& operator=(const ExclusiveFile&) = delete;

  const std::string& path() const { return path_; }
  // A path that opens this very file and no other (/proc/self/fd/N), for libraries that open by
  // name (HDF5); `path()` itself where /proc is not mounted.
  std::string reopen_path() const;
  // write(2) all of `bytes` at the current offset.
  void write(std::string_view bytes);
  // fsync(2) through our descriptor: the data of every descriptor of the inode, HDF5's included.
  void sync();
  // Checks that `path()` still names our file, closes it (checked) and renames it over `target`
  // (atomic on one file system). The directory still needs an fsync for the rename to be durable.
  void rename_to(const std::string& target);
  // The same, but an existing `target` is never replaced: an error naming it (rename_file_no_replace).
  void rename_to_new(const std::string& target);

 private:
  bool still_named() const;
  void close_for_rename(const std::string& target);

  std::string path_;
  int fd_ = -1;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  bool renamed_ = false;
};

}  // namespace dptrain::io
