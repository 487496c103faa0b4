"""The LLVM IR backend: every corpus program (and a few written here) kernelized
for `format=llvm-ir` on the CPU profile, emitted, parsed and verified by
llvmlite; then JIT-compiled with llvmlite's MCJIT and run by a small host
walker (the host schedule's `gpu.launch_func`s in order, each kernel over all
its work-groups through ctypes, following the kernel ABI of
accy/backends/llvm/emitter.py) and compared with the reference interpreter.

The walker is a test helper, not a device: no thread pool, no memory pool,
no fallbacks (a program with one is not run here)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import FunctionType, IntegerType, MemRefType, ModuleOp, TensorType
from xdsl.parser import Parser

from accy.backends.llvm import LLVMEmitError, emit_llvm, emit_math, kernel_arguments, kernel_funcs
from accy.backends.llvm.emitter import MATH_FUNCTIONS
from accy.dialects.context import make_context
from accy.dialects.host import ConstantOp as HostConstantOp
from accy.dialects.host import FallbackOp
from accy.dialects.target import TargetAttr
from accy.passes.kernelization.kernelize import KernelizePass
from accy.passes.pass_manager import PassManager
from accy.passes.target import SetTargetPass
from accy.reference import run as reference_run
from accy.reference.constants import dense_to_numpy, numpy_dtype

llvm = pytest.importorskip("llvmlite.binding")

ROOT = Path(__file__).parents[1]
PROGRAMS = sorted((ROOT / "programs").glob("*.mlir"))


# --------------------------------------------------------------------------
# Helpers: kernelize, JIT, walk the host schedule
# --------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def kernelize(text: str, **target: object) -> ModuleOp:
    module = parse(text)
    PassManager([SetTargetPass(format="llvm-ir", **target), KernelizePass()]).run(module)  # type: ignore[arg-type]
    return module


@functools.cache
def _machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        llvm.load_library_permanently(libm)
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)


_ENGINES: list[object] = []  # keeps the engines (and their code) alive


def jit(module: ModuleOp) -> dict[str, ctypes._CFuncPtr]:
    """The module's kernels, verified, optimised at O2 and compiled by MCJIT: name -> ctypes function."""
    ref = llvm.parse_assembly(emit_llvm(module))
    ref.verify()
    tm = _machine()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(ref, pb)
    engine = llvm.create_mcjit_compiler(ref, tm)
    engine.finalize_object()
    _ENGINES.append(engine)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    return {f.sym_name.data: proto(engine.get_function_address(f.sym_name.data)) for f in kernel_funcs(module)}


def _storage(t) -> np.dtype:
    """The numpy type of a buffer of element type `t` (i1 -> uint8, 0/1)."""
    if isinstance(t, IntegerType) and t.width.data == 1:
        return np.dtype(np.uint8)
    return np.dtype(numpy_dtype(t))


def _poisoned(t: MemRefType) -> np.ndarray:
    n = t.get_shape()[0]
    dt = _storage(t.element_type)
    return np.full(n, np.nan, dt) if dt.kind == "f" else np.full(n, 0x5A, dt)


def call_kernel(fn, buffers: list[np.ndarray], groups: int, block: int, ranges: int = 1) -> None:
    """Runs kernel `fn` over work-groups 0..groups-1 (split into `ranges` calls, as a thread pool would)."""
    ptrs = (ctypes.c_void_p * len(buffers))(*(b.ctypes.data for b in buffers))
    bounds = np.linspace(0, groups, ranges + 1).astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        fn(ctypes.addressof(ptrs), int(lo), int(hi), block)


