"""The Python one-off: a token bucket in the standard library's sqlite3.

    peer_python_sqlite.py DB KEY COUNT PERIOD_SECONDS    exit 0 granted, 1 limited
"""
import sqlite3
import sys
import time

db, key, count, period = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
connection = sqlite3.connect(db, timeout=10, isolation_level=None)
connection.execute("PRAGMA journal_mode=WAL")
connection.execute("CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, tokens REAL, at REAL)")
connection.execute("BEGIN IMMEDIATE")
row = connection.execute("SELECT tokens, at FROM buckets WHERE key = ?", (key,)).fetchone()
now = time.time()
tokens, at = row if row else (count, now)
tokens = min(count, tokens + max(0.0, now - at) * count / period)
allowed = tokens >= 1
connection.execute(
    "INSERT INTO buckets VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
    (key, tokens - 1 if allowed else tokens, now),
)
connection.execute("COMMIT")
sys.exit(0 if allowed else 1)
