"""Set-up shared by the benchmarks that use the real servers of tests/fixtures/servers.sh
(bench/run starts them): an isolated HOME, a project whose targets use the test image, a
remotedocker target attached with -k, and the OpenSSH and rsync command lines of the floors,
logging in with the same key to the same sshd."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

# The emulated link of issue 15: 25 ms round trip, 100 Mbit/s each way.
WAN = {"delay_ms": 12.5, "rate_mbit": 100.0}


def need(var):
    value = os.environ.get(var)
    if not value:
        raise SystemExit(f"{var} is not set: start the servers (bench/run does)")
    return value


class Targets:
    """A scratch HOME and project; `env` is what every command of the benchmark runs with."""

    def __init__(self, mlw, name, link=None):
        """`link` ({"delay_ms", "rate_mbit"}): mlw and the floors reach the sshd through
        bench/linkproxy.py, both over the same emulated link."""
        self.mlw_path = mlw
        self.port = need("MLW_TEST_SSH_PORT")
        self.proxy = None
        self.user = need("MLW_TEST_SSH_USER")
        self.password = need("MLW_TEST_SSH_PASSWORD")
        self.image = need("MLW_TEST_IMAGE")
        need("DOCKER_HOST")
        self.home = tempfile.mkdtemp(prefix=f"mlw-{name}-")
        if link:
            self.port = self.start_link(link)
        self.env = dict(os.environ, HOME=self.home, XDG_CONFIG_HOME=f"{self.home}/.config",
                        PYTHONDONTWRITEBYTECODE="1")
        self.env.pop("MLW_OUTPUT", None)
        self.mlw("project", "create", "-n", "proj", cwd=self.home)
        self.project = os.path.join(self.home, "proj")
        self.write("noop.py", "pass\n")
        self.write("aml_config/conda_dependencies.yml", "dependencies:\n  - python=3.11\n")
        self.key = None

    def write(self, relative, text):
        path = os.path.join(self.project, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)

    def mlw(self, *args, cwd=None, stdin=None):
        """Runs mlw quietly; returns (stdout, stderr); raises with its stderr when it fails."""
        done = subprocess.run([self.mlw_path, "-q", *args], cwd=cwd or self.project, env=self.env,
                              input=stdin, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"mlw {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done.stdout, done.stderr

    def use_docker_image(self):
        """Points the project's `docker` target at the test image."""
        path = os.path.join(self.project, "aml_config", "docker.compute")
        lines = open(path, encoding="utf-8").read().splitlines()
        lines = [f'baseDockerImage: "{self.image}"' if line.startswith("baseDockerImage:")
                 else line for line in lines]
        with open(path, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")

    def attach_remote(self, name="rd", kind="remotedocker"):
        """Attaches the loopback sshd with -k (key login, no password kept)."""
        extra = ["--base-image", self.image] if kind == "remotedocker" else []
        self.mlw("computetarget", "attach", kind, "-n", name, "-a", f"127.0.0.1:{self.port}",
                 "-u", self.user, "--password-stdin", "-k", "--accept-host-key", *extra,
                 stdin=self.password + "\n")
        for line in open(os.path.join(self.project, "aml_config", f"{name}.compute"),
                         encoding="utf-8"):
            if line.startswith("privateKeyFile:"):
                self.key = line.split(":", 1)[1].strip().strip('"').replace("~", self.home, 1)

    def ssh_command(self):
        """The OpenSSH client line of the floors: same key, same known_hosts, no config."""
        return ["ssh", "-F", "/dev/null", "-p", self.port, "-i", self.key, "-o", "BatchMode=yes",
                "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.home}/.ssh/known_hosts",
                "-o", "StrictHostKeyChecking=yes"]

    def ssh(self, *remote):
        return [*self.ssh_command(), f"{self.user}@127.0.0.1", *remote]

    def rsync(self, destination):
        return ["rsync", "-a", "-e", " ".join(self.ssh_command()), self.project + "/",
                f"{self.user}@127.0.0.1:{destination}/"]

    def clear_target_store(self, *also):
        """Removes mlw's content store and run folders on the target (the image stays)."""
        subprocess.run(self.ssh("rm -rf .mlw/objects .mlw/runs .mlw/incoming " + " ".join(also)),
                       env=self.env, check=True, capture_output=True)

    def start_link(self, link):
        """Starts the link emulator in front of the sshd; returns the port to use instead."""
        ready = os.path.join(self.home, "link.port")
        proxy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linkproxy.py")
        self.proxy = subprocess.Popen(
            [sys.executable, proxy, "--listen", "0", "--to", f"127.0.0.1:{self.port}",
             "--delay-ms", str(link["delay_ms"]), "--rate-mbit", str(link["rate_mbit"]),
             "--ready", ready], stdout=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(ready):
                return open(ready, encoding="utf-8").read().strip()
            time.sleep(0.05)
        raise SystemExit("the link emulator did not start")

    def remove(self):
        if self.proxy:
            self.proxy.terminate()
            self.proxy.wait()
        shutil.rmtree(self.home, ignore_errors=True)


def fill(folder, files, size, seed):
    """Writes `files` files of `size` random bytes under `folder`, 50 to a sub-folder."""
    rng = __import__("random").Random(seed)
    for i in range(files):
        sub = os.path.join(folder, f"d{i // 50}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i}.bin"), "wb") as out:
            out.write(rng.randbytes(size))
