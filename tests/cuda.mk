# tests for the cuda backend (not written yet)
