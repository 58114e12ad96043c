# plugins/neon: not written yet (see issues)
