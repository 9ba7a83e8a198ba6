"""A benchmark worker process driven in lockstep: `osprey bench --step` or a peer's worker
prints "ready" after its warm-up, then one timed run (its milliseconds) per line it reads, and a
JSON summary (min_ms, median_ms, max_ms) when its input closes. Alternating the engines run by
run makes a change of machine load hit all of them alike."""
import json
import subprocess


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
