"""Imported before torch by the benchmarks that time torch's CPU backend as opscope's peer.

torch's CPU matmuls run in OpenBLAS, whose own threads, beside torch's OpenMP threads,
oversubscribe the cores: on this machine's 2 CPUs ViT-B/16 took 833 ms with OpenBLAS's
default threads and 466 ms with one (torch at 2 threads both times). The peer gets its
faster setting; OpenBLAS reads it when torch loads it, so this must come first.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
