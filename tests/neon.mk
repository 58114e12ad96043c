# tests for the neon backend (not written yet)
