"""The artifact format the OpenCL C backend prints (`accy.target`'s `format`).

Apart from the emitter (and free of xDSL), so that the OpenCL device can
name it and run cached programs without loading the emitter.
"""

FORMAT = "opencl-c"
