"""Where a worker's time goes under load (issue 29): py-spy samples one worker of `pipeline serve --workers 2`
(SQLite store, platform layer on) for 25 s while 4 clients POST the load's validation, and the samples (collapsed
stacks) are grouped by the part of the request path their innermost own frame is in.

    python3 bench/profile_worker.py        # needs py-spy (pip install py-spy) and may need ptrace rights
"""
import collections
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import drive, multipart, sample_invoice, start_server, workers_of  # noqa: E402

port = 8995
OUT = "/tmp/einvoice-worker-profile.txt"
server, token, env = start_server(port, 2)
try:
    body, ctype = multipart(sample_invoice())
    headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
    drive(port, "/v1/invoice/xrechnung/validate", body, headers, 40, 4, time.monotonic() + 60)
    worker = workers_of(server.pid)[0]
    stop = time.monotonic() + 40
    t = threading.Thread(target=lambda: drive(port, "/v1/invoice/xrechnung/validate", body, headers, 100000, 4, stop))
    t.start()
    time.sleep(2)
    subprocess.run(["py-spy", "record", "--pid", str(worker), "--duration", "25", "--rate", "250", "--format", "raw",
                    "--output", OUT, "--nonblocking"], check=True, capture_output=True)
    t.join()
finally:
    server.terminate()
    server.wait()

PARTS = [  # first match from the innermost frame outwards wins
    ("flow: validation (rules, XSD, content checks, report)", ("pipeline/flows/", "pipeline/check/")),
    ("multipart parsing (upload.py, falcon/multipart)", ("pipeline/service/upload.py", "falcon/media/multipart")),
    ("auth: key lookup and hash", ("pipeline/service/apikeys.py",)),
    ("rate limiter", ("pipeline/storage/ratelimit.py",)),
    ("ledger / store (SQLite)", ("pipeline/storage/",)),
    ("access log", ("pipeline/service/accesslog.py", "logging/")),
    ("JSON answer", ("json/",)),
    ("platform middleware (other)", ("pipeline/service/platform.py",)),
    ("falcon (routing, request, response)", ("falcon/",)),
    ("gunicorn wsgi.create / Response", ("gunicorn/http/",)),
    ("writing the answer: send() (on loopback the kernel delivers to the client in the sender)", ("_flush (",)),
    ("worker loop, framing (serve.py, httptools, selectors, sockets)", ("pipeline/cli/serve.py", "selectors.py", "socket.py", "gunicorn/workers")),
]
counts = collections.Counter()
total = 0
for line in open(OUT):
    stack, _, n = line.rstrip().rpartition(" ")
    n = int(n)
    frames = stack.split(";")
    total += n
    for frame in reversed(frames):  # innermost first
        part = next((name for name, keys in PARTS if any(k in frame for k in keys)), None)
        if part:
            counts[part] += n
            break
    else:
        counts["other: " + (frames[-1][:80] if frames else "?")] += n
print(f"samples: {total}")
for part, n in counts.most_common(25):
    print(f"{100 * n / total:6.1f} %  {part}")
