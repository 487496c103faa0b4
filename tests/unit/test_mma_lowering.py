"""The tensor-core path of GPU dots without a GPU (issue 23): the `mma`
profile field, the dot lowering's choice of `accy_kernel.mma` (f16 and bf16
always, f32 only under `math = fast`), the OpenCL C it prints (inline PTX
`mma.sync`), the LLVM backend declining it, and the runtime's detection on
a device that is no NVIDIA GPU. The kernels' results are checked by
tests/conformance/test_mma_dot.py (emulated on PoCL, real on NVIDIA)."""

from __future__ import annotations

import re

import pytest
from test_kernel_ir_ops import kernel_module

from accy.backends.llvm.emitter import LLVMEmitError, emit_llvm
from accy.backends.opencl.emitter import emit_opencl
from accy.dialects.kernel import MmaOp
from accy.dialects.parse import parse_module
from accy.dialects.target import TargetAttr, TargetProfile
from accy.passes.kernelization import mma_tiles
from accy.passes.pass_manager import PassManager
from accy.passes.registry import DevicePipeline


def _matmul(et: str, target: str, m: int = 40, n: int = 24, k: int = 20, epilogue: str = "tanh") -> str:
    a, b, c = f"tensor<{m}x{k}x{et}>", f"tensor<{k}x{n}x{et}>", f"tensor<{m}x{n}x{et}>"
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
func.func @main(%a: {a}, %b: {b}) -> {c} {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}}> : ({a}, {b}) -> {c}
  %y = "accy.{epilogue}"(%d) : ({c}) -> {c}
  func.return %y : {c}
}}
}}"""


def _kernelized(text: str):
    module = parse_module(text)
    PassManager(DevicePipeline().passes()).run(module)
    return module


def _mmas(module) -> list[MmaOp]:
    return [op for op in module.walk() if isinstance(op, MmaOp)]


GPU = 'profile = "gpu", fp16 = false'


@pytest.mark.parametrize(("et", "kind"), [("f16", "f16"), ("bf16", "bf16")])
def test_half_dots_print_mma_sync(et: str, kind: str) -> None:
    module = _kernelized(_matmul(et, f'{GPU}, mma = "sm80"'))
    mmas = _mmas(module)
    # 2 warps x 4 warps of 4 x 4 tiles each, 2 rounds of k16 per staged step.
    assert len(mmas) == 4 * 4 * 2 and {op.shape.data for op in mmas} == {"m16n8k16"}
    source = emit_opencl(module)
    assert f'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 ' in source
    assert "reqd_work_group_size(32, 8, 1)" in source
    # The operands come in as they are stored: 16-bit pairs from the 16-byte
    # aligned local tiles, by ldmatrix: per round of k16, an mma tile's A
    # registers in one (4 tiles) and, transposed from the [k][n] tile, two n
    # tiles' B registers in one (2).
    assert '"r"(as_uint(v' in source and "vload2(0, l" not in source
    assert source.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4 * 2
    assert source.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 2 * 2
    assert source.count("__attribute__((aligned(16)))") == 2
    assert "tanh(" in source  # the epilogue is fused


def _negated_lhs_matmul(et: str, target: str, m: int, n: int, k: int) -> str:
    """`_matmul` whose lhs is negated first: a producer fused into the dot's kernel, no buffer."""
    a, na = f"tensor<{m}x{k}x{et}>", '%na = "accy.neg"(%a)'
    text = _matmul(et, target, m, n, k).replace('%d = "accy.dot_general"(%a,', '%d = "accy.dot_general"(%na,')
    return text.replace("  %d = ", f"  {na} : ({a}) -> {a}\n  %d = ", 1)