def run_host(module: ModuleOp, kernels, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Walks `func.func @main`'s host schedule with numpy buffers; its results reshaped as the signature says."""
    main = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    signature = main.attributes["accy.signature"]
    assert isinstance(signature, FunctionType)
    env: dict = {}
    for arg, a in zip(main.body.block.args, inputs, strict=True):
        env[arg] = np.ascontiguousarray(a).reshape(-1).view(_storage(arg.type.element_type)).copy()
    for op in main.body.block.ops:
        if isinstance(op, arith.ConstantOp):
            env[op.results[0]] = op.value.value.data  # type: ignore[union-attr]
        elif isinstance(op, memref.AllocOp):
            env[op.results[0]] = _poisoned(op.results[0].type)
        elif isinstance(op, memref.DeallocOp):
            pass
        elif isinstance(op, HostConstantOp):
            buf = _poisoned(op.results[0].type)
            flat = dense_to_numpy(op.value).reshape(-1)
            buf[: flat.size] = flat.astype(buf.dtype)
            env[op.results[0]] = buf
        elif isinstance(op, gpu.LaunchFuncOp):
            sizes = [env[v] for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ, op.blockSizeX, op.blockSizeY, op.blockSizeZ)]
            assert sizes[1:3] == [1, 1] and sizes[4:] == [1, 1], f"{op.kernel}: only x-dimension launches here"
            name = op.kernel.nested_references.data[-1].data
            call_kernel(kernels[name], [env[v] for v in op.kernelOperands], sizes[0], sizes[3], ranges=2)
        elif isinstance(op, FallbackOp):
            pytest.skip(f"host fallback {op.kernel.data}: not run by this walker")
        elif isinstance(op, func.ReturnOp):
            outs = []
            for v, t in zip(op.operands, signature.outputs.data, strict=True):
                assert isinstance(t, TensorType)
                n = int(np.prod(t.get_shape()))
                a = env[v][:n].reshape(t.get_shape())
                if _storage(t.element_type) == np.uint8:  # an i1 result: its bytes must be 0 or 1
                    assert set(np.unique(a)) <= {0, 1}, f"i1 result bytes {np.unique(a)}"
                    a = a.astype(bool)
                outs.append(a)
            return outs
        else:
            raise AssertionError(f"the test walker does not know host op '{op.name}'")
    raise AssertionError("@main has no func.return")


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    main = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    rng = np.random.default_rng(seed)
    out = []
    for t in main.function_type.inputs.data:
        assert isinstance(t, TensorType)
        shape, et = tuple(t.get_shape()), t.element_type
        dt = np.dtype(numpy_dtype(et))
        if dt == np.bool_:
            out.append(rng.random(shape) < 0.5)
        elif dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        else:
            out.append(rng.integers(-6, 7, shape).astype(dt))
    return out


