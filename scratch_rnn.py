import sys
sys.path.insert(0, "tools/bench")
import accy.passes.kernelization.dot as dot  # noqa: E402
dot.GPU_MIN_TILE = int(sys.argv[1])
dot.GPU_SPLIT_MIN_K = int(sys.argv[2])
dot.GPU_MIN_BLOCKS = int(sys.argv[3])
import rnn  # noqa: E402
rows = rnn.measure(["opencl"], 64, 1024, 100, 20)
print("min_tile", sys.argv[1], "split_min_k", sys.argv[2], "min_blocks", sys.argv[3], rnn.table(rows).splitlines()[-1], flush=True)