@pytest.mark.parametrize(("et", "extra", "lanes"), [("f16", "", 8), ("bf16", "", 8), ("f32", ', math = "fast"', 4)])
def test_contiguous_operands_are_staged_16_bytes_a_read(et: str, extra: str, lanes: int) -> None:
    # K and N whole vectors of 16 bytes, both operands buffers: every slot of
    # the lhs (along k) and of the rhs (along n) is one cp.async of 16
    # bytes, stages - 1 steps ahead (the prologue's, then each step's): 2 +
    # 2 slots a work-item a step of 128 x 64 bytes and 64 bytes x 128
    # (256 work-items; TF32's 128 work-items take 4 + 4).
    slots = 4 if et != "f32" else 8
    target = f'{GPU}, mma = "sm80"{extra}'
    source = emit_opencl(_kernelized(_matmul(et, target, m=40, n=48, k=64)))
    copies = source.count('asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"')
    stages = mma_tiles.CONFIGS[4 if et == "f32" else 2][-1].stages  # 48 KiB: the last configuration
    assert copies == slots * stages and source.count("cp.async.commit_group") == stages
    assert "(ulong)(b0 + (" in source and "(ulong)(b1 + (" in source
    # Emulated, the same copies are plain wide copies (zeros where not valid).
    vec = "float" if et == "f32" else "ushort"
    emulated = emit_opencl(_kernelized(_matmul(et, f'{GPU}, mma = "emulate", local_mem_bytes = 65536{extra}', m=40, n=48, k=64)))
    assert "cp.async" not in emulated
    assert emulated.count(f" : ({vec}{lanes})(0);") == slots * stages
    assert f"? *(__global const {vec}{lanes}*)(b0 + " in emulated
    # A fused producer of the lhs (no buffer to copy from): register staging,
    # still one wide (aligned) read a slot of each operand.
    fused = emit_opencl(_kernelized(_negated_lhs_matmul(et, target, m=40, n=48, k=64)))
    assert "cp.async" not in fused
    assert f"= *(__global const {vec}{lanes}*)(b0 + " in fused and f"= *(__global const {vec}{lanes}*)(b1 + " in fused
    assert f"*(__local {vec}{lanes}*)(l" in fused  # the lhs's vector into its staged row, one wide store
    # K of no whole vector: element by element.
    odd = emit_opencl(_kernelized(_matmul(et, target, m=40, n=48, k=63)))
    assert f"vload{lanes}(0, b0 + " not in odd and f"*(__global const {vec}{lanes}*)(b0 + " not in odd
    assert "cp.async" not in odd


