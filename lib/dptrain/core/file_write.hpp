#pragma once
// Writing bytes to files with every failure named: the path, the call and the operating system's
// cause ("write(/scratch/d/train-00003.h5.tmp) failed: No space left on device"). HDF5 files are
// built in memory (h5::build_file_image) and written through here, so ENOSPC and EFBIG surface as
// the errno of a write(2) instead of deep inside HDF5.
#include <string>
#include <string_view>

namespace dptrain {

// Throws dptrain::Error "CALL(PATH) failed: <strerror(errno)>".
[[noreturn]] void throw_errno_error(const char* call, const std::string& path);

// write(2) all of `bytes` to `fd` (retrying short writes and EINTR); a failure names `path`.
void write_all(int fd, std::string_view bytes, const std::string& path);

// Writes `bytes` to `temporary` (a leftover regular file there is replaced; created O_EXCL and
// O_NOFOLLOW, so nothing planted at the name is written through), fsyncs and closes it and renames
// it to `path`. On any failure the temporary is removed and the error names it and the cause: no
// partial file is left behind and `path` is untouched.
void write_file_through_temporary(const std::string& temporary, const std::string& path, std::string_view bytes);

// Outputs checked at start, before any work, so that a run never ends by failing to write its result:
// each throws dptrain::Error naming the path and the cause. A file: `path` is not a directory, its
// directory exists, and this process can create a file there (a probe file is created beside it and
// removed at once). A directory: it is a directory this process can create a file in, or it does not
// exist yet and its nearest existing ancestor is one (it is created when first written).
void check_output_file(const std::string& path);
void check_output_directory(const std::string& directory);

}  // namespace dptrain
