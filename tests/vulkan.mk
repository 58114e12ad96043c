# tests for the vulkan backend (not written yet)
