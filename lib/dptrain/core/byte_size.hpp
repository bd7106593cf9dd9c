#pragma once
// Memory sizes as users write them: "16GiB", "16G" (binary, as Slurm's --mem), "16GB" (decimal),
// "512MiB", "1.5TiB". A unit is required: a bare "16" is as likely gigabytes as bytes.
#include <cstddef>
#include <optional>
#include <string>

namespace dptrain {

// Bytes, or nullopt when `text` is not a positive number with one of the units K, M, G, T (binary),
// KiB, MiB, GiB, TiB (binary) or kB/KB, MB, GB, TB (decimal), optionally followed by nothing else.
std::optional<std::size_t> byte_size(const std::string& text);

// Bytes; throws dptrain::Error naming `what` (the flag) on anything else.
std::size_t parse_byte_size(const std::string& text, const std::string& what);

// "1.50 GiB", "312.0 MiB", "96 KiB", "12 B": for tables.
std::string format_bytes(double bytes);

}  // namespace dptrain
