"""A safetensors reader and writer written from the published format, independent of dptrain's C++
(and of the safetensors package, which Debian 12 does not ship): 8-byte little-endian header length,
a JSON header of {name: {dtype, shape, data_offsets}} plus __metadata__, then the raw tensors."""
import json
import struct

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
          "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
NAMES = {np.dtype(v).str: k for k, v in DTYPES.items()}


def read(path):
    """Returns ({name: numpy array}, metadata), checking the layout as strictly as the format says."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header length {n} beyond the file"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values()), "metadata values must be strings"
    body = data[8 + n:]
    tensors, ranges = {}, []
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, f"{name}: keys {sorted(info)}"
        begin, end = info["data_offsets"]
        dtype = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert end - begin == count * dtype.itemsize, f"{name}: {end - begin} bytes for shape {info['shape']}"
        tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"]).copy()
        ranges.append((begin, end))
    position = 0
    for begin, end in sorted(ranges):
        assert begin == position, f"{path}: a gap or an overlap at byte {begin}"
        position = end
    assert position == len(body), f"{path}: {len(body) - position} bytes no tensor owns"
    return tensors, metadata


def write(path, tensors, metadata=None):
    """Writes {name: numpy array} (any order) with optional string metadata."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": NAMES[array.dtype.newbyteorder("<").str], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)
