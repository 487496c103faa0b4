"""The runtime: devices that run compiled programs, and the `Executable` that
`accy.compile` returns."""

from accy.dialects import class_code

# Before the runtime's own dataclasses and its first load of xDSL.
class_code.install()
