"""`pipeline jobs submit` of an upload the service refuses before its end. The service answers 413 as soon as the
head announces more than EINVOICE_MAX_JOB_BYTES (or 408 past the request deadline, 503 with a full jobs directory)
and closes while the body is still being sent; urllib then said only "pipeline jobs: <url>: [Errno 32] Broken pipe".
Now the service's answer is read even so and said, as any other refusal is."""
from __future__ import annotations

import os
import zipfile

from tests.test_platform_helpers import cli, serve_with_key


def test_a_refused_upload_says_the_services_answer_not_broken_pipe(tmp_path):
    server, env, token = serve_with_key(tmp_path / "data", "jobs-refused", 100, workers=1, warm=False,
                                        env={"EINVOICE_MAX_JOB_BYTES": "1000000"})
    try:
        env = {**env, "EINVOICE_URL": server.url, "EINVOICE_API_KEY": token}
        month = tmp_path / "month.zip"
        with zipfile.ZipFile(month, "w", zipfile.ZIP_STORED) as z:  # 24 MB: more than the socket buffers take
            for n in range(12):
                z.writestr(f"scan{n}.pdf", os.urandom(2 << 20))
        run = cli(env, "jobs", "submit", str(month))
        assert run.returncode == 2 and run.stdout == "", run.stdout
        assert run.stderr.startswith("pipeline jobs: 413 ") and "EINVOICE_MAX_JOB_BYTES" in run.stderr, run.stderr
        assert "Broken pipe" not in run.stderr and "Traceback" not in run.stderr

        small = tmp_path / "small.zip"  # under the bound: taken as before
        with zipfile.ZipFile(small, "w") as z:
            z.writestr("a.xml", "<Invoice/>")
        run = cli(env, "jobs", "submit", str(small))
        assert run.returncode == 0 and run.stdout.startswith("job_"), run.stderr
        bad = cli({**env, "EINVOICE_API_KEY": token[:-3] + "xyz"}, "jobs", "submit", str(small))
        assert bad.returncode == 2 and bad.stderr.startswith("pipeline jobs: 401 "), bad.stderr
    finally:
        server.stop()
