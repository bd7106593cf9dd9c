#pragma once
// What an earlier conversion of a dataset directory listed, so that converting again repairs it: a
// shard kept from that conversion must still have the checksum its manifest gave it, or it is written
// again (never is a damaged shard's checksum adopted, nor its pixels counted in the statistics).
//
// While a conversion runs, the directory has no manifest.json (it would call an incomplete directory
// complete); the earlier list is kept as .manifest-previous.json until the new manifest is written, so
// an interrupted re-conversion still checks against it.
#include <map>
#include <string>

namespace dptrain::datasets {

// File name -> "crc32:xxxxxxxx", from DIR/manifest.json, else DIR/.manifest-previous.json; empty when
// neither can be read (a first conversion, or a manifest too damaged to trust).
std::map<std::string, std::string> previous_checksums(const std::string& directory);

// Before a conversion writes anything: DIR/manifest.json (if any) becomes DIR/.manifest-previous.json.
void set_aside_manifest(const std::string& directory);

// After the new manifest is written: the earlier list goes.
void forget_previous_manifest(const std::string& directory);

}  // namespace dptrain::datasets
