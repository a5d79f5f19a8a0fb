"""Debian's dovecot as a test's own IMAP server: its own config, a self-signed TLS certificate made here, a free
loopback port, one user with a maildir, stopped with the test. Unprivileged: as a normal user it runs as that
user; as root (CI) its login and internal processes drop to the package's `dovenull` / `dovecot` users and the
mail processes run as `dovecot` (dovecot never runs mail as root)."""
from __future__ import annotations

import grp
import imaplib
import os
import pwd
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

DOVECOT = "/usr/sbin/dovecot"
USER, PASSWORD = "ap", "s3cret-for-tests"


def _free_port() -> int:
    """A free loopback port: any, or one of DOVECOT_TEST_PORTS ("29000-29999": a machine shared by test runs)."""
    low, _, high = (os.environ.get("DOVECOT_TEST_PORTS") or "0-0").partition("-")
    for port in [0] if low == "0" else random.sample(range(int(low), int(high) + 1), int(high) + 1 - int(low)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in DOVECOT_TEST_PORTS={low}-{high}")


class Dovecot:
    def __init__(self, port: int | None = None):
        self.dir = Path(tempfile.mkdtemp(prefix="dovecot-test-"))
        self.dir.chmod(0o755)  # the mail and auth processes of another user read their files here
        self.port = port or _free_port()  # (a given port: a test that stops and starts the server on it)
        root = os.getuid() == 0
        uid, gid = (pwd.getpwnam("dovecot").pw_uid, grp.getgrnam("dovecot").gr_gid) if root else \
            (os.getuid(), os.getgid())
        me, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", str(self.dir / "key.pem"), "-out", str(self.dir / "cert.pem")],
                       check=True, capture_output=True)
        self.cafile = self.dir / "cert.pem"
        home = self.dir / "home"
        home.mkdir()
        os.chown(home, uid, gid)
        (self.dir / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}:{uid}:{gid}::{home}\n")
        users = ("default_internal_user = dovecot\ndefault_login_user = dovenull\n" if root else
                 f"default_internal_user = {me}\ndefault_internal_group = {group}\ndefault_login_user = {me}\n")
        (self.dir / "dovecot.conf").write_text(f"""{users}
base_dir = {self.dir}/run
state_dir = {self.dir}/state
log_path = {self.dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{self.dir}/cert.pem
ssl_key = <{self.dir}/key.pem
auth_mechanisms = plain
first_valid_uid = 1
mail_location = maildir:{home}/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.dir}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {self.dir}/users
}}
service imap-login {{
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    port = {self.port}
    ssl = yes
  }}
}}
""")
        self.start()

    def start(self) -> None:
        """Start the server (again, after `halt`: the same mailboxes, certificate and port) and wait for it."""
        self.log = open(self.dir / "stdout.log", "ab")
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(self.dir / "dovecot.conf")], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client().logout()
                break
            except (OSError, imaplib.IMAP4.error):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("dovecot did not come up: " + self.log_text()[-2000:])
                time.sleep(0.2)

    @property
    def url(self) -> str:
        return f"imaps://{USER}@127.0.0.1:{self.port}/INBOX"

    def client(self) -> imaplib.IMAP4_SSL:
        box = imaplib.IMAP4_SSL("127.0.0.1", self.port, ssl_context=ssl.create_default_context(cafile=self.cafile),
                                timeout=30)
        box.login(USER, PASSWORD)
        return box

    def log_text(self) -> str:
        path = self.dir / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def halt(self) -> None:
        """Stop the server, its mailboxes kept (a restart: `start`). The sessions' imap processes go too (they
        outlive the master otherwise, and a client would not notice the restart): its own process group."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # (none left)
            pass
        self.log.close()

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.dir, ignore_errors=True)

    def renumber(self) -> int:
        """Give INBOX a new UIDVALIDITY, its messages kept (as a rebuilt index, a restore or a migration does):
        with the server stopped, its UID list and indexes go; dovecot numbers the messages anew on the next start,
        under a UIDVALIDITY of the clock's second (a second later than the old one). Returns the new one."""
        self.halt()
        time.sleep(1.1)
        maildir = self.dir / "home" / "Maildir"
        for path in maildir.iterdir():  # the INBOX's own files; the folders (.Valid, ...) keep theirs
            if path.is_file() and path.name.startswith("dovecot"):
                path.unlink()
        self.start()
        box = self.client()
        try:
            box.select("INBOX", readonly=True)
            return int(box.untagged_responses["UIDVALIDITY"][-1])
        finally:
            box.logout()

