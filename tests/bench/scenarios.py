"""The decision benchmarks: run by tests/bench/run, which builds the C and C++ programs first.

Every figure is compared with a baseline measured in the same run, contenders alternating
round by round (many short rounds, so that a slow spell of the machine falls on all of
them), because absolute figures on this kind of machine vary by 30 %.
"""
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time

RATELIMIT, WORK, HERE = sys.argv[1], sys.argv[2], sys.argv[3]
BENCH_EXEC = os.path.join(WORK, "bench_exec")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "20"))
PER_ROUND = int(os.environ.get("BENCH_PER_ROUND", "50"))
FAST = "1000000/s"  # every call is granted: the write path
LOCALE_FLOOR = "C++ program building the standard locale"
CLI11_FLOOR = "C++ program parsing the same options with CLI11"


def samples(command, count=None, procs=1, seconds=None):
    """Runs `command` through bench_exec; returns [(ns, status)], or with procs,
    [(ns, status, CPU ns)]."""
    args = [BENCH_EXEC]
    if count:
        args += ["-n", str(count)]
    else:
        args += ["-p", str(procs), "-s", str(seconds)]
    out = subprocess.run(args + ["--"] + command, capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()]
    if count:
        return [(int(a), int(b)) for a, b, *_ in rows]
    return [(int(a), int(b), int(c)) for a, b, c in rows]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def fresh_db(name):
    path = os.path.join(WORK, name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return path


def redis_server():
    """Starts redis-server on a free loopback port; returns (process, port) or None."""
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            return server, port
        time.sleep(0.05)
    server.kill()
    return None


def sequential():
    db_tool, db_base, db_py = fresh_db("tool.db"), fresh_db("base.db"), fresh_db("py.db")
    db_log = fresh_db("log.db")
    state = os.path.join(WORK, "bucket.state")
    contenders = {
        "empty C program (process start)": [os.path.join(WORK, "empty")],
        LOCALE_FLOOR: [os.path.join(WORK, "cxx_locale")],
        CLI11_FLOOR: [os.path.join(WORK, "cli11_floor"), "--db", db_tool, "try", "k", "-r", FAST],
        "C baseline: SQLite transaction, all tricks": [os.path.join(WORK, "baseline"), db_base, "k", "1000000", "1"],
        "ratelimit try": [RATELIMIT, "--db", db_tool, "try", "k", "-r", FAST, "-a", "token-bucket"],
        # The default algorithm, exact: one log entry per grant besides the key's row.
        "ratelimit try (sliding-log, the default)": [RATELIMIT, "--db", db_log, "try", "k", "-r", FAST],
        "bash + flock(1) token bucket": ["bash", os.path.join(HERE, "peer_flock_bucket.sh"), state, "1000000", "1"],
        "python3 sqlite3 script": ["/usr/bin/python3", os.path.join(HERE, "peer_python_sqlite.py"), db_py, "k", "1000000", "1"],
    }
    redis = redis_server()
    if redis:
        port = str(redis[1])
        contenders["redis-cli INCR + EXPIRE from sh"] = [
            "sh", "-c", f'n=$(redis-cli -p {port} INCR k); [ "$n" -eq 1 ] && redis-cli -p {port} EXPIRE k 1 >/dev/null; [ "$n" -le 1000000 ]']
    results = {name: [] for name in contenders}
    for command in contenders.values():
        samples(command, count=5)  # warm caches, create files
    for _ in range(ROUNDS):
        for name, command in contenders.items():
            per_round = PER_ROUND if "python" not in name else max(10, PER_ROUND // 5)
            results[name] += samples(command, count=per_round)
    if redis:
        redis[0].terminate()
    base = percentile([ns for ns, _ in results["C baseline: SQLite transaction, all tricks"]], 0.5)
    print("\n### One decision per process, sequential\n")
    row("contender", "median", "p99", "median / C baseline", "errors")
    row("---", "---", "---", "---", "---")
    for name, values in results.items():
        times = [ns for ns, _ in values]
        errors = sum(1 for _, status in values if status not in (0, 1))
        row(name, ms(percentile(times, 0.5)), ms(percentile(times, 0.99)),
            f"{percentile(times, 0.5) / base:.2f}×", errors)
    # What ratelimit costs beyond the C baseline, against what a C++ program pays before any
    # work: libstdc++'s locale (which CLI11 builds) and CLI11 setting up and parsing options.
    median = {name: percentile([ns for ns, _ in values], 0.5) for name, values in results.items()}
    empty = median["empty C program (process start)"]
    beyond, floor = median["ratelimit try"] - base, median[CLI11_FLOOR] - empty
    print(f"\nratelimit try − C baseline: {ms(beyond)}. "
          f"C++ with CLI11 − empty C program: {ms(floor)}, "
          f"of which the locale: {ms(median[LOCALE_FLOOR] - empty)}. Without CLI11's floor, "
          f"ratelimit try would cost {(median['ratelimit try'] - floor) / base:.2f}× the C baseline"
          + (f"; the floor is {100 * floor / beyond:.0f} % of what it costs beyond it." if beyond > 0
             else "."))


def contended():
    """8 processes on one key, then on 8 keys (each loop its own, %i in bench_exec), the
    C baseline, the same behind CLI11's floor and ratelimit in turn, under the same flock:
    one database each. On two cores eight processes are bound by the CPU a call costs, so
    the second line is the most a tool parsing its options with CLI11 could reach."""
    seconds = float(os.environ.get("BENCH_SECONDS", "3"))
    rounds = int(os.environ.get("BENCH_CONTENDED_ROUNDS", "3"))
    for title, key in (("one key", "k"), ("8 keys, one each", "k%i")):
        db_tool, db_base, db_floor = fresh_db("tool8.db"), fresh_db("base8.db"), fresh_db("floor8.db")
        contenders = {
            "C baseline (flock first)": [os.path.join(WORK, "baseline"), db_base, key, "1000000", "1"],
            "C baseline behind CLI11's parsing": [os.path.join(WORK, "cli11_baseline"), "--db", db_floor,
                                                  "try", key, "-r", FAST, "-a", "token-bucket"],
            "ratelimit try": [RATELIMIT, "--db", db_tool, "try", key, "-r", FAST, "-a", "token-bucket"],
        }
        results = {name: [] for name in contenders}
        for command in contenders.values():
            samples(command, count=5)  # the database made by one process
            samples(command, procs=8, seconds=0.2)  # and every key
        for _ in range(rounds):
            for name, command in contenders.items():
                results[name].append(samples(command, procs=8, seconds=seconds))
        print(f"\n### 8 processes on {title}, {seconds:g} s, {rounds} times each, alternating\n")
        row("contender", "throughput", "p99", "throughput / C baseline", "p99 / C baseline",
            "CPU per call", "errors")
        row("---", "---", "---", "---", "---", "---", "---")
        base_rate = base_p99 = None
        rates = {}
        for name, runs in results.items():
            rate = sum(len(run) for run in runs) / (seconds * len(runs))
            times = [ns for run in runs for ns, _, _ in run]
            cpu = sum(c for run in runs for _, _, c in run) / max(1, len(times))
            p99 = percentile(times, 0.99)
            base_rate, base_p99 = base_rate or rate, base_p99 or p99
            errors = sum(1 for run in runs for _, status, _ in run if status not in (0, 1))
            row(name, f"{rate:.0f}/s", ms(p99), f"{rate / base_rate:.2f}×", f"{p99 / base_p99:.2f}×",
                ms(cpu), errors)
            rates[name] = rate
        floor = rates["C baseline behind CLI11's parsing"]
        print(f"\nratelimit try: {rates['ratelimit try'] / floor:.2f}× the throughput of the C baseline "
              f"behind CLI11's parsing, which makes {floor / rates['C baseline (flock first)']:.2f}× "
              "the C baseline's.")


def encode_limits(count, period, burst, slots):
    return struct.pack("<6q", count, period, burst, *slots)


def prepared_db(name, fill):
    path = fresh_db(name)
    subprocess.run([RATELIMIT, "--db", path, "try", "seed", "-r", "1/s"], check=True)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN")
    connection.execute("DELETE FROM keys")
    connection.execute("DELETE FROM grant_log")
    fill(connection)
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


def sliding_log_db(name, entries):
    period = 3600 * 10**9
    now = time.time_ns()
    step = (period // 2) // entries

    def fill(connection):
        first = now - entries * step
        connection.execute(
            "INSERT INTO keys (id, name, algorithm, clock, limits, log_period) "
            "VALUES (1, ?, 'sliding-log', ?, ?, ?)",
            (b"log", now, encode_limits(1000000, period, 1000000, (first + (entries - 1) * step, entries, 0)),
             period))
        connection.executemany(
            "INSERT INTO grant_log (key_id, cumulative, at) VALUES (1, ?, ?)",
            ((i + 1, first + i * step) for i in range(entries)))

    return prepared_db(name, fill)


def many_keys_db(name, keys):
    def fill(connection):
        limits = encode_limits(10, 10**9, 10, (0, 0, 0))
        connection.executemany(
            "INSERT INTO keys (name, algorithm, clock, limits) VALUES (?, 'token-bucket', 0, ?)",
            ((f"key-{i}".encode(), limits) for i in range(keys)))

    return prepared_db(name, fill)


def growth():
    print("\n### Growth\n")
    row("scenario", "median", "p99", "ratio")
    row("---", "---", "---", "---")
    pairs = [
        ("sliding-log try, 10 entries", "sliding-log try, 100 000 entries",
         lambda db: [RATELIMIT, "--db", db, "try", "log", "-r", "1000000/h", "-a", "sliding-log"],
         sliding_log_db("log10.db", 10), sliding_log_db("log100k.db", 100000)),
        ("try, empty database", "try, 100 000 keys",
         lambda db: [RATELIMIT, "--db", db, "try", "k", "-r", FAST],
         many_keys_db("keys0.db", 0), many_keys_db("keys100k.db", 100000)),
    ]
    for small_name, large_name, command, small_db, large_db in pairs:
        small, large = [], []
        for _ in range(ROUNDS):
            small += [ns for ns, _ in samples(command(small_db), count=PER_ROUND)]
            large += [ns for ns, _ in samples(command(large_db), count=PER_ROUND)]
        ratio = percentile(large, 0.5) / percentile(small, 0.5)
        row(small_name, ms(percentile(small, 0.5)), ms(percentile(small, 0.99)), "1.00×")
        row(large_name, ms(percentile(large, 0.5)), ms(percentile(large, 0.99)), f"{ratio:.2f}×")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def sleeping_waiters():
    db = fresh_db("sleepers.db")
    subprocess.run([RATELIMIT, "--db", db, "try", "sleepy", "-r", "1/min", "-b", "1"], check=True)
    waiters = [subprocess.Popen([RATELIMIT, "--db", db, "wait", "sleepy", "-r", "1/min", "-b", "1"])
               for _ in range(100)]
    time.sleep(2)
    before = sum(cpu_ticks(w.pid) for w in waiters)
    time.sleep(5)
    after = sum(cpu_ticks(w.pid) for w in waiters)
    for w in waiters:
        w.send_signal(signal.SIGTERM)
    statuses = [w.wait() for w in waiters]
    print("\n### 100 waiters sleeping on one key\n")
    row("CPU used by all 100 in 5 s of sleep", "exit statuses after SIGTERM")
    row("---", "---")
    row(f"{after - before} clock ticks ({(after - before) * 10} ms)",
        ", ".join(f"{statuses.count(s)}× {s}" for s in sorted(set(statuses))))


print(f"ratelimit: {RATELIMIT}")
print(subprocess.run([RATELIMIT, "--version"], capture_output=True, text=True).stdout.strip())
print(f"{os.cpu_count()} cores; rounds {ROUNDS} × {PER_ROUND} calls per contender")
sequential()
contended()
growth()
sleeping_waiters()
