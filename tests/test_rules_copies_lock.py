"""The Factur-X profile rules' optimised copies are written under the rules home's lock that `pipeline rules
install/add/remove` take (`packs.changing`): an install waits for a change under way, and installs at once leave
one consistent set of copies."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pipeline.check import packs, profile_copies

REPO = Path(__file__).resolve().parent.parent
_INSTALL = "import sys; from pathlib import Path; from pipeline.check import profile_copies; " \
           "profile_copies.install(Path(sys.argv[1]))"


def _install(home: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _INSTALL, str(home)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _consistent(home: Path) -> None:
    """One set of copies, each the file its manifest record hashes, and nothing staged or renamed away left."""
    target = profile_copies.copies_dir(home)
    manifest = json.loads((target / profile_copies.MANIFEST_NAME).read_text("utf-8"))
    files = {p.name for p in target.iterdir()} - {profile_copies.MANIFEST_NAME}
    assert files == {c["path"] for c in manifest["copies"].values()} and files
    for record in manifest["copies"].values():
        assert hashlib.sha256((target / record["path"]).read_bytes()).hexdigest() == record["sha256"]
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]   # no .install-*, no .1.09.old


def test_a_copies_install_waits_for_a_change_of_the_home_under_way(tmp_path):
    with packs.changing(tmp_path):
        run = _install(tmp_path)
        time.sleep(4)   # an unlocked install writes its copies in ~2 s
        assert run.poll() is None and not profile_copies.copies_dir(tmp_path).exists()
    assert run.wait(timeout=120) == 0, run.stderr.read()
    _consistent(tmp_path)
    stale = profile_copies.copies_dir(tmp_path).parent / ".install-killed"   # what a killed install left
    stale.mkdir()
    profile_copies.install(tmp_path, optimise=False)
    assert not profile_copies.copies_dir(tmp_path).exists() and not stale.exists()


def test_concurrent_installs_leave_one_consistent_set_of_copies(tmp_path):
    runs = [_install(tmp_path) for _ in range(3)]
    outcomes = [(run.wait(timeout=300), run.stderr.read()) for run in runs]
    assert all(code == 0 for code, _ in outcomes), outcomes
    _consistent(tmp_path)
    original = sorted({p.schematron_path for p in profile_copies.PROFILES.values()})[0]
    profile_copies._runnable.clear()
    assert profile_copies.runnable(original, tmp_path) != original   # the copy runs
    profile_copies._runnable.clear()
    assert os.listdir(tmp_path) == ["facturx"]   # nothing of the lock left in the home
