"""What .ci/deploy-check runs after the linters: the image and the manifests agree, and the
image's start command serves. Run with a Python that has PyYAML (.ci/deploy-check's venv).

    python deploy_check.py agree BINARY   the Dockerfile, the config files, the manifests and
                                          the binary agree with each other
    python deploy_check.py run BINARY     the image's ENTRYPOINT and CMD run with BINARY in a
                                          root laid out as the image (root only)

Each prints what it found wrong and exits 1, or prints what held.
"""

import fnmatch
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES = ROOT / "docs/deploy/kubernetes"
# What the image's base (distroless cc, Debian 13) carries besides the binary: libc6,
# libgcc-s1, libstdc++6, libgomp1, libssl3t64, zlib1g, libzstd1. The binary may need no other
# shared library.
BASE_LIBRARIES = {
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
    "libdl.so.2", "librt.so.1", "libresolv.so.2", "libgcc_s.so.1", "libstdc++.so.6",
    "libgomp.so.1", "libssl.so.3", "libcrypto.so.3", "libz.so.1", "libzstd.so.1",
}
# The Debian release each toolchain image tag names, and distroless's name for it.
DEBIAN = {"bookworm": "debian12", "trixie": "debian13"}
# Time for the process's own last work after the drain, at the least, in a grace period.
GRACE_MARGIN_SECS = 5

failures = []


def check(holds, message):
    """Records `message` as a failure unless `holds`."""
    if not holds:
        failures.append(message)
    return holds


def finish(successes):
    if failures:
        for failure in failures:
            print("FAILED: " + failure, file=sys.stderr)
        sys.exit(1)
    for success in successes:
        print("ok: " + success)


# The Dockerfile.