@pytest.mark.parametrize(("et", "extra"), [("f16", ""), ("bf16", ""), ("f32", ', math = "fast"')])
def test_more_local_memory_gives_deeper_pipelines(et: str, extra: str) -> None:
    # Where the device builds static local arrays past local_mem_bytes
    # (static_local_bytes: NVIDIA's driver), async-copied tiles take the
    # first configuration: 16-bit operands 2 x 4 warps of 64 x 64 (128 x 256
    # blocks) in 4 stages of 64-byte k steps (106 KiB), TF32 2 x 2 of 64 x
    # 64 in 3 of 128 bytes (104 KiB); register staging and 48 KiB keep the last.
    deep, last = mma_tiles.CONFIGS[4 if et == "f32" else 2]
    target = f'{GPU}, mma = "sm80"{extra}'
    big = f"{target}, static_local_bytes = 231424"
    module = _kernelized(_matmul(et, big, m=300, n=520, k=256))
    source = emit_opencl(module)
    lay = deep.layout
    assert len(_mmas(module)) == lay.mt * lay.nt * (deep.step_bytes // (4 if et == "f32" else 2)) // (8 if et == "f32" else 16)
    assert f"reqd_work_group_size(32, {lay.warps}, 1)" in source
    assert source.count("cp.async.commit_group") == deep.stages and f"cp.async.wait_group {deep.stages - 2};" in source
    local = sum(int(n) * (4 if t == "float" else 2) for t, n in re.findall(r"__local (\w+) l\d+\[(\d+)\]", source))
    assert 49152 < local == mma_tiles.local_bytes(deep, _element(et), False, True) <= 231424
    plain = emit_opencl(_kernelized(_matmul(et, target, m=300, n=520, k=256)))
    assert plain.count("cp.async.commit_group") == last.stages
    assert f"reqd_work_group_size(32, {last.layout.warps}, 1)" in plain
    fused = _kernelized(_negated_lhs_matmul(et, big, m=300, n=520, k=256))  # register staging
    rounds = last.step_bytes // (4 if et == "f32" else 2) // (8 if et == "f32" else 16)
    assert len(_mmas(fused)) == last.layout.mt * last.layout.nt * rounds


def _element(et: str):
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type

    return {"f16": Float16Type(), "bf16": BFloat16Type(), "f32": Float32Type()}[et]


def test_f32_dots_use_tf32_only_under_fast_math() -> None:
    fast = _kernelized(_matmul("f32", f'{GPU}, mma = "sm80", math = "fast"'))
    # 2 x 2 warps of 4 x 8 tiles each, 2 rounds of k8 per staged step.
    assert len(_mmas(fast)) == 4 * 8 * 2 and {op.shape.data for op in _mmas(fast)} == {"m16n8k8"}
    source = emit_opencl(fast)
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in source and "reqd_work_group_size(32, 4, 1)" in source
    # Each mma tile's A registers (rows g, g+8 by k t, t+4 of f32) by one
    # ldmatrix a round of k8 (4 tiles, 2 rounds), read as floats; B's by plain loads.
    assert source.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4 * 2 and ".trans" not in source
    assert source.count("= as_float(w") == 4 * 4 * 2
    exact = _kernelized(_matmul("f32", f'{GPU}, mma = "sm80"'))
    assert not _mmas(exact) and "asm" not in emit_opencl(exact)


@pytest.mark.parametrize("target", [GPU, f'{GPU}, mma = ""', 'mma = "sm80", fp16 = false'])
def test_no_mma_without_the_field_or_off_the_gpu_profile(target: str) -> None:
    module = _kernelized(_matmul("f16", target))
    assert not _mmas(module) and "asm" not in emit_opencl(module)


def test_emulated_mma_is_plain_kernel_ir() -> None:
    # Emulated, the warps' exchange comes on top of the double-buffered tiles: 61 KiB.
    module = _kernelized(_matmul("bf16", f'{GPU}, mma = "emulate", local_mem_bytes = 65536'))
    source = emit_opencl(module)
    assert not _mmas(module) and "asm" not in source and "reqd_work_group_size(32, 8, 1)" in source


def test_integer_dots_keep_the_simt_tiles() -> None:
    module = _kernelized(_matmul("i32", f'{GPU}, mma = "sm80", math = "fast"', epilogue="neg"))
    assert not _mmas(module)


MMA = """%z = arith.constant 0.0 : f32
      %h = arith.constant dense<1.0> : vector<2xf16>
      %d0, %d1, %d2, %d3 = accy_kernel.mma "m16n8k16"(%h, %h, %h, %h : vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>) (%h, %h : vector<2xf16>, vector<2xf16>) (%z, %z, %z, %z : f32, f32, f32, f32) : f32, f32, f32, f32
      memref.store %d3, %a[%c0] : memref<16xf32>"""


def test_opencl_prints_and_llvm_declines_the_mma_op() -> None:
    source = emit_opencl(kernel_module(MMA, "opencl-c"))
    assert (
        'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, '
        '{%10,%11,%12,%13};" : "=f"(' in source
    )
    with pytest.raises(LLVMEmitError, match=r"kernel @k: cannot emit 'accy_kernel.mma': .*only the OpenCL C backend"):
        emit_llvm(kernel_module(MMA, "llvm-ir"))


def test_mma_op_verifies_its_fragments() -> None:
    with pytest.raises(Exception, match="m16n8k8 takes a and b fragments of one type, f32"):
        kernel_module(MMA.replace('"m16n8k16"', '"m16n8k8"'), "opencl-c")


def test_the_profile_field() -> None:
    assert TargetProfile().mma == "" and TargetProfile.from_attr(TargetAttr.from_fields({"mma": "sm80"})).mma == "sm80"
    assert str(TargetAttr.from_fields({"mma": ""})) == '#accy.target<mma = "">'
    assert TargetProfile.from_attr(TargetAttr.from_fields({"mma": "sm90"})).mma == "sm90"
    with pytest.raises(ValueError, match="target mma must be one of \"\", sm80, sm90, emulate, emulate-sm90; got 'sm100'"):
        TargetAttr.from_fields({"mma": "sm100"})
    # A device's "sm80" is cleared by a module that sets mma = "".
    assert TargetProfile(profile="gpu", mma="sm80").filled_by({"mma": ""}).mma == ""


def test_a_device_that_is_no_nvidia_gpu_has_no_mma() -> None:
    from accy.runtime.opencl import mma_of_device, opencl_devices

    devices = [d for d in opencl_devices() if "NVIDIA" not in d.vendor.upper()]
    if not devices:
        pytest.skip("no OpenCL device other than NVIDIA's")
    assert all(mma_of_device(d) == "" for d in devices)


def test_tensor_cores_are_on_unless_turned_off_and_parsed_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device's own profile sets mma (where it has mma.sync) unless
    ACCY_TENSOR_CORES is off (read when the device is made), and the flag
    is a yes/no word."""
    from accy.env import EnvVarError
    from accy.runtime.opencl import OpenCLDevice, mma_of_device, opencl_devices, tensor_cores_on

    monkeypatch.delenv("ACCY_TENSOR_CORES", raising=False)
    assert tensor_cores_on()
    monkeypatch.setenv("ACCY_TENSOR_CORES", "0")
    assert not tensor_cores_on()
    monkeypatch.setenv("ACCY_TENSOR_CORES", "1")
    assert tensor_cores_on()
    monkeypatch.setenv("ACCY_TENSOR_CORES", "sometimes")
    with pytest.raises(EnvVarError, match="ACCY_TENSOR_CORES"):
        tensor_cores_on()
    if not opencl_devices():
        return
    monkeypatch.setenv("ACCY_TENSOR_CORES", "no")
    off = OpenCLDevice()
    monkeypatch.delenv("ACCY_TENSOR_CORES")
    on = OpenCLDevice()
    assert (off.tensor_cores, on.tensor_cores) == (False, True)
    assert off.target_profile().mma == "" and off.source_identity() != on.source_identity()
    # What the device has: "sm80" on an NVIDIA GPU with mma.sync, "" on PoCL.
    assert on.target_profile().mma == (mma_of_device(on.cl_device) if on.target_profile().profile == "gpu" else "")


SM90 = f'{GPU}, mma = "sm90", static_local_bytes = 231424'


@pytest.mark.parametrize(("et", "m", "n", "k"), [("f16", 40, 24, 32), ("bf16", 300, 520, 264), ("f16", 1, 8, 8)])
def test_sm90_half_dots_staged_by_copies_print_wgmma(et: str, m: int, n: int, k: int) -> None:
    """Under mma = "sm90", a 16-bit dot whose operands async copies stage
    takes the warpgroup tiles (wgmma_tiles.py): four marked wgmmas a 64-k
    step, fenced, committed and waited on, the tiles proved in bounds (the
    device pipeline verifies them) and 1024-byte aligned."""
    from accy.dialects.kernel import WgmmaOp, WgmmaSyncOp

    module = _kernelized(_matmul(et, SM90, m, n, k))
    wgmmas = [op for op in module.walk() if isinstance(op, WgmmaOp)]
    assert [op.k_step.value.data for op in wgmmas] == [0, 1, 2, 3] and not _mmas(module)
    steps = [op.step.data for op in module.walk() if isinstance(op, WgmmaSyncOp)]
    assert steps == ["proxy", "fence", "commit", "wait", "wait"]
    source = emit_opencl(module)
    assert source.count(f"// accy-sm90a: wgmma.mma_async.sync.aligned.m64n256k16.f32.{et}.{et} ") == 4
    assert "reqd_work_group_size(32, 8, 1)" in source and "__attribute__((aligned(1024)))" in source
    assert "accy_wgmma_desc(" in source


@pytest.mark.parametrize(
    ("et", "m", "n", "k", "math"), [("f16", 40, 24, 20, "exact"), ("bf16", 33, 19, 44, "exact"), ("f32", 40, 24, 30, "fast")]
)
def test_sm90_dots_that_copies_do_not_stage_keep_mma_sync(et: str, m: int, n: int, k: int, math: str) -> None:
    """K not whole 16-byte vectors (the lhs is not staged by copies): the
    mma.sync tiles, as under sm80. (N not whole vectors, the rhs is packed
    k-contiguous for the warpgroup tiles.)"""
    module = _kernelized(_matmul(et, f'{SM90}, math = "{math}"', m, n, k))
    assert _mmas(module)
    source = emit_opencl(module)
    assert "mma.sync.aligned" in source and "wgmma" not in source


def _tf32_matmul(m: int, n: int, k: int, rhs_k_contiguous: bool, et: str = "f32") -> str:
    """A TF32 product (or of `et`) whose rhs is [k][n] (n-contiguous) or [n][k] (k-contiguous)."""
    a, c = f"tensor<{m}x{k}x{et}>", f"tensor<{m}x{n}x{et}>"
    b, contract = (f"tensor<{n}x{k}x{et}>", 1) if rhs_k_contiguous else (f"tensor<{k}x{n}x{et}>", 0)
    return f"""builtin.module attributes {{accy.target = #accy.target<{SM90}, math = "fast">}} {{
func.func @main(%a: {a}, %b: {b}) -> {c} {{
  %d = "accy.dot_general"(%a, %b) <{{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: {contract}>}}> : ({a}, {b}) -> {c}
  func.return %d : {c}
}}
}}"""


@pytest.mark.parametrize(("m", "n", "k", "rhs_k_contiguous"), [(40, 24, 32, False), (300, 520, 264, False), (40, 24, 36, True)])
def test_sm90_tf32_dots_print_wgmma_on_a_k_contiguous_rhs(m: int, n: int, k: int, rhs_k_contiguous: bool) -> None:
    """Under mma = "sm90" and math = "fast", an f32 dot whose lhs async
    copies stage takes the warpgroup tiles with m64n256k8 TF32 wgmmas, four
    a 32-k step, B's descriptor k-major (no transpose immediates: PTX has
    none for tf32). An n-contiguous rhs is first packed [n][k] into scratch
    by a launch of its own; a k-contiguous one is staged as it is."""
    from accy.dialects.kernel import WgmmaOp

    module = _kernelized(_tf32_matmul(m, n, k, rhs_k_contiguous))
    wgmmas = [op for op in module.walk() if isinstance(op, WgmmaOp)]
    assert [op.shape.data for op in wgmmas] == ["m64n256k8"] * 4 and all(op.b_is_k_major for op in wgmmas)
    assert not _mmas(module)
    source = emit_opencl(module)
    assert source.count("// accy-sm90a: wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 ") == 4
    assert source.count(", p, 1, 1;") == 4 and ", p, 1, 1, 0, 1;" not in source
    assert ("main_k0_dot_general_pack_b(" in source) is not rhs_k_contiguous


@pytest.mark.parametrize(("et", "m", "n", "k"), [("f16", 40, 24, 32), ("bf16", 300, 33, 264)])
def test_sm90_half_dots_of_a_k_contiguous_rhs_print_wgmma_untransposed(et: str, m: int, n: int, k: int) -> None:
    """A 16-bit dot whose rhs is contracted along its last dim (x · Wᵀ; N
    need not be whole vectors) takes the warpgroup tiles with B staged
    k-contiguous: wgmma's imm-trans-b 0, no packing launch."""
    from accy.dialects.kernel import WgmmaOp

    module = _kernelized(_tf32_matmul(m, n, k, True, et))
    wgmmas = [op for op in module.walk() if isinstance(op, WgmmaOp)]
    assert [op.shape.data for op in wgmmas] == ["m64n256k16"] * 4 and all(op.b_is_k_major for op in wgmmas)
    source = emit_opencl(module)
    assert source.count(f"// accy-sm90a: wgmma.mma_async.sync.aligned.m64n256k16.f32.{et}.{et} ") == 4
    assert source.count(", p, 1, 1, 0, 0;") == 4 and "pack_b" not in source and "mma.sync" not in source


