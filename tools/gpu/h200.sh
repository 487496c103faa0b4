#!/usr/bin/env bash
# Issue 10's GPU run in one command, on the device tool's H200 machine as it
# is: installs the wheels carried in .whl/ and makes NVIDIA's OpenCL driver
# the only platform (both through tools/gpu/nvidia_opencl.sh, which says how
# to fill .whl/), runs the conformance suite on the GPU, then the GPU
# benchmark (tools/gpu/bench.py: accy against torch on the same card).
#
#   tools/gpu/h200.sh [--out DIR] [--no-conformance] [--no-bench] [--pytest 'ARGS'] [BENCH ARGS...]
#
# From the device tool: command `tools/gpu/h200.sh`, carry [".whl"]. It
# writes into DIR, else $OUT, else ./gpu-results:
#
#   conformance.json   pass/fail counts and the failing tests (tools/gpu/junit_summary.py)
#   conformance.xml    pytest's junit XML
#   conformance.log    pytest's output (only its last lines are printed)
#   gpu-bench.json     every time, rate and ratio, and issue 10's targets met or missed
#   gpu-bench.png      the chart of the ratios (when matplotlib's wheels were carried)
#   gpu-bench.log      the benchmark's output (printed too)
#
# --pytest adds arguments to pytest (e.g. --pytest '-x -k softmax'); the
# rest go to tools/gpu/bench.py (e.g. --only matmul,cumsum --repeat 50).
# Both steps run even when the first fails; the exit status is 0 when the
# suite passed and every accy result matched torch's, else 1.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}
conformance=1
bench=1
pytest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --no-conformance) conformance=0; shift ;;
    --no-bench) bench=0; shift ;;
    --pytest) eval "pytest_args=($2)"; shift 2 ;;  # shell words: -k 'a and not b' stays one
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) break ;;
  esac
done
mkdir -p "$out" || exit 1
with_gpu=tools/gpu/nvidia_opencl.sh
status=0

if [ "$conformance" = 1 ]; then
  echo "== conformance suite on the GPU (output in $out/conformance.log)"
  "$with_gpu" python3 -m pytest -q -p no:cacheprovider --junitxml="$out/conformance.xml" \
    ${pytest_args[@]+"${pytest_args[@]}"} tests/conformance > "$out/conformance.log" 2>&1
  rc=$?
  tail -n 25 "$out/conformance.log"
  python3 tools/gpu/junit_summary.py "$out/conformance.xml" --exit-status "$rc" > "$out/conformance.json"
  cat "$out/conformance.json"
  [ "$rc" = 0 ] || status=1
fi

if [ "$bench" = 1 ]; then
  echo "== GPU benchmark against torch (output in $out/gpu-bench.log)"
  "$with_gpu" python3 tools/gpu/bench.py --json "$out/gpu-bench.json" "$@" 2>&1 | tee "$out/gpu-bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit "$status"
