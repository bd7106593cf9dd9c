"""Enough of Spack's spec syntax to check the specs we write (spack.yaml, depends_on): the name, the
version constraint, boolean variants (+x, ~x) and key=value variants of the root node (anything
after ^ belongs to a dependency and is ignored).
"""

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)")
_VERSION = re.compile(r"@(=?)([^\s+~%^]+)")
_BOOL = re.compile(r"(?<![\w=/.,:-])([+~])([A-Za-z_][\w-]*)")
_VALUE = re.compile(r"([A-Za-z_][\w-]*)=([^\s]+)")


@dataclass
class Spec:
    name: str
    version: str = ""            # '12', '2.6:2', '=0.1.0' (exact) or '' for any
    flags: dict = field(default_factory=dict)    # variant -> True (+) / False (~)
    values: dict = field(default_factory=dict)   # variant -> list of values

    def has(self, variant: str, value: str) -> bool:
        return value in self.values.get(variant, [])


def parse_spec(text: str) -> Spec:
    root = text.split("^")[0]
    name = _NAME.match(root)
    if not name:
        raise ValueError(f"not a spec: {text!r}")
    spec = Spec(name.group(1))
    rest = root[name.end():]
    version = _VERSION.search(rest.split()[0] if rest.split() else "")
    if version:
        spec.version = version.group(1) + version.group(2)
    without_values = _VALUE.sub(" ", rest)
    for sign, variant in _BOOL.findall(without_values):
        spec.flags[variant] = sign == "+"
    for variant, value in _VALUE.findall(rest):
        spec.values[variant] = value.split(",")
    return spec


def _release(text: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def version_range(constraint: str):
    """'2.6:2' -> ((2, 6), (2,)); '12' -> ((12,), (12,)); '=0.1.0' -> exact; '' -> (None, None).
    An upper bound like '2' admits every 2.x, as in Spack."""
    constraint = constraint.lstrip("=")
    if not constraint:
        return None, None
    if ":" not in constraint:
        return _release(constraint), _release(constraint)
    low, high = constraint.split(":", 1)
    return (_release(low) or None), (_release(high) or None)


def admits_major(constraint: str, major: int) -> bool:
    """Whether a version constraint lets in some release of this major version."""
    low, high = version_range(constraint)
    return (low is None or low[0] <= major) and (high is None or high[0] >= major)
