# plugins/cuda: not written yet (see issues)