def dockerfile_stages(path):
    """The Dockerfile's stages, each a dict: `from`, `name`, and `instructions`, a list of
    (INSTRUCTION, arguments) with continuation lines joined."""
    logical, pending = [], ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages = []
    for line in logical:
        word, _, rest = line.strip().partition(" ")
        word, rest = word.upper(), rest.strip()
        if word == "FROM":
            parts = rest.split()
            stages.append({"from": parts[0], "name": parts[2] if len(parts) > 2 else None,
                           "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((word, rest))
    return stages


def exec_form(instruction, text):
    """An ENTRYPOINT or CMD in its exec (JSON) form: the shell form needs a shell, which the
    image has none of."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        sys.exit(f"Dockerfile: {instruction} {text} is not in the exec form [\"...\"]")
    return value


def flags_and_words(text):
    """`--from=build --chown=1:1 a b` as ({"from": "build", "chown": "1:1"}, ["a", "b"])."""
    flags, words = {}, []
    for word in shlex.split(text):
        if word.startswith("--") and not words:
            name, _, value = word[2:].partition("=")
            flags[name] = value
        else:
            words.append(word)
    return flags, words


def image():
    """What the final stage of the Dockerfile makes, as far as running it goes."""
    stages = dockerfile_stages(ROOT / "Dockerfile")
    final = stages[-1]
    made = {"builder": stages[0]["from"], "base": final["from"], "env": {}, "copies": [],
            "volumes": [], "expose": [], "user": None, "workdir": "/", "entrypoint": [],
            "cmd": [], "stopsignal": None}
    for word, rest in final["instructions"]:
        if word == "ENV":
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                made["env"][name] = value
        elif word == "COPY":
            flags, words = flags_and_words(rest)
            made["copies"].append((flags, words[:-1], words[-1]))
        elif word == "VOLUME":
            made["volumes"] += json.loads(rest) if rest.startswith("[") else rest.split()
        elif word == "EXPOSE":
            made["expose"] += [int(port.split("/")[0]) for port in rest.split()]
        elif word == "USER":
            made["user"] = rest
        elif word == "WORKDIR":
            made["workdir"] = os.path.join(made["workdir"], rest)
        elif word in ("ENTRYPOINT", "CMD"):
            made[word.lower()] = exec_form(word, rest)
        elif word == "STOPSIGNAL":
            made["stopsignal"] = rest
    uid, _, gid = (made["user"] or "").partition(":")
    if not (uid.isdigit() and gid.isdigit()):
        sys.exit(f"Dockerfile: USER {made['user']} is not a numeric UID:GID")
    made["uid"], made["gid"] = int(uid), int(gid)
    return made


def sent_to_build(path):
    """Whether .dockerignore lets `path` into the build context: the last pattern that matches
    it or a folder above it decides, `!` letting it in (Docker's rule)."""
    sent = True
    for pattern in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = pattern.strip()
        if not pattern or pattern.startswith("#"):
            continue
        keep = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        parts = path.split("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:end]), pattern)
               for end in range(1, len(parts) + 1)):
            sent = keep
    return sent


# The manifests.

def manifest(name):
    return yaml.safe_load((KUBERNETES / name).read_text())


def bind_port(toml_text, where):
    bind = tomllib.loads(toml_text).get("bind", "")
    match = re.fullmatch(r"(?:0\.0\.0\.0|\[::\]):(\d+)", bind)
    check(match, f"{where}: bind = {bind!r}, not every interface (0.0.0.0:PORT): a container's "
                 "loopback is its own")
    return int(match.group(1)) if match else None


def print_config(binary, config, extra_env):
    """`petstore serve --config FILE --print-config` with only `extra_env` in the environment:
    the binary takes every setting of the file (an unknown key or a wrong value fails)."""
    env = {"PATH": "/usr/bin:/bin", **extra_env}
    run = subprocess.run([binary, "serve", "--config", str(config), "--print-config"],
                         env=env, capture_output=True, text=True)
    check(run.returncode == 0, f"{config}: petstore serve --print-config refused it: "
                               f"{run.stderr.strip()}")
    return run.stdout


def agree(binary):
    made = image()
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    rust_version = cargo["workspace"]["package"]["rust-version"]
    builder = re.fullmatch(r"rust:(\d+\.\d+)(?:\.\d+)?-(\w+)", made["builder"])
    check(builder and builder.group(1) == rust_version,
          f"Dockerfile builds with {made['builder']}; Cargo.toml's rust-version is {rust_version}")
    check(builder and DEBIAN.get(builder.group(2), "?") in made["base"],
          f"Dockerfile builds on {made['builder']} and runs on {made['base']}: not the same "
          "Debian release, so not the same C library")
    check(made["uid"] != 0 and made["gid"] != 0, "Dockerfile: the image runs as root")
    check(made["stopsignal"] == "SIGTERM", "Dockerfile: STOPSIGNAL is not SIGTERM")
    check(made["entrypoint"] + made["cmd"][:1] == ["/usr/local/bin/petstore", "serve"],
          f"Dockerfile: ENTRYPOINT and CMD run {made['entrypoint'] + made['cmd']}, not "
          "/usr/local/bin/petstore serve")
    config_path = made["env"].get("PETSTORE_CONFIG", "")
    check(config_path.startswith("/"), "Dockerfile: no ENV PETSTORE_CONFIG=/path")
    image_config = [src for flags, src, dest in made["copies"]
                    if dest == config_path and "from" not in flags]
    check(len(image_config) == 1 and len(image_config[0]) == 1,
          f"Dockerfile: no COPY of a file of the repository to {config_path}")
    if failures:
        finish([])
    # What the build stage compiles from, and what the final stage copies, must reach the
    # build; target/ and .git/ must not.
    needed = ["Cargo.toml", "Cargo.lock", ".cargo/config.toml", "migrations/sqlite",
              "migrations/postgres"] + [path for path in subprocess.run(
                  ["git", "ls-files", "crates"], cwd=ROOT, capture_output=True, text=True,
                  check=True).stdout.split()] + image_config[0]
    missing = [path for path in needed if not sent_to_build(path)]
    check(not missing, f".dockerignore leaves out what the build reads: {missing[:5]}")
    check(not sent_to_build("target/debug/petstore") and not sent_to_build(".git/HEAD"),
          ".dockerignore sends target/ or .git/ to the build")
    container_toml = ROOT / image_config[0][0]
    port = bind_port(container_toml.read_text(), image_config[0][0])
    check(made["expose"] == [port], f"Dockerfile: EXPOSE {made['expose']}, the config binds {port}")
    database = tomllib.loads(container_toml.read_text()).get("database", "")
    check(any(database.startswith(volume.rstrip("/") + "/") for volume in made["volumes"]),
          f"{image_config[0][0]}: database {database!r} is in no VOLUME {made['volumes']}")
    check(os.path.dirname(database) == made["workdir"],
          f"Dockerfile: WORKDIR {made['workdir']} is not the database's folder: other commands "
          "(`docker run IMAGE keys list`) would not find petstore.db by default")
    # The binary reads this file in `run`: its database folder exists in the image only.

    deployment = manifest("deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    check(deployment["spec"]["replicas"] == 3, "deployment.yaml: replicas is not 3")
    containers = {c["name"]: c for c in pod["containers"]}
    server = containers.get("petstore") or sys.exit("deployment.yaml: no container petstore")
    security = pod.get("securityContext", {})
    for field, want in (("runAsUser", made["uid"]), ("runAsGroup", made["gid"]),
                        ("fsGroup", made["gid"]), ("runAsNonRoot", True)):
        check(security.get(field) == want,
              f"deployment.yaml: securityContext.{field} is {security.get(field)}, the image's "
              f"is {want}")
    own = server.get("securityContext", {})
    check(own.get("readOnlyRootFilesystem") is True and own.get("allowPrivilegeEscalation") is False
          and own.get("capabilities", {}).get("drop") == ["ALL"],
          "deployment.yaml: the container's root file system is writable, it may gain "
          "privileges, or it keeps capabilities")
    ports = {p["name"]: p["containerPort"] for p in server["ports"]}
    check(ports.get("http") == port, f"deployment.yaml: port http is {ports.get('http')}, the "
                                      f"image serves on {port}")
    check("command" not in server and "args" not in server,
          "deployment.yaml: the container overrides the image's ENTRYPOINT or CMD")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"),
                        ("startupProbe", "/healthz")):
        get = server.get(probe, {}).get("httpGet", {})
        check(get.get("path") == path and get.get("port") == "http",
              f"deployment.yaml: {probe} is not GET {path} on port http")
    mounts = {m["mountPath"]: m["name"] for m in server.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    config_dir, config_file = os.path.split(config_path)
    config_map_name = volumes.get(mounts.get(config_dir), {}).get("configMap", {}).get("name")
    config_map = manifest("configmap.yaml")
    check(config_map_name == config_map["metadata"]["name"] and config_file in config_map["data"],
          f"deployment.yaml: {config_dir} is not configmap.yaml's ConfigMap with {config_file}, "
          "where the image's PETSTORE_CONFIG points")
    check(made["workdir"] in mounts, f"deployment.yaml: nothing writable at {made['workdir']}, "
                                     "the image's working folder and volume")
    cluster_toml = config_map["data"][config_file]
    check(bind_port(cluster_toml, "configmap.yaml") == port,
          f"configmap.yaml: {config_file} binds another port than the image's {port}")
    env = {e["name"]: e for e in server.get("env", [])}
    for name in ("PETSTORE_DATABASE", "PETSTORE_BOOTSTRAP_ADMIN_KEY", "PETSTORE_DRAIN_DELAY_SECS"):
        check(name in env, f"deployment.yaml: no {name}")
    check("database" not in tomllib.loads(cluster_toml),
          "configmap.yaml: names a database; the Secret's PETSTORE_DATABASE gives it")
    with tempfile.TemporaryDirectory() as scratch:
        cluster_config = Path(scratch) / config_file
        cluster_config.write_text(cluster_toml)
        settings = tomllib.loads(print_config(binary, cluster_config, {
            "PETSTORE_DATABASE": "postgres://petstore@db.invalid:5432/shop",
            "PETSTORE_DRAIN_DELAY_SECS": env["PETSTORE_DRAIN_DELAY_SECS"]["value"],
        }) or "x = 0")
    drain = int(env["PETSTORE_DRAIN_DELAY_SECS"]["value"])
    shutdown = settings.get("shutdown-timeout-secs")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(settings.get("drain-delay-secs") == drain,
          f"the binary reads drain-delay-secs {settings.get('drain-delay-secs')} from "
          f"PETSTORE_DRAIN_DELAY_SECS={drain}")
    check(isinstance(shutdown, int) and grace >= drain + shutdown + GRACE_MARGIN_SECS,
          f"deployment.yaml: terminationGracePeriodSeconds {grace} does not cover the drain "
          f"delay ({drain} s), shutdown-timeout-secs ({shutdown} s) and {GRACE_MARGIN_SECS} s more")

    secret = manifest("secret.yaml")
    secret_keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    service = manifest("service.yaml")
    budget = manifest("pdb.yaml")
    for name, selector in (("service.yaml", service["spec"]["selector"]),
                           ("pdb.yaml", budget["spec"]["selector"]["matchLabels"])):
        check(selector.items() <= labels.items(),
              f"{name}: selects {selector}, not the Deployment's pods ({labels})")
    check(service["spec"]["ports"][0]["targetPort"] in ports,
          "service.yaml: targetPort is no port of the container")
    jobs = {"migrate-job.yaml": ["migrate"], "migrate-finish-job.yaml": ["migrate", "--finish"]}
    workloads = [("deployment.yaml", server, pod)]
    for name, args in jobs.items():
        job_pod = manifest(name)["spec"]["template"]["spec"]
        job = job_pod["containers"][0]
        workloads.append((name, job, job_pod))
        check(job.get("args") == args, f"{name}: runs {job.get('args')}, not petstore {args}")
        check(job["image"] == server["image"], f"{name}: image {job['image']}, the Deployment's "
                                               f"is {server['image']}")
        for field, want in (("runAsUser", made["uid"]), ("runAsGroup", made["gid"]),
                            ("runAsNonRoot", True)):
            check(job_pod.get("securityContext", {}).get(field) == want,
                  f"{name}: securityContext.{field} is not the image's {want}")
        check(job.get("securityContext", {}).get("readOnlyRootFilesystem") is True,
              f"{name}: the container's root file system is writable")
        check(job_pod.get("restartPolicy") == "Never", f"{name}: restartPolicy is not Never")
    for name, container, spec in workloads:
        for variable in container.get("env", []):
            reference = variable.get("valueFrom", {}).get("secretKeyRef")
            if reference:
                check(reference["name"] == secret["metadata"]["name"]
                      and reference["key"] in secret_keys,
                      f"{name}: {variable['name']} names secret {reference['name']} key "
                      f"{reference['key']}, which secret.yaml does not have")
        check(spec.get("enableServiceLinks") is False,
              f"{name}: enableServiceLinks is not false: the Service named petstore would put "
              "PETSTORE_SERVICE_HOST, PETSTORE_PORT... in the environment")
    database_url = secret["stringData"]["database-url"]
    for file in re.findall(r"sslrootcert=([^&]+)", database_url):
        check(os.path.dirname(file) == config_dir and os.path.basename(file) in config_map["data"],
              f"secret.yaml: the URL's sslrootcert={file} is no key of the ConfigMap at "
              f"{config_dir}")

    kustomization = manifest("kustomization.yaml")
    expected = sorted(p.name for p in KUBERNETES.glob("*.yaml")
                      if p.name not in ("kustomization.yaml", "secret.yaml", *jobs))
    check(sorted(kustomization["resources"]) == expected,
          f"kustomization.yaml: resources {sorted(kustomization['resources'])}, expected "
          f"{expected} (everything but the Secret and the Jobs)")
    help_text = subprocess.run([binary, "migrate", "--help"], capture_output=True, text=True).stdout
    check("--finish" in help_text, "the binary's migrate has no --finish")

    finish([
        f"the image builds with {made['builder']} (rust-version {rust_version}) and runs on "
        f"{made['base']} as {made['user']}, serving {made['entrypoint'] + made['cmd']} on {port}",
        f"configmap.yaml's {config_file} is accepted by the binary",
        f"the Deployment runs the image's user, port, config path and probes; grace "
        f"{grace} s >= drain {drain} s + shutdown {shutdown} s + {GRACE_MARGIN_SECS} s",
        "Service, PodDisruptionBudget, Jobs, Secret keys and kustomization.yaml agree; "
        ".dockerignore sends the build what it reads and not target/ or .git/",
    ])


# The image's start command.

# distroless's /etc/passwd and /etc/group.
PASSWD = """root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
"""
GROUP = "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n"
# The environment the image's configuration gives besides its ENV lines (distroless's PATH and
# SSL_CERT_FILE), and what `docker run` adds (HOME from the user's passwd line, HOSTNAME).
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    "HOME": "/home/nonroot",
    "HOSTNAME": "petstore-deploy-check",
}

# Run inside the new mount and network namespaces, as root, before the binary: the loopback
# interface up, /dev, /proc and the binary mounted into the root, then chroot, the working
# folder, the image's user, and exec. The process keeps its pid throughout.
LAUNCH = r"""
import fcntl, json, os, socket, struct, subprocess, sys
spec = json.loads(sys.argv[1])
root = spec["root"]
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    request = struct.pack("16sH22x", b"lo", 0)
    flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, request))[1]  # SIOCGIFFLAGS
    fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
def mount(*args):
    subprocess.run(["mount", *args], check=True)
mount("--rbind", "/dev", root + "/dev")
if subprocess.run(["mount", "-t", "proc", "proc", root + "/proc"]).returncode != 0:
    mount("--rbind", "/proc", root + "/proc")
mount("--bind", spec["binary"], root + spec["binary_at"])
mount("-o", "remount,bind,ro", root + spec["binary_at"])
os.chroot(root)
os.chdir(spec["workdir"])
os.setgroups([])
os.setgid(spec["gid"])
os.setuid(spec["uid"])
os.umask(0o022)
os.execve(spec["argv"][0], spec["argv"], spec["env"])
"""

# Run in the server's network namespace: waits for /readyz, then the calls a first user makes.
CLIENT = r"""
import json, sys, time, urllib.error, urllib.request
base, key = sys.argv[1], sys.argv[2]
def call(method, path, key=None, body=None):
    request = urllib.request.Request(base + path, method=method,
        data=None if body is None else json.dumps(body).encode())
    if key:
        request.add_header("Authorization", "Bearer " + key)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
deadline, ready = time.monotonic() + 60, None
while time.monotonic() < deadline:
    try:
        ready = call("GET", "/readyz")
        if ready[0] == 200:
            break
    except OSError:
        pass
    time.sleep(0.2)
results = {"readyz": ready}
results["anonymous"] = call("GET", "/v1/categories")
results["create"] = call("POST", "/v1/categories", key, {"name": "Deploy check"})
results["list"] = call("GET", "/v1/categories", key)
print(json.dumps(results))
"""


def json_object(line):
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def shared_libraries(binary):
    """The binary's shared libraries, as the loader finds them here: {name: path}."""
    found = {}
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        match = re.match(r"\s*(\S+)(?: => (\S+))? \(", line)
        if match:
            name, path = match.group(1), match.group(2) or match.group(1)
            found[os.path.basename(name)] = path if path.startswith("/") else None
    return found


def lay_out(root, made, binary):
    """A root file system as the image has it: distroless's files that matter, the binary's
    libraries (which the base carries), and each COPY of the final stage."""
    for folder in ("etc/ssl/certs", "tmp", "dev", "proc", "home/nonroot", "var/lib"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    os.chown(root / "home/nonroot", 65532, 65532)
    (root / "etc/passwd").write_text(PASSWD)
    (root / "etc/group").write_text(GROUP)
    (root / "etc/hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
    (root / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files dns\n")
    certificates = Path("/etc/ssl/certs/ca-certificates.crt")
    if certificates.exists():
        shutil.copy(certificates, root / "etc/ssl/certs/ca-certificates.crt")
    libraries = shared_libraries(binary)
    unknown = sorted(set(libraries) - BASE_LIBRARIES)
    check(not unknown, f"the binary needs {unknown}, which the image's base does not carry")
    for path in filter(None, libraries.values()):
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / path.lstrip("/"))  # follows the link to the library itself
    binary_at = None
    for flags, sources, dest in made["copies"]:
        target = root / dest.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if flags.get("from") and sources == ["/out/petstore"]:
            target.touch()  # the binary is mounted here (LAUNCH)
            binary_at = dest
        elif flags.get("from") and sources == ["/out/data"]:
            target.mkdir()  # made empty by the build stage
        elif not flags.get("from") and len(sources) == 1:
            shutil.copy(ROOT / sources[0], target)
        else:
            sys.exit(f"deploy_check.py does not know what COPY {flags} {sources} {dest} "
                     "copies: teach lay_out")
        owner = flags.get("chown")
        if owner:
            uid, _, gid = owner.partition(":")
            os.chown(target, int(uid), int(gid or uid))
        if flags.get("chmod"):
            os.chmod(target, int(flags["chmod"], 8))
    check(binary_at == made["entrypoint"][0],
          f"the image's ENTRYPOINT {made['entrypoint'][0]} is not the binary it copies")
    return binary_at


def run(binary):
    made = image()
    config = tomllib.loads((ROOT / [s for f, s, d in made["copies"]
                                     if d == made["env"]["PETSTORE_CONFIG"]][0][0]).read_text())
    port = made["expose"][0]
    scratch = Path(tempfile.mkdtemp(prefix="petstore-image-"))
    root = scratch / "root"
    root.mkdir()
    os.chmod(scratch, 0o755)
    server = None
    try:
        binary_at = lay_out(root, made, str(Path(binary).resolve()))
        if failures:
            finish([])
        key = secrets.token_urlsafe(32)
        # `docker run -e PETSTORE_BOOTSTRAP_ADMIN_KEY=... IMAGE`.
        env = {**BASE_ENV, **made["env"], "PETSTORE_BOOTSTRAP_ADMIN_KEY": key}
        spec = {"root": str(root), "binary": str(Path(binary).resolve()), "binary_at": binary_at,
                "workdir": made["workdir"], "uid": made["uid"], "gid": made["gid"],
                "argv": made["entrypoint"] + made["cmd"], "env": env}
        log = open(scratch / "server.log", "w")
        server = subprocess.Popen(
            ["unshare", "--mount", "--net", "--propagation", "private", "--",
             sys.executable, "-c", LAUNCH, json.dumps(spec)],
            stdout=log, stderr=subprocess.STDOUT)
        # nsenter must join the server's own network, not the one unshare starts in.
        deadline = time.monotonic() + 10
        while (os.readlink(f"/proc/{server.pid}/ns/net") == os.readlink("/proc/self/ns/net")
               and server.poll() is None and time.monotonic() < deadline):
            time.sleep(0.01)
        client = subprocess.run(
            ["nsenter", "--target", str(server.pid), "--net", "--", sys.executable, "-c",
             CLIENT, f"http://127.0.0.1:{port}", key],
            capture_output=True, text=True, timeout=120)
        if client.returncode != 0 or server.poll() is not None:
            sys.exit(f"the image's command did not serve (exit {server.poll()}): "
                     f"{client.stderr.strip()}\n{(scratch / 'server.log').read_text()[-3000:]}")
        answers = json.loads(client.stdout)
        check(answers["readyz"] and answers["readyz"][0] == 200,
              f"/readyz answered {answers['readyz']} within 60 s, not 200")
        check(answers["anonymous"][0] == 401,
              f"GET /v1/categories without a key answered {answers['anonymous'][0]}, not 401")
        check(answers["create"][0] == 201,
              f"POST /v1/categories with the bootstrap admin key answered {answers['create']}")
        check(answers["list"][0] == 200 and "Deploy check" in answers["list"][1],
              f"GET /v1/categories with the key answered {answers['list']}")
        stop = getattr(signal, made["stopsignal"])
        grace = config.get("shutdown-timeout-secs", 30) + config.get("drain-delay-secs", 0) + 10
        started = time.monotonic()
        server.send_signal(stop)
        try:
            code = server.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - started
        server_log = (scratch / "server.log").read_text()
        check(code == 0, f"after {made['stopsignal']} the process exited {code} within {grace} s, "
                         f"not 0:\n{server_log[-3000:]}")
        data = root / made["workdir"].lstrip("/")
        database = root / config["database"].lstrip("/")
        check(database.is_file() and database.stat().st_uid == made["uid"],
              f"no database at {config['database']} owned by {made['uid']}")
        check(not (data / "petstore.db.admin-key").exists(),
              "an admin key file was written although PETSTORE_BOOTSTRAP_ADMIN_KEY was given")
        check(server_log.strip() and all(json_object(line) for line in server_log.splitlines()
                                         if line.strip()),
              f"the log is not one JSON object a line (log-format = \"json\"):\n{server_log[-3000:]}")
        finish([
            f"{' '.join(made['entrypoint'] + made['cmd'])} ran as {made['user']} in "
            f"{made['workdir']} with {made['env']['PETSTORE_CONFIG']}, in a network of its own",
            f"/readyz 200; no key 401; the bootstrap admin key created and read a category; "
            f"{config['database']} written by the image's user",
            f"{made['stopsignal']}: exited 0 after {took:.2f} s",
        ])
    finally:
        if server and server.poll() is None:
            server.kill()
            server.wait()
        # The mounts were the namespace's and went with it; rmtree must not meet one.
        if not any(os.path.ismount(root / name) for name in ("dev", "proc")):
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("agree", "run"):
        sys.exit(__doc__)
    {"agree": agree, "run": run}[sys.argv[1]](sys.argv[2])
