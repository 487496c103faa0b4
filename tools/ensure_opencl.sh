#!/usr/bin/env bash
# Makes sure an OpenCL platform exists for pyopencl; installs Debian's PoCL
# (pocl-opencl-icd) when none does and we may install packages.
set -u
PY=${1:-.venv/bin/python}
if "$PY" -c 'import pyopencl as cl, sys; sys.exit(0 if cl.get_platforms() else 1)' >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "accy: no OpenCL platform and no permission to install one; run: sudo apt-get install pocl-opencl-icd" >&2
    exit 0
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "accy: no OpenCL platform; install PoCL (pocl-opencl-icd) or a GPU vendor's OpenCL driver" >&2
  exit 0
fi
echo "accy: installing PoCL (pocl-opencl-icd) from Debian's packages"
# Another install holding dpkg's lock is waited for (10 minutes), not an error.
APT="$SUDO apt-get -o DPkg::Lock::Timeout=600"
$APT update -qq && DEBIAN_FRONTEND=noninteractive $APT install -y -qq pocl-opencl-icd ocl-icd-libopencl1 >/dev/null
"$PY" -c 'import pyopencl as cl; print("accy: OpenCL platforms:", [p.name for p in cl.get_platforms()])'
