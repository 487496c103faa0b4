#!/usr/bin/env bash
# Runs accy on an NVIDIA GPU through NVIDIA's OpenCL driver, as on the
# device tool's H200 machines: their image has numpy, pytest and hypothesis
# but not xDSL or pyopencl, and lists only PoCL under /etc/OpenCL/vendors.
#
#   tools/gpu/nvidia_opencl.sh [COMMAND ARGS...]     (default: the conformance suite)
#
# Wheels for Python 3.12 (x86-64) go in .whl/ first, on a machine with PyPI:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform any -d .whl xdsl==0.75.0 pyopencl pytools platformdirs immutabledict \
#     ordered-set siphash24 filecheck lit \
#     matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing python-dateutil \
#     packaging six tzdata
# (matplotlib to tzdata are for the benchmark's chart, optional: matplotlib
# and its dependencies but numpy, which the image has; python-dateutil 4
# needs tzdata, 2.x six) and the device tool carries .whl (run's `carry`),
# about 30 MB.
# They are installed once per machine (again when the set of wheels changes).
# Only NVIDIA's driver is made visible (OCL_ICD_VENDORS), so `opencl` is the
# GPU. tools/gpu/h200.sh runs the conformance suite and the benchmark through
# this script in one command.
set -euo pipefail
cd "$(dirname "$0")/../.."
wheels=$(cd .whl && ls -- *.whl)
if [ "$(cat /tmp/accy-site/.accy-wheels 2>/dev/null)" != "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/accy-site .whl/*.whl
  echo "$wheels" > /tmp/accy-site/.accy-wheels
fi
export PYTHONPATH="/tmp/accy-site:$PWD" PATH="/tmp/accy-site/bin:$PATH"
mkdir -p /tmp/accy-icd
echo libnvidia-opencl.so.1 > /tmp/accy-icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/accy-icd ACCY_CACHE_DIR=/tmp/accy-cache PYTHONUNBUFFERED=1
python3 - <<'PY'
import pyopencl as cl
for p in cl.get_platforms():
    print("platform:", p.name, p.version, [d.name for d in p.get_devices()])
PY
if [ $# -eq 0 ]; then
  set -- python3 -m pytest -q -p no:cacheprovider tests/conformance
fi
exec "$@"
