"""The part of the `safetensors` Python package that llama.cpp's converter uses (safe_open with
keys / get_tensor / get_slice, framework "pt"), for Debian machines where the package does not
exist. Reads the safetensors layout directly: 8-byte little-endian header size, JSON header,
then the data section; tensors are numpy memmaps viewed as torch tensors."""
import json
import struct

import numpy as np
import torch

_NP = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.int16,
       "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
       "BOOL": np.bool_}


class _Slice:
    def __init__(self, f, name):
        self._f, self._name = f, name

    def get_dtype(self):
        return self._f._hdr[self._name]["dtype"]

    def get_shape(self):
        return list(self._f._hdr[self._name]["shape"])

    def __getitem__(self, idx):
        return self._f.get_tensor(self._name)[idx]


class safe_open:
    def __init__(self, path, framework="pt", device="cpu"):
        with open(path, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            hdr = json.loads(fh.read(n))
        self._meta = hdr.pop("__metadata__", None)
        self._hdr = hdr
        self._mm = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def keys(self):
        return list(self._hdr.keys())

    def metadata(self):
        return self._meta

    def get_tensor(self, name):
        t = self._hdr[name]
        b, e = t["data_offsets"]
        arr = np.array(self._mm[b:e]).view(_NP[t["dtype"]]).reshape(t["shape"])
        out = torch.from_numpy(arr)
        return out.view(torch.bfloat16) if t["dtype"] == "BF16" else out

    def get_slice(self, name):
        return _Slice(self, name)
