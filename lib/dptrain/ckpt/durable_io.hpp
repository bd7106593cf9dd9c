#pragma once
// POSIX file operations for the durable write protocol. A rename is atomic but not durable until the
// directory is fsynced, and a file's data is not durable until the file is: after a node crash or a
// power loss a renamed file could otherwise be empty. Every failure throws dptrain::Error naming the
// path and the call.
#include <string>

namespace dptrain::ckpt {

// Throws dptrain::Error "CALL(PATH) failed: <strerror(errno)>".
[[noreturn]] void throw_posix_error(const char* call, const std::string& path);

void fsync_directory(const std::string& directory);
// rename(2): atomic replacement of `to` on the same file system.
void rename_file(const std::string& from, const std::string& to);
// Replaces `directory/name` with `contents` atomically and durably: writes `name.tmp` (created
// exclusively, never through a symlink: exclusive_file.hpp), fsyncs it, renames it over `name` and
// fsyncs the directory. A reader sees the old or the new file, never a mix.
void replace_file_atomically(const std::string& directory, const std::string& name, const std::string& contents);

}  // namespace dptrain::ckpt