def _attention(et: str, target: str, sq: int, sk: int, d: int, causal: bool) -> str:
    q, k, o = f"tensor<2x{sq}x{d}x{et}>", f"tensor<2x{sk}x{d}x{et}>", f"tensor<2x{sq}x{d}x{et}>"
    return f"""builtin.module attributes {{accy.target = #accy.target<{target}>}} {{
func.func @main(%q: {q}, %k: {k}, %v: {k}) -> {o} {{
  %y = "accy.attention"(%q, %k, %v) <{{scale = 0.125 : f32, causal = {str(causal).lower()}}}> : ({q}, {k}, {k}) -> {o}
  func.return %y : {o}
}}
}}"""


@pytest.mark.parametrize(("et", "sq", "sk", "d", "causal"), [("f16", 65, 130, 64, False), ("bf16", 130, 65, 80, True), ("f32", 7, 9, 16, True)])
def test_sm90_attention_is_the_sm80_kernel(et: str, sq: int, sk: int, d: int, causal: bool) -> None:
    """A Hopper device states mma = "sm90"; its attention keeps mma.sync:
    the kernels are the sm80 ones byte for byte (run on the H200 under sm80)."""
    math = ', math = "fast"' if et == "f32" else ""
    sources = {
        kind: emit_opencl(_kernelized(_attention(et, f'{GPU}, mma = "{kind}", static_local_bytes = 231424{math}', sq, sk, d, causal)))
        for kind in ("sm80", "sm90")
    }
    assert "mma.sync.aligned" in sources["sm80"] and "flash_attention" in sources["sm80"]
    assert sources["sm90"] == sources["sm80"]


