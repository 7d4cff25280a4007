#!/usr/bin/python3
"""Runs llama.cpp's convert_hf_to_gguf.py (path in argv[1], its arguments after) under Debian's
torch 1.13, which lacks the float8 dtypes the converter names in a lookup table; pdq checkpoints
hold no float8 tensors, so the missing names are given placeholders before the script runs."""
import runpy
import sys

import torch

for name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.float32)
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