def check_against_reference(text: str, inputs: list[np.ndarray] | None = None, rtol: float = 2e-5, atol: float = 2e-5, **target):
    """Kernelized for llvm-ir, JIT-run, compared with the reference; the module (for more checks)."""
    module = kernelize(text, **target)
    inputs = inputs if inputs is not None else random_inputs(parse(text))
    want = reference_run(parse(text), "main", *inputs)
    got = run_host(module, jit(module), inputs)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, (i, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"result #{i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"result #{i}")
    return module


def kinds(module: ModuleOp) -> set[str]:
    return {f.attributes["accy.kind"].data for f in kernel_funcs(module)}  # type: ignore[union-attr]


# --------------------------------------------------------------------------
# Every corpus program: emitted and verified; most of them run
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_corpus_program_emits_verified_llvm_ir(path: Path) -> None:
    module = kernelize(path.read_text())
    text = emit_llvm(module)
    llvm.parse_assembly(text).verify()
    for f in kernel_funcs(module):
        assert f'define void @"{f.sym_name.data}"(ptr %"buffers", i64 %"group_lo", i64 %"group_hi", i64 %"block")' in text


RUN = ["elementwise_chain", "mixed_types", "mlp", "reductions", "scan_prologue", "softmax_named",
       "layer_norm_named", "attention_named", "shape_chain", "softmax_primitives"]  # fmt: skip


@pytest.mark.parametrize("name", RUN)
def test_corpus_program_runs_as_the_reference(name: str) -> None:
    check_against_reference((ROOT / "programs" / f"{name}.mlir").read_text(), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------
# Programs written here: one per kind of kernel and per delicate semantics
# --------------------------------------------------------------------------


def test_masks_and_i1_buffers() -> None:
    text = """
func.func @main(%a: tensor<37xi1>, %b: tensor<37xi1>, %x: tensor<37xf32>) -> (tensor<37xi1>, tensor<37xf32>, tensor<37xi32>) {
  %n = "accy.not"(%a) : (tensor<37xi1>) -> tensor<37xi1>
  %o = "accy.xor"(%n, %b) : (tensor<37xi1>, tensor<37xi1>) -> tensor<37xi1>
  %z = "accy.constant"() <{value = dense<0.5> : tensor<37xf32>}> : () -> tensor<37xf32>
  %g = "accy.cmp"(%x, %z) <{predicate = "lt"}> : (tensor<37xf32>, tensor<37xf32>) -> tensor<37xi1>
  %m = "accy.and"(%o, %g) : (tensor<37xi1>, tensor<37xi1>) -> tensor<37xi1>
  %s = "accy.select"(%m, %x, %z) : (tensor<37xi1>, tensor<37xf32>, tensor<37xf32>) -> tensor<37xf32>
  %i = "accy.cast"(%m) : (tensor<37xi1>) -> tensor<37xi32>
  func.return %m, %s, %i : tensor<37xi1>, tensor<37xf32>, tensor<37xi32>
}"""
    check_against_reference(text)


def test_integer_division_by_zero_and_int_min() -> None:
    text = """
func.func @main(%a: tensor<40xi32>, %b: tensor<40xi32>) -> (tensor<40xi32>, tensor<40xi32>) {
  %q = "accy.div"(%a, %b) : (tensor<40xi32>, tensor<40xi32>) -> tensor<40xi32>
  %m = "accy.max"(%a, %b) : (tensor<40xi32>, tensor<40xi32>) -> tensor<40xi32>
  func.return %q, %m : tensor<40xi32>, tensor<40xi32>
}"""
    rng = np.random.default_rng(3)
    a = rng.integers(-100, 100, 40).astype(np.int32)
    b = rng.integers(-4, 5, 40).astype(np.int32)  # zeros among them
    a[:3], b[:3] = np.iinfo(np.int32).min, -1  # INT_MIN / -1
    b[5] = 0
    check_against_reference(text, [a, b])


def test_float_to_int_casts_of_nan_inf_and_out_of_range() -> None:
    text = """
func.func @main(%x: tensor<24xf32>, %i: tensor<24xi32>) -> (tensor<24xi32>, tensor<24xf32>, tensor<24xf64>, tensor<24xf16>) {
  %c = "accy.cast"(%x) : (tensor<24xf32>) -> tensor<24xi32>
  %f = "accy.cast"(%i) : (tensor<24xi32>) -> tensor<24xf32>
  %d = "accy.cast"(%x) : (tensor<24xf32>) -> tensor<24xf64>
  %h = "accy.cast"(%x) : (tensor<24xf32>) -> tensor<24xf16>
  func.return %c, %f, %d, %h : tensor<24xi32>, tensor<24xf32>, tensor<24xf64>, tensor<24xf16>
}"""
    x = np.linspace(-5, 5, 24).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2.0**31]
    i = np.arange(-12, 12, dtype=np.int32) * 1000003
    check_against_reference(text, [x, i])


def test_vector_reductions_propagate_nan() -> None:
    text = """
func.func @main(%x: tensor<6x64xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %0 = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<6x64xf32>) -> tensor<6xf32>
  %1 = "accy.reduce"(%x) <{kind = "min", axes = array<i64: 1>}> : (tensor<6x64xf32>) -> tensor<6xf32>
  %2 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<6x64xf32>) -> tensor<6xf32>
  func.return %0, %1, %2 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}"""
    x = np.random.default_rng(4).standard_normal((6, 64)).astype(np.float32)
    x[1, 5] = np.nan  # inside a vector
    x[3, 63] = np.nan  # the last lane
    module = check_against_reference(text, [x])
    assert "reduction" in kinds(module)
    text_ir = emit_llvm(module)
    assert "llvm.vector.reduce.fmaximum" in text_ir and "llvm.vector.reduce.fminimum" in text_ir


def test_register_tiled_dot() -> None:
    text = """
func.func @main(%a: tensor<12x40xf32>, %b: tensor<40x64xf32>) -> tensor<12x64xf32> {
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<12x40xf32>, tensor<40x64xf32>) -> tensor<12x64xf32>
  func.return %0 : tensor<12x64xf32>
}"""
    module = check_against_reference(text, rtol=1e-4, atol=1e-4)
    assert any(k.startswith("dot") for k in kinds(module)), kinds(module)
    # The register tile: a loop carrying several vectors (phis of <16 x float>).
    assert any(len(op.results) > 1 for f in kernel_funcs(module) for op in f.walk() if isinstance(op, scf.ForOp))
    assert "phi  <16 x float>" in emit_llvm(module)


def test_split_reduction_of_100000_elements() -> None:
    text = """
func.func @main(%x: tensor<100000xf32>) -> (tensor<f32>, tensor<f32>) {
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 0>}> : (tensor<100000xf32>) -> tensor<f32>
  %1 = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 0>}> : (tensor<100000xf32>) -> tensor<f32>
  func.return %0, %1 : tensor<f32>, tensor<f32>
}"""
    x = np.random.default_rng(5).standard_normal(100000).astype(np.float32)
    module = check_against_reference(text, [x], rtol=1e-4, atol=1e-3)
    assert len(kernel_funcs(module)) >= 3  # partials, then their combination


def test_scan_along_long_rows() -> None:
    text = """
func.func @main(%x: tensor<3x1000xf32>) -> (tensor<3x1000xf32>, tensor<3x1000xf32>) {
  %c = "accy.scan"(%x) <{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<3x1000xf32>) -> tensor<3x1000xf32>
  %m = "accy.scan"(%x) <{kind = "max", axis = 1 : i64, exclusive = true, reverse = true}> : (tensor<3x1000xf32>) -> tensor<3x1000xf32>
  func.return %c, %m : tensor<3x1000xf32>, tensor<3x1000xf32>
}"""
    module = check_against_reference(text, rtol=1e-4, atol=1e-3)
    assert "scan" in kinds(module)


def test_row_pipeline_softmax_and_layer_norm() -> None:
    text = """
func.func @main(%x: tensor<5x1001xf32>, %g: tensor<1001xf32>, %b: tensor<1001xf32>) -> (tensor<5x1001xf32>, tensor<5x1001xf32>) {
  %0 = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<5x1001xf32>) -> tensor<5x1001xf32>
  %1 = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<5x1001xf32>, tensor<1001xf32>, tensor<1001xf32>) -> tensor<5x1001xf32>
  func.return %0, %1 : tensor<5x1001xf32>, tensor<5x1001xf32>
}"""
    module = check_against_reference(text, rtol=1e-4, atol=1e-5)
    assert kinds(module) == {"row_pipeline"}


def test_flash_attention_on_the_cpu_profile() -> None:
    text = """
func.func @main(%q: tensor<2x33x16xf32>, %k: tensor<2x47x16xf32>, %v: tensor<2x47x16xf32>) -> tensor<2x33x16xf32> {
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.25 : f32, causal = false}> : (tensor<2x33x16xf32>, tensor<2x47x16xf32>, tensor<2x47x16xf32>) -> tensor<2x33x16xf32>
  func.return %0 : tensor<2x33x16xf32>
}"""
    module = check_against_reference(text, rtol=1e-4, atol=1e-5)
    assert any("attention" in k for k in kinds(module)), kinds(module)


def test_math_functions_under_both_tiers() -> None:
    text = """
func.func @main(%x: tensor<45xf32>) -> (tensor<45xf32>, tensor<45xf32>, tensor<45xf32>, tensor<45xf32>) {
  %t = "accy.tanh"(%x) : (tensor<45xf32>) -> tensor<45xf32>
  %e = "accy.gelu"(%x) : (tensor<45xf32>) -> tensor<45xf32>
  %a = "accy.abs"(%x) : (tensor<45xf32>) -> tensor<45xf32>
  %r = "accy.rsqrt"(%a) : (tensor<45xf32>) -> tensor<45xf32>
  %s = "accy.sigmoid"(%x) : (tensor<45xf32>) -> tensor<45xf32>
  func.return %t, %e, %r, %s : tensor<45xf32>, tensor<45xf32>, tensor<45xf32>, tensor<45xf32>
}"""
    for tier in ("exact", "fast"):
        module = check_against_reference(text, rtol=1e-5, atol=1e-6, math=tier)
        ir_text = emit_llvm(module)
        # float32 tanh and erf are vector_math's inlined polynomials, not libm calls lane by lane.
        assert '@"tanhf"' not in ir_text and '@"erff"' not in ir_text


@pytest.mark.parametrize("ty", ["float", "<4 x float>", "double", "half", "<3 x double>"])
def test_every_math_function_emits_for_every_float_type(ty: str) -> None:
    from llvmlite import ir

    t = {"float": ir.FloatType(), "double": ir.DoubleType(), "half": ir.HalfType(),
         "<4 x float>": ir.VectorType(ir.FloatType(), 4), "<3 x double>": ir.VectorType(ir.DoubleType(), 3)}[ty]  # fmt: skip
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(t, [t, t, t]), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    x, y, z = fn.args
    acc = x
    for name in sorted(MATH_FUNCTIONS):
        more = {"pow": [y], "atan2": [y], "copysign": [y], "fma": [y, z]}.get(name, [])
        acc = b.fadd(acc, emit_math(b, name, x, "exact", *more))
    b.ret(acc)
    llvm.parse_assembly(str(mod)).verify()


# --------------------------------------------------------------------------
# The kernel ABI, the buffer types and the refusals
# --------------------------------------------------------------------------


def test_kernel_arguments_give_buffer_types_sizes_and_writes() -> None:
    module = kernelize((ROOT / "programs" / "mixed_types.mlir").read_text())
    args = kernel_arguments(module)
    assert set(args) == {f.sym_name.data for f in kernel_funcs(module)}
    every = [a for bufs in args.values() for a in bufs]
    assert {a.element for a in every} >= {"f32", "i32", "i8"}
    assert all(a.size > 0 for a in every) and any(a.written for a in every) and any(not a.written for a in every)
    assert all(a.dtype == np.dtype(np.int8) for a in every if a.element == "i8")


def test_work_group_ranges_cover_the_launch() -> None:
    """One call or several ranges of groups compute the same (the ABI's split)."""
    text = (ROOT / "programs" / "elementwise_chain.mlir").read_text()
    module = kernelize(text)
    kernels = jit(module)
    inputs = random_inputs(parse(text))
    whole = run_host(module, kernels, inputs)
    name = kernel_funcs(module)[0].sym_name.data
    bufs = [np.zeros(a.size, a.dtype) for a in kernel_arguments(module)[name]]
    call_kernel(kernels[name], bufs, 0, 64)  # an empty range does nothing
    assert all(not b.any() for b in bufs)
    assert whole  # and run_host used two ranges per launch


def test_kernels_with_barriers_or_local_memory_are_refused() -> None:
    text = (ROOT / "programs" / "softmax_named.mlir").read_text()
    module = parse(text)
    PassManager([SetTargetPass(profile="gpu"), KernelizePass()]).run(module)
    module.attributes["accy.target"] = TargetAttr.from_fields({"format": "llvm-ir"})  # a hand-made mismatch
    with pytest.raises(LLVMEmitError, match=r"kernel @main_k\d+_\w+ uses (gpu.barrier|workgroup memory).*profile=cpu"):
        emit_llvm(module)


def test_gpu_profile_with_llvm_ir_is_refused() -> None:
    with pytest.raises(ValueError, match=r"target format 'llvm-ir' needs profile 'cpu'"):
        SetTargetPass(profile="gpu", format="llvm-ir")
    with pytest.raises(Exception, match=r"target format 'llvm-ir' needs profile 'cpu'"):
        parse('builtin.module attributes {accy.target = #accy.target<profile = "gpu", format = "llvm-ir">} {}')


def test_another_format_is_refused() -> None:
    module = parse((ROOT / "programs" / "mlp.mlir").read_text())
    PassManager([KernelizePass()]).run(module)
    with pytest.raises(LLVMEmitError, match=r"llvm: the module's target asks for format 'opencl-c', but this backend prints 'llvm-ir'"):
        emit_llvm(module)


HAND_WRITTEN = """
builtin.module attributes {gpu.container_module, accy.target = #accy.target<format = "llvm-ir">} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<32xf64>, memref<32xi8>, memref<24xi32>) -> (), kernel}> ({
    ^bb0(%a: memref<32xf64>, %mask: memref<32xi8>, %out: memref<24xi32>):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %g = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %n = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %gid = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
      %base = arith.muli %gid, %c4 : index
      %x = vector.load %a[%base] : memref<32xf64>, vector<4xf64>
      %zero = arith.constant 0.0 : f64
      %zv = vector.broadcast %zero : f64 to vector<4xf64>
      %neg = accy_kernel.vcmp "olt", %x, %zv : vector<4xf64> -> vector<4xi1>
      %ax = accy_kernel.vselect %neg, %zv, %x : vector<4xi1>, vector<4xf64>
      %i = accy_kernel.vcast "fptosi", %x : vector<4xf64> -> vector<4xi32>
      %ai = math.absi %i : vector<4xi32>
      %sum = vector.reduction <add>, %ai : vector<4xi32> into i32
      %mx = vector.reduction <maxsi>, %i : vector<4xi32> into i32
      %x1 = vector.extract %ax[1] : f64 from vector<4xf64>
      %ins = vector.insert %x1, %zv[3] : f64 into vector<4xf64>
      %tile = memref.alloca() : memref<2x3xi32>
      %flags = memref.alloca() : memref<4xi1>
      %true = arith.constant true
      memref.store %true, %flags[%c3] : memref<4xi1>
      %ti = arith.index_cast %t : index to i32
      memref.store %ti, %tile[%c1, %c1] : memref<2x3xi32>
      %one = arith.constant 1 : i32
      %f0, %f1 = scf.for %k = %c0 to %c4 step %c1 iter_args(%p = %one, %q = %one) -> (i32, i32) {
        %s = arith.addi %p, %q : i32
        scf.yield %q, %s : i32, i32
      }
      %odd = arith.remsi %g, %c3 : index
      %isodd = arith.cmpi ne, %odd, %c0 : index
      %sel = scf.if %isodd -> (i32) {
        %tt = memref.load %tile[%c1, %c1] : memref<2x3xi32>
        scf.yield %tt : i32
      } else {
        %nn = arith.index_cast %n : index to i32
        scf.yield %nn : i32
      }
      %fl = memref.load %flags[%c3] : memref<4xi1>
      %fi = arith.extui %fl : i1 to i32
      %o = arith.muli %gid, %c3 : index
      memref.store %sum, %out[%o] : memref<24xi32>
      %o1 = arith.addi %o, %c1 : index
      %v1 = arith.addi %mx, %f1 : i32
      memref.store %v1, %out[%o1] : memref<24xi32>
      %o2 = arith.addi %o1, %c1 : index
      %v2 = arith.addi %sel, %fi : i32
      memref.store %v2, %out[%o2] : memref<24xi32>
      %one8 = arith.constant dense<1> : vector<4xi8>
      %zero8 = arith.constant dense<0> : vector<4xi8>
      %m8 = accy_kernel.vselect %neg, %one8, %zero8 : vector<4xi1>, vector<4xi8>
      vector.store %m8, %mask[%base] : memref<32xi8>, vector<4xi8>
      %y = arith.addf %ins, %ax : vector<4xf64>
      vector.store %y, %a[%base] : memref<32xf64>, vector<4xf64>
      "gpu.return"() : () -> ()
    }) {sym_name = "main_k0_mixed", accy.kind = "elementwise"} : () -> ()
  }) : () -> ()
}
"""


def test_hand_written_kernel_ids_private_arrays_if_results_lanes_and_masks() -> None:
    """Ops the lowerings rarely make: private 2-D and i1 arrays, swapped
    iter_args, scf.if results, lane insert/extract, vcmp/vselect/vcast,
    integer reductions, absi, dense vector constants, thread/block ids."""
    module = parse(HAND_WRITTEN)
    kernels = jit(module)
    a = np.random.default_rng(9).standard_normal(32) * 10
    mask, out = np.zeros(32, np.int8), np.zeros(24, np.int32)
    buf = a.copy()
    call_kernel(kernels["main_k0_mixed"], [buf, mask, out], groups=4, block=2, ranges=3)
    x = a.reshape(8, 4)
    ax = np.where(x < 0, 0.0, x)
    i = np.trunc(x).astype(np.int32)
    gid = np.arange(8)
    group, thread = gid // 2, gid % 2
    fib = 8  # (1, 1) -> (1, 2) -> (2, 3) -> (3, 5) -> (5, 8)
    sel = np.where(group % 3 != 0, thread, 2)
    want = np.stack([np.abs(i).sum(1), i.max(1) + fib, sel + 1], axis=1).reshape(-1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(mask, (x < 0).astype(np.int8).reshape(-1))
    ins = np.zeros_like(x)
    ins[:, 3] = ax[:, 1]
    np.testing.assert_array_equal(buf, (ins + ax).reshape(-1))
