# plugins/vulkan: not written yet (see issues)
