#!/usr/bin/python3
"""tupa-train vs PyTorch on CPU (BENCHMARKS.md, "trainer, CPU").

Speed: MLP 784-1024-1024-10, batch 256, AdamW, fp32, synthetic data. Runs
tupa-train and ../shared/peers/torch_mlp.py speed alternately, --runs times
each, and prints the medians of their median step times:
  {"bench": "trainer_cpu", "tupa_step_ms": ..., "torch_step_ms": ..., "ratio": ...}
Fashion (unless --no-fashion): MLP 784-256-128-10, batch 128, AdamW lr 1e-3,
10 epochs on Debian's dataset-fashion-mnist, one run each, training-loop wall
time and test accuracy:
  {"bench": "trainer_cpu_fashion", "tupa_train_s": ..., "torch_train_s": ..., ...}

Threads: OPENBLAS_NUM_THREADS = core count for both; torch intra-op threads 1
(the fastest setup on small machines, per torch_mlp.py).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_json(cmd, env):
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return lines[-1], wall


def tupa_spec(path, layers, batch, data, steps=0, epochs=1):
    with open(path, "w") as f:
        f.write("name: bench\ntrain:\n")
        f.write("  model: {type: mlp, layers: [%s]}\n" % ", ".join(map(str, layers)))
        f.write("  data: %s\n" % data)
        f.write("  batch_size: %d\n  epochs: %d\n  steps: %d\n" % (batch, epochs, steps))
        f.write("  optimizer: {name: adamw, lr: 0.001, weight_decay: 0.01}\n")
        f.write("  precision: fp32\n  log_every: 100000\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "tupa-train"))
    p.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "peers", "torch_mlp.py"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--no-fashion", action="store_true")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()

    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    tmp = tempfile.mkdtemp(prefix="tupa_bench_")
    layers = [784, 1024, 1024, 10]
    spec = os.path.join(tmp, "speed.yaml")
    # 10 warm-up steps like the peer; the engine's median skips the first.
    tupa_spec(spec, layers, 256, "{format: synthetic, samples: 8192, test_samples: 256}",
              steps=args.steps + 10)
    tupa_cmd = [args.binary, "-f", spec, "--json", "--backend", "cpu"]
    torch_cmd = ["/usr/bin/python3", args.peer, "speed", "--layers", "784,1024,1024,10",
                 "--batch", "256", "--steps", str(args.steps), "--threads", "1"]
    tupa_ms, torch_ms = [], []
    for _ in range(args.runs):
        s, _ = run_json(tupa_cmd, env)
        tupa_ms.append(s["step_ms_median"])
        s, _ = run_json(torch_cmd, env)
        torch_ms.append(s["step_ms_median"])
    t, r = statistics.median(tupa_ms), statistics.median(torch_ms)
    print(json.dumps({"bench": "trainer_cpu", "tupa_step_ms": round(t, 3),
                      "torch_step_ms": round(r, 3), "ratio": round(t / r, 3),
                      "runs": args.runs, "openblas_threads": args.threads,
                      "tupa_runs_ms": tupa_ms, "torch_runs_ms": torch_ms}), flush=True)

    if args.no_fashion or not os.path.exists(os.path.join(args.data, "train-images-idx3-ubyte.gz")):
        return 0
    fspec = os.path.join(tmp, "fashion.yaml")
    tupa_spec(fspec, [784, 256, 128, 10], 128, "{format: idx, path: %s}" % args.data, epochs=10)
    ts, twall = run_json([args.binary, "-f", fspec, "--json", "--backend", "cpu"], env)
    rs, rwall = run_json(["/usr/bin/python3", args.peer, "fashion", "--layers", "784,256,128,10",
                          "--batch", "128", "--epochs", "10", "--threads", "1",
                          "--data", args.data], env)
    print(json.dumps({"bench": "trainer_cpu_fashion",
                      "tupa_train_s": round(ts["train_seconds"], 2),
                      "torch_train_s": rs["train_seconds"],
                      "ratio": round(ts["train_seconds"] / rs["train_seconds"], 3),
                      "tupa_wall_s": round(twall, 2), "torch_wall_s": round(rwall, 2),
                      "tupa_test_accuracy": ts["test_accuracy"],
                      "torch_test_accuracy": rs["test_accuracy"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
