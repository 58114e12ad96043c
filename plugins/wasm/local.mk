# plugins/wasm: not written yet (see issues)
