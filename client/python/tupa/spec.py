"""Job specs from Python: a dict, a YAML file or YAML text -> JobSpec.

The dict has the shape of the YAML spec (DESIGN §4): quantities as the CLI
takes them ("16Gi", "2h", "25.00"), `gpu_type` a name or a list,
`launch` per-gpu or per-node. Only shapes and types are checked here (an
InvalidArgument naming the field); ranges and consistency are the
scheduler's, which names the field the same way.
"""

import datetime
import os
import re

import yaml
from google.protobuf import duration_pb2, timestamp_pb2

from tupa.errors import invalid
from tupa.v1 import job_pb2

_TOP = {"name", "team", "priority", "resources", "max_runtime", "max_cost",
        "retries", "train", "command", "env", "launch", "user",
        "start_window", "deadline"}
_RESOURCES = {"gpus", "nodes", "gpu_type", "cpu", "memory", "labels"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$")
_MEMORY_UNITS = {None: 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
                 "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
# Spec fields a keyword of submit() sets, as the CLI's flags do (DESIGN §3).
OVERRIDES = {
    "name": ("name",), "team": ("team",), "priority": ("priority",),
    "gpus": ("resources", "gpus"), "nodes": ("resources", "nodes"),
    "gpu_type": ("resources", "gpu_type"), "cpu": ("resources", "cpu"),
    "memory": ("resources", "memory"), "max_runtime": ("max_runtime",),
    "max_cost": ("max_cost",), "retries": ("retries",), "launch": ("launch",),
    "command": ("command",), "start_window": ("start_window",),
    "deadline": ("deadline",), "train": ("train",),
}


def yaml_text(spec):
    """The YAML text of a spec given as a path or as text; None for a dict."""
    if isinstance(spec, dict):
        return None
    if isinstance(spec, os.PathLike) or (
            isinstance(spec, str) and "\n" not in spec and os.path.isfile(spec)):
        try:
            with open(spec, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise invalid("spec", f"cannot read {spec}: {e.strerror}") from None
    if isinstance(spec, str):
        if "\n" not in spec and spec.strip().endswith((".yaml", ".yml")):
            raise invalid("spec", f"no such file: {spec}")
        return spec
    raise invalid("spec", f"must be a dict, a path or YAML text, not {type(spec).__name__}")


def load(spec):
    """A spec dict from a dict (copied), a path to a YAML file or YAML text."""
    text = yaml_text(spec)
    return _copy(spec) if text is None else _parse_yaml(text)


def _copy(d):
    if isinstance(d, dict):
        return {k: _copy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_copy(v) for v in d]
    return d


def _parse_yaml(text):
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise invalid("spec", f"bad YAML{where}: {getattr(e, 'problem', e)}") from None
    if not docs:
        raise invalid("spec", "is empty")
    if len(docs) > 1:
        raise invalid("spec", "holds more than one YAML document (separated by ---); "
                              "give one job per spec")
    if not isinstance(docs[0], dict):
        raise invalid("spec", "must be a YAML mapping")
    return docs[0]


def apply_overrides(spec, overrides):
    """Sets the fields named by submit()'s keywords; `env` is merged."""
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "env":
            if not isinstance(value, dict):
                raise invalid("env", "must be a dict of NAME: value")
            if not isinstance(spec.get("env"), dict):
                spec["env"] = {}
            spec["env"].update(value)
            continue
        path = OVERRIDES.get(key)
        if path is None:
            raise invalid(key, "unknown override (known: "
                          + ", ".join(sorted(list(OVERRIDES) + ["env"])) + ")")
        node = spec
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[path[-1]] = value
    return spec


def _keys(d, field, known):
    if not isinstance(d, dict):
        raise invalid(field, "must be a mapping")
    for k in d:
        if not isinstance(k, str):
            raise invalid(field or "spec", "keys must be strings")
        if k not in known:
            where = f"{field}.{k}" if field else k
            raise invalid(where, "unknown field (known: " + ", ".join(sorted(known)) + ")")


def _str(v, field):
    if isinstance(v, (dict, list)) or v is None:
        raise invalid(field, "must be a scalar value")
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _int(v, field):
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise invalid(field, f"bad integer \"{v}\"")
    try:
        n = int(v)
    except ValueError:
        raise invalid(field, f"bad integer \"{v}\"") from None
    if not -2**31 <= n < 2**31:
        raise invalid(field, "out of range")
    return n


def _number(v, field):
    if isinstance(v, bool):
        raise invalid(field, f"bad number \"{v}\"")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise invalid(field, f"bad number \"{v}\"") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise invalid(field, f"bad number \"{v}\"")
    return x


def _duration(v, field):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        seconds = float(v)
    else:
        text = _str(v, field)
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise invalid(field, f"bad duration \"{text}\" (expected e.g. 90s, 2h, 1h30m, 1d)")
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    d = duration_pb2.Duration()
    d.seconds = int(seconds)
    return d


def _memory(v, field):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    text = _str(v, field)
    m = _MEMORY.match(text)
    if not m:
        raise invalid(field, f"bad size \"{text}\" (expected a size such as 512Mi, 16Gi, 2G)")
    return int(float(m.group(1)) * _MEMORY_UNITS[m.group(2)])


def _timestamp(v, field):
    ts = timestamp_pb2.Timestamp()
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            raise invalid(field, "needs a time zone")
        ts.FromDatetime(v.astimezone(datetime.timezone.utc))
        return ts
    text = _str(v, field)
    try:
        ts.FromJsonString(text)
    except ValueError:
        raise invalid(field, f"bad time \"{text}\" (expected RFC 3339, e.g. "
                             "2026-12-03T06:00:00-03:00)") from None
    return ts


def _string_map(v, field, out):
    if not isinstance(v, dict):
        raise invalid(field, "must be a mapping")
    for k, value in v.items():
        out[_str(k, field)] = _str(value, f"{field}.{k}")


def _message(d, field, msg):
    """Fills a protobuf message from a dict, by field name, naming paths."""
    if not isinstance(d, dict):
        raise invalid(field, "must be a mapping")
    fields = msg.DESCRIPTOR.fields_by_name
    _keys(d, field, set(fields))
    for k, v in d.items():
        path = f"{field}.{k}"
        fd = fields[k]
        if fd.message_type is not None and fd.label != fd.LABEL_REPEATED:
            _message(v, path, getattr(msg, k))
        elif fd.label == fd.LABEL_REPEATED:
            if not isinstance(v, list):
                raise invalid(path, "must be a list")
            target = getattr(msg, k)
            for i, item in enumerate(v):
                target.append(_scalar(fd, item, f"{path}[{i}]"))
        else:
            setattr(msg, k, _scalar(fd, v, path))


def _scalar(fd, v, field):
    if fd.type in (fd.TYPE_INT32, fd.TYPE_INT64, fd.TYPE_UINT32, fd.TYPE_UINT64):
        n = _int(v, field) if fd.type == fd.TYPE_INT32 else int(_str(v, field))
        if fd.type == fd.TYPE_UINT32 and not 0 <= n < 2**32:
            raise invalid(field, "out of range")
        return n
    if fd.type in (fd.TYPE_DOUBLE, fd.TYPE_FLOAT):
        return _number(v, field)
    if fd.type == fd.TYPE_BOOL:
        return bool(v)
    return _str(v, field)


def to_job_spec(spec):
    """The JobSpec of a spec dict; InvalidArgument names a mis-shaped field."""
    _keys(spec, "", _TOP)
    out = job_pb2.JobSpec()
    for key in ("name", "team", "user", "start_window"):
        if spec.get(key) is not None:
            setattr(out, key, _str(spec[key], key))
    for key in ("priority", "retries"):
        if spec.get(key) is not None:
            setattr(out, key, _int(spec[key], key))
    res = spec.get("resources")
    if res is not None:
        _keys(res, "resources", _RESOURCES)
        r = out.resources
        if res.get("gpus") is not None:
            r.gpus = _number(res["gpus"], "resources.gpus")
        if res.get("nodes") is not None:
            r.nodes = _int(res["nodes"], "resources.nodes")
        if res.get("cpu") is not None:
            r.cpu = _number(res["cpu"], "resources.cpu")
        if res.get("memory") is not None:
            r.memory_bytes = _memory(res["memory"], "resources.memory")
        types = res.get("gpu_type")
        if types is not None:
            for i, t in enumerate(types if isinstance(types, list) else [types]):
                r.gpu_type.append(_str(t, f"resources.gpu_type[{i}]"))
        if res.get("labels") is not None:
            _string_map(res["labels"], "resources.labels", r.labels)
    if spec.get("max_runtime") is not None:
        out.max_runtime.CopyFrom(_duration(spec["max_runtime"], "max_runtime"))
    if spec.get("max_cost") is not None:
        out.max_cost = _str(spec["max_cost"], "max_cost")
    if spec.get("train") is not None:
        _message(spec["train"], "train", out.train)
    cmd = spec.get("command")
    if cmd is not None:
        if not isinstance(cmd, list):
            raise invalid("command", "must be a list (argv), e.g. [python, train.py]")
        if not cmd:
            raise invalid("command", "must not be empty")
        out.command.extend(_str(a, f"command[{i}]") for i, a in enumerate(cmd))
    if spec.get("env") is not None:
        _string_map(spec["env"], "env", out.env)
    if spec.get("deadline") is not None:
        out.deadline.CopyFrom(_timestamp(spec["deadline"], "deadline"))
    launch = spec.get("launch")
    if launch is not None:
        modes = {"per-gpu": job_pb2.LAUNCH_MODE_PER_GPU,
                 "per-node": job_pb2.LAUNCH_MODE_PER_NODE}
        if launch not in modes:
            raise invalid("launch", f"bad value \"{launch}\" (expected per-gpu or per-node)")
        out.launch = modes[launch]
    return out


def build(spec, overrides=None):
    """load() + apply_overrides() + to_job_spec()."""
    d = load(spec)
    apply_overrides(d, overrides or {})
    return to_job_spec(d)
