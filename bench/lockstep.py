"""A benchmark worker process driven in lockstep: `osprey bench --step` or a peer's worker
prints "ready" after its warm-up, then one timed run (its milliseconds) per line it reads, and a
JSON summary (min_ms, median_ms, max_ms) when its input closes. Alternating the engines run by
run makes a change of machine load hit all of them alike."""
import json
import statistics
import subprocess
import time


class Worker:
    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self.proc.stdout.readline().strip()
        while line and line != "ready" and not line.startswith("{"):
            line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"{cmd[0]} did not start: {line} {self.proc.stderr.read()[-500:]}")

    def step(self):
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker died: {self.proc.stderr.read()[-500:]}")
        return float(line)

    def finish(self):
        self.proc.stdin.close()
        summary = json.loads(self.proc.stdout.readline())
        self.proc.wait()
        return summary


def alternate(workers, loops, gap_ms=0.0, block=1, settle_ms=0.0):
    """`loops` rounds; in each, every worker in turn (the order rotated by one each round) runs
    `block` timed runs, each after a `gap_ms` pause. With block > 1 the first run of a block only
    settles and is not counted: the engine before may still be polling for work on its threads
    (ONNX Runtime's pool spins after a run), and on a machine with as many cores as threads that
    takes the cores from the first run after it, not from the engine's own back-to-back runs.
    A `settle_ms` pause before each block lets the engine before stop polling altogether (ONNX
    Runtime's pool polls for tens of milliseconds, longer than a small model's block of runs).
    Returns {key: [counted milliseconds]} for a dict of workers."""
    keys = list(workers)
    times = {k: [] for k in keys}
    for i in range(loops):
        r = i % max(len(keys), 1)
        for k in keys[r:] + keys[:r]:
            time.sleep(settle_ms / 1000.0)
            for j in range(block):
                time.sleep(gap_ms / 1000.0)
                ms = workers[k].step()
                if j > 0 or block == 1:
                    times[k].append(ms)
    return times


def summary(times):
    """min_ms and median_ms of a list of milliseconds."""
    return {"min_ms": min(times), "median_ms": statistics.median(times)} if times else {}
