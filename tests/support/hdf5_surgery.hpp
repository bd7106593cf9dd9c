#pragma once
// Edits to a file we wrote, as a damaged disk or a crafted file would make them: the hostile-input
// tests take a good shard or checkpoint and replace one attribute or dataset. Each opens the file
// read-write and closes it again; a failed HDF5 call fails the test (REQUIRE).
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dptrain::testing {

// Replaces attribute `name` of the object at `object_path` ("/" for the root) by `count` int64s.
void replace_attribute_with_array(const std::string& file, const std::string& object_path, const std::string& name,
                                  int count);
// Replaces attribute `name` by a scalar of HDF5 type `type` holding the bytes of `value`.
void replace_attribute_with(const std::string& file, const std::string& object_path, const std::string& name,
                            hid_t type, const void* value);
// Removes dataset `name` and lets `create(file_id, name)` put something else there.
void replace_dataset(const std::string& file, const std::string& name,
                     const std::function<void(hid_t file, const std::string& name)>& create);

// Opens `file` read-write and lets `edit(file_id)` change it (add a link, say).
void edit_file(const std::string& file, const std::function<void(hid_t file)>& edit);

// Replacements for replace_dataset: a dataset of `dims` of `type` with every element written from
// `values` (or nothing written when `values` is null), chunked as `chunk` when given; a link to
// dataset `target` of file `other`; a dataset whose bytes live in the external file `external`.
void create_dataset(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                    const void* values, const std::vector<hsize_t>& chunk = {});
void create_external_link(hid_t file, const std::string& name, const std::string& other, const std::string& target);
void create_external_storage(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                             const std::string& external);
// A chunked uint8 dataset `name` of `dims`, written through filter `filter` (32000 is LZF's number):
// the filter is a pass-through registered in this process only while the file is written, so that a
// later open in this process, like one at another site without the plugin, cannot decode it.
void create_dataset_through_missing_filter(const std::string& file, const std::string& name,
                                           const std::vector<hsize_t>& dims, H5Z_filter_t filter);
// A soft link `name` to `target` in the same file.
void create_soft_link(hid_t file, const std::string& name, const std::string& target);
// A virtual dataset `name` of `dims` uint8 whose bytes are those of dataset `target` of file `other`.
void create_virtual_dataset(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                            const std::string& other, const std::string& target);

}  // namespace dptrain::testing
