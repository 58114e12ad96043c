# tests for the avx2 backend (not written yet)
