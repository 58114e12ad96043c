# tests for the wasm backend (not written yet)
