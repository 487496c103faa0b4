"""The artifact format the OpenCL C backend prints (`accy.target`'s `format`).

Apart from the emitter (and free of xDSL), so that the OpenCL device can
name it and run cached programs without loading the emitter.
"""

FORMAT = "opencl-c"

WGMMA_MARK = "// accy-sm90a: "
"""The prefix of the PTX lines the backend prints as comments and the
runtime uncomments for sm_90a (`accy_kernel.wgmma`: NVIDIA's OpenCL
compiles for `.target sm_90`, whose ptxas refuses wgmma)."""
