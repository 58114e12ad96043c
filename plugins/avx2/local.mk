# plugins/avx2: not written yet (see issues)
