#pragma once
// POSIX file operations for the durable write protocol. A rename is atomic but not durable until the
// directory is fsynced, and a file's data is not durable until the file is: after a node crash or a
// power loss a renamed file could otherwise be empty. Every failure throws dptrain::Error naming the
// path and the call.
#include <string>

namespace dptrain::io {

// Throws dptrain::Error "CALL(PATH) failed: <strerror(errno)>".
[[noreturn]] void throw_posix_error(const char* call, const std::string& path);

void fsync_directory(const std::string& directory);
// rename(2): atomic replacement of `to` on the same file system.
void rename_file(const std::string& from, const std::string& to);
// Renames `from` to `to` only if `to` does not exist, atomically where the file system can
// (renameat2 RENAME_NOREPLACE, else link(2) then unlink(2)); an existing `to` is an error naming it,
// whatever appeared there since an earlier check. A file system with neither falls back to a check
// then rename(2).
void rename_file_no_replace(const std::string& from, const std::string& to);
// Before any work on a file the user named and that must be new: an error if anything (a symlink
// included) is at `path` already ("PATH already exists: WHO does not overwrite a file; ..."). The
// final rename_file_no_replace still refuses a name that appears meanwhile.
void check_new_file(const std::string& path, const std::string& who);
// A temporary name beside `target` for a file the user named (an export, an import):
// `dptrain-<pid>-<n>.tmp` in its directory, so that ExclusiveFile's removal of a leftover never
// takes a file of the user's own (OUT.tmp). A process killed while writing leaves it behind.
std::string temporary_name_for(const std::string& target);
// Replaces `directory/name` with `contents` atomically and durably: writes `name.tmp` (created
// exclusively, never through a symlink: exclusive_file.hpp), fsyncs it, renames it over `name` and
// fsyncs the directory. A reader sees the old or the new file, never a mix.
void replace_file_atomically(const std::string& directory, const std::string& name, const std::string& contents);

}  // namespace dptrain::io