def test_sm90a_ptx_uncomments_the_marked_lines_and_retargets() -> None:
    from accy.backends.opencl.format import WGMMA_MARK
    from accy.runtime.program_cache import sm90a_ptx

    ptx = f".version 9.0\n.target sm_90, texmode_independent\n\t// begin inline asm\n\t{WGMMA_MARK}wgmma.fence.sync.aligned;\n\0"
    out = sm90a_ptx(ptx.encode()).decode()
    assert ".target sm_90a, texmode_independent" in out and "\twgmma.fence.sync.aligned;" in out
    assert WGMMA_MARK not in out and out.endswith("\0")
    for wrong in (ptx.replace(WGMMA_MARK, ""), ptx.replace("sm_90,", "sm_90a,"), ptx.replace("sm_90,", "sm_80,")):
        with pytest.raises(ValueError, match="marked lines"):
            sm90a_ptx(wrong.encode())


@pytest.mark.parametrize("name", ["MMA_PROBE", "WGMMA_PROBE", "WGMMA_K_MAJOR_PROBE"])
def test_the_device_probes_are_opencl_c_that_builds(name: str) -> None:
    """The probes' OpenCL C, their inline PTX left out, builds on PoCL: a
    probe that NVIDIA's compiler refuses for a C error (an address-space
    cast, once) says the device has no tensor cores."""
    import pyopencl as cl

    from accy.runtime import opencl as ocl

    if not ocl.opencl_devices():
        pytest.skip("no OpenCL device")
    for line in getattr(ocl, name).splitlines():  # a C string literal ends on its line (the wgmma probe's asm once did not)
        assert len(re.findall(r'(?<!\\)"', line)) % 2 == 0, line
    source = re.sub(r"asm volatile\((.|\n)*?\);", ";", getattr(ocl, name))
    assert "asm" not in source
    cl.Program(cl.Context([ocl.opencl_devices()[0]]), source).build()
