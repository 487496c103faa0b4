"""The runtime: devices that run compiled programs, and the `Executable` that
`accy.compile` returns."""
