"""Checks the deployment files (deploy/compose.yaml, deploy/.env.example, deploy/Dockerfile) against what the
project really reads, without Docker: every variable an application service gets is read by config/ (or
documented in docs/deployment.md), every ${VARIABLE} the compose file takes is in .env.example and back, the
topology has every service it needs with the commands, queues, ports, healthchecks and start order it needs.

`python deploy/check.py` prints what is wrong and exits 1, or prints a one-line summary. The checks are plain
functions over parsed files, so tests/config/test_deploy.py runs them on broken copies too."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"

APP_IMAGE = "crowdlabel:latest"
REQUIRED_SERVICES = ("db", "redis", "s3", "s3-bucket", "migrate", "web", "worker", "beat")
ONE_SHOT = ("s3-bucket", "migrate")
# Long-running services without a healthcheck, and why.
NO_PROBE = {"beat": "beat answers nothing a probe could ask; its restart policy covers an exit"}
SERVED_BY = {"web": ("migrate", "s3-bucket", "db", "redis"), "worker": ("migrate", "db", "redis")}
SERVED_BY["beat"] = SERVED_BY["worker"]
# A name in a secret's place in .env.example holds this placeholder, never a value.
PLACEHOLDER = "replace-me"
SECRET_WORDS = ("SECRET", "PASSWORD")
# Variables of the interpreter and pip themselves, which the Dockerfile may set.
RUNTIME_VARIABLES = re.compile(r"^(PYTHON[A-Z_]*|PIP_[A-Z_]+)$")
ENV_READERS = {"env_int", "env_bool", "env_float", "env_list", "env_rate"}
INTERPOLATION = re.compile(r"(?<!\$)\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}")
VARIABLE_NAME = re.compile(r"^[A-Z][A-Z0-9_]+$")


@dataclass
class Reads:
    """The environment variables a body of code reads: literal names, and patterns for names built in f-strings."""

    names: set[str] = field(default_factory=set)
    patterns: list[re.Pattern] = field(default_factory=list)

    def __contains__(self, name: str) -> bool:
        return name in self.names or any(p.fullmatch(name) for p in self.patterns)


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _name_of(node: ast.AST) -> str | re.Pattern | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [re.escape(p.value) if isinstance(p, ast.Constant) else "[A-Z0-9_]+" for p in node.values]
        return re.compile("".join(parts))
    return None


def settings_reads(config_dir: Path) -> Reads:
    """Every variable config/ reads: os.environ.get(...), os.environ[...] and config.envvars' readers."""
    reads = Reads()
    for path in sorted(config_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            key = None
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                reader = (isinstance(func, ast.Name) and func.id in ENV_READERS) or (
                    isinstance(func, ast.Attribute)
                    and (func.attr in ENV_READERS or (func.attr == "get" and _is_environ(func.value)))
                )
                key = _name_of(node.args[0]) if reader else None
            elif isinstance(node, ast.Subscript) and _is_environ(node.value):
                key = _name_of(node.slice)
            if isinstance(key, str):
                reads.names.add(key)
            elif key is not None:
                reads.patterns.append(key)
    return reads


def documented_names(markdown: str) -> set[str]:
    """Variable names the documentation shows in backticks."""
    return {token for token in re.findall(r"`([^`\s]+)`", markdown) if VARIABLE_NAME.match(token)}


def env_file(text: str) -> dict[str, str]:
    entries = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            entries[name.strip()] = value.strip()
    return entries


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in _strings(key) + _strings(value)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return []


def interpolations(compose: dict) -> list[tuple[str, str, str]]:
    """(name, operator, argument) of every ${...} in the compose file ($$ is a literal dollar)."""
    return [
        (m["name"], m["op"] or "", m["arg"])
        for text in _strings(compose)
        for m in INTERPOLATION.finditer(text)
    ]


def interpolate(text: str, values: dict[str, str]) -> str:
    """`text` with its ${...} replaced from `values` as compose does (${X:-default}, ${X:?error}); $$ is $."""

    def one(m: re.Match) -> str:
        value = values.get(m["name"], "")
        if m["op"] == ":?" and not value:
            raise KeyError(f"{m['name']} is required: {m['arg']}")
        if m["op"] == ":-" and not value:
            return m["arg"]
        return value

    return INTERPOLATION.sub(one, text).replace("$$", "$")


def seconds(duration) -> float:
    """A compose duration ("1m30s", "10s", "500ms") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(duration))
    if not parts or "".join(n + u for n, u in parts) != str(duration):
        raise ValueError(f"not a duration: {duration!r}")
    return sum(float(n) * units[u] for n, u in parts)


def _option(command: list[str], *flags: str) -> str | None:
    for index, word in enumerate(command):
        if word in flags and index + 1 < len(command):
            return command[index + 1]
        for flag in flags:
            if flag.startswith("--") and word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return None


def _depends(service: dict) -> dict[str, str]:
    depends = service.get("depends_on") or {}
    if isinstance(depends, list):
        return dict.fromkeys(depends, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in depends.items()}


def is_app(service: dict) -> bool:
    return service.get("image") == APP_IMAGE


def problems(
    compose: dict,
    env_example: dict[str, str],
    dockerfile: str,
    reads: Reads,
    documented: set[str],
    queues: set[str],
    moto_version: str,
    dockerignore: str = "",
) -> list[str]:
    """What is wrong with the deployment files, one sentence each (an empty list when nothing is)."""
    found: list[str] = []
    services = compose.get("services") or {}
    if "version" in compose:
        found.append("compose: the top-level `version` is obsolete in the Compose Specification; remove it")
    for name in REQUIRED_SERVICES:
        if name not in services:
            found.append(f"compose: no `{name}` service: the topology needs it")
    for name, service in services.items():
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            found.append(f"{name}: environment as a mapping, so each variable can be checked")
            continue
        for variable in environment:
            if is_app(service) and variable not in reads and variable not in documented:
                found.append(
                    f"{name}: {variable} is neither read by config/ nor documented in docs/deployment.md"
                )
            elif not is_app(service) and variable not in documented:
                found.append(f"{name}: {variable} (for the {service.get('image')} image) is not documented")
        if is_app(service) and environment.get("DJANGO_ENV") != "production":
            found.append(f"{name}: DJANGO_ENV must be production")
        found += _probe_problems(name, service, services)
        found += _port_problems(name, service)
    found += _interpolation_problems(compose, env_example)
    found += _command_problems(services, queues, moto_version)
    found += _dockerfile_problems(dockerfile, reads, dockerignore)
    return found


def _probe_problems(name: str, service: dict, services: dict) -> list[str]:
    found = []
    one_shot = name in ONE_SHOT
    if one_shot and service.get("restart") != "no":
        found.append(f'{name}: a one-shot service must not restart (restart: "no")')
    if not one_shot and service.get("restart") not in {"always", "unless-stopped"}:
        found.append(f"{name}: a long-running service needs restart: always (a worker can exit by itself)")
    probe = service.get("healthcheck")
    if probe is None and not one_shot and name not in NO_PROBE:
        found.append(f"{name}: no healthcheck")
    if probe is not None:
        test = probe.get("test")
        if not (isinstance(test, list) and test and test[0] in {"CMD", "CMD-SHELL"} and len(test) > 1):
            found.append(f"{name}: healthcheck test must be [CMD, ...] or [CMD-SHELL, ...]")
        try:
            interval, timeout = seconds(probe["interval"]), seconds(probe["timeout"])
            if not 0 < timeout < interval:
                found.append(f"{name}: healthcheck timeout must be shorter than its interval")
        except (KeyError, ValueError) as exc:
            found.append(f"{name}: healthcheck needs an interval and a timeout ({exc})")
        if not isinstance(probe.get("retries"), int) or probe["retries"] < 1:
            found.append(f"{name}: healthcheck needs retries (at least 1)")
    for target, condition in _depends(service).items():
        if target not in services:
            found.append(f"{name}: depends on unknown service {target}")
        elif condition == "service_healthy" and "healthcheck" not in services[target]:
            found.append(f"{name}: waits for {target} to be healthy, but {target} has no healthcheck")
        elif condition == "service_completed_successfully" and target not in ONE_SHOT:
            found.append(f"{name}: waits for {target} to complete, but {target} is not a one-shot service")
    for target in SERVED_BY.get(name, ()):
        wanted = "service_completed_successfully" if target in ONE_SHOT else "service_healthy"
        if _depends(service).get(target) != wanted:
            found.append(f"{name}: must start after {target} ({wanted})")
    return found


def _port_problems(name: str, service: dict) -> list[str]:
    found = []
    for port in service.get("ports") or []:
        parts = str(port).split(":")
        if len(parts) != 3 or parts[0] != "127.0.0.1":
            found.append(f"{name}: port {port} must be published on 127.0.0.1 only (the TLS proxy faces out)")
    return found


def _interpolation_problems(compose: dict, env_example: dict[str, str]) -> list[str]:
    found = []
    taken = interpolations(compose)
    for variable, op, _ in taken:
        if variable not in env_example:
            found.append(f"compose: ${{{variable}}} is not listed in .env.example")
        elif op == ":?" and not env_example[variable]:
            found.append(f".env.example: {variable} is required by the compose file; give it a placeholder")
        if any(word in variable for word in SECRET_WORDS) and op != ":?":
            found.append(
                f"compose: the secret {variable} must be required (${{{variable}:?...}}), never defaulted"
            )
    for variable, value in env_example.items():
        if variable not in {name for name, _, _ in taken}:
            found.append(f".env.example: {variable} is not used by the compose file")
        if any(word in variable for word in SECRET_WORDS) and value != PLACEHOLDER:
            found.append(f".env.example: {variable} must hold the placeholder {PLACEHOLDER!r}, not a value")
    return found


def _command_problems(services: dict, queues: set[str], moto_version: str) -> list[str]:
    found = []
    web = services.get("web", {}).get("command") or []
    if web[:2] != ["gunicorn", "config.wsgi"]:
        found.append("web: must run `gunicorn config.wsgi`")
    if _option(web, "-c", "--config"):
        found.append("web: no --config: gunicorn reads gunicorn.conf.py from the project's root")
    bind = _option(web, "-b", "--bind") or ""
    host, _, port = bind.rpartition(":")
    if host != "0.0.0.0" or not port.isdigit():
        found.append(f"web: --bind must be 0.0.0.0:PORT inside the container, not {bind!r}")
    published = [str(p).rsplit(":", 1)[-1] for p in services.get("web", {}).get("ports") or []]
    if port not in published:
        found.append(f"web: gunicorn listens on {port}, but the published ports are {published}")
    probe = (services.get("web", {}).get("healthcheck") or {}).get("test") or []
    if probe[1:] != ["python", "deploy/healthcheck.py", port]:
        found.append(f"web: the healthcheck must be deploy/healthcheck.py on gunicorn's port {port}")
    worker = services.get("worker", {}).get("command") or []
    if worker[:4] != ["celery", "-A", "config", "worker"]:
        found.append("worker: must run `celery -A config worker`")
    consumed = set((_option(worker, "-Q", "--queues") or "").split(","))
    if consumed != queues:
        found.append(f"worker: -Q must name every routed queue {sorted(queues)}, not {sorted(consumed)}")
    beat = services.get("beat", {})
    if (beat.get("command") or [])[:4] != ["celery", "-A", "config", "beat"]:
        found.append("beat: must run `celery -A config beat`")
    if (beat.get("deploy") or {}).get("replicas", 1) != 1:
        found.append("beat: exactly one replica (two would send the schedule twice)")
    if "manage.py migrate" not in " ".join(services.get("migrate", {}).get("command") or []):
        found.append("migrate: must run `manage.py migrate`")
    if services.get("s3-bucket", {}).get("command") != ["python", "deploy/s3_bucket.py"]:
        found.append("s3-bucket: must run deploy/s3_bucket.py")
    image = str(services.get("s3", {}).get("image", ""))
    if (
        image.startswith("motoserver/moto:")
        and image.split(":")[1].split(".")[0] != moto_version.split(".")[0]
    ):
        found.append(f"s3: {image} is not the moto major version the tests run ({moto_version})")
    return found


def _dockerfile_problems(dockerfile: str, reads: Reads, dockerignore: str) -> list[str]:
    found = []
    lines = [line.strip() for line in dockerfile.replace("\\\n", " ").splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    if not instructions or instructions[0] != "FROM python:3.11-slim":
        found.append("Dockerfile: must start FROM python:3.11-slim")
    if "WORKDIR /app" not in instructions:
        found.append("Dockerfile: WORKDIR /app (gunicorn reads gunicorn.conf.py from it)")
    text = " ".join(instructions)
    for needed in (
        "COPY requirements.txt",
        "pip install -r requirements.txt",
        "manage.py collectstatic --noinput",
    ):
        if needed not in text:
            found.append(f"Dockerfile: missing `{needed}`")
    for line in instructions:
        if line.startswith("ENV "):
            for variable in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", line[4:]):
                if variable not in reads and not RUNTIME_VARIABLES.match(variable):
                    found.append(f"Dockerfile: ENV {variable} is not read by config/")
    ignored = {
        line.strip() for line in dockerignore.splitlines() if line.strip() and not line.startswith("#")
    }
    for needed in ("gunicorn.conf.py", "manage.py", "deploy", "requirements.txt", "config"):
        if needed in ignored:
            found.append(f"Dockerfile.dockerignore: {needed} must reach the image")
    return found


def main() -> int:
    import os
    from importlib.metadata import version

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    queues = {queue.name for queue in settings.CELERY_TASK_QUEUES}
    found = problems(
        yaml.safe_load((DEPLOY / "compose.yaml").read_text()),
        env_file((DEPLOY / ".env.example").read_text()),
        (DEPLOY / "Dockerfile").read_text(),
        settings_reads(ROOT / "config"),
        documented_names((ROOT / "docs" / "deployment.md").read_text()),
        queues,
        version("moto"),
        (DEPLOY / "Dockerfile.dockerignore").read_text(),
    )
    for problem in found:
        print(problem)
    if not found:
        services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
        print(f"deploy: {len(services)} services checked, queues {','.join(sorted(queues))}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
