"""What kernels and the runtimes that launch them agree on about buffer
addresses. Apart from the kernel dialect (which re-exports it) so that a
runtime thawing cached kernels reads it without importing xDSL."""

#: The alignment in bytes every kernel buffer argument has at least (a whole
#: device allocation): the LLVM device's host buffers are 64-byte aligned,
#: and OpenCL requires CL_DEVICE_MEM_BASE_ADDR_ALIGN to be at least 128
#: bytes (the size of a long16). Streaming stores rely on it (of results, never
#: host arrays read in place; aligned accesses claim `ARGUMENT_ACCESS_BYTES`).
BUFFER_ALIGN_BYTES = 64
#: The most an aligned access of a kernel buffer argument may claim (one
#: 16-byte vector, the widest load of a GPU work-item), and so the
#: alignment a runtime makes sure of for a host array a kernel reads in
#: place: numpy's arrays start at a multiple of 16 bytes, but a view may
#: start at any element, and such an input is copied instead.
ARGUMENT_ACCESS_BYTES = 16
