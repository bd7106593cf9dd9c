"""What the CMake build looks for: every find_package, pkg_check_modules, find_library and find_path
in the source tree, with where it is, plus the project version and the minimum CMake version.

Spack cannot run here, so tests/packaging compares these against the recipe's depends_on.
"""

import re
from pathlib import Path

# Keywords that end the list of names in find_library/find_path/pkg_check_modules.
_KEYWORDS = {
    "NAMES", "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "ENV", "REQUIRED", "QUIET", "NO_DEFAULT_PATH",
    "NO_CACHE", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH",
    "NO_SYSTEM_ENVIRONMENT_PATH", "NO_CMAKE_SYSTEM_PATH", "NAMES_PER_DIR", "REGISTRY_VIEW",
}
_COMMAND = re.compile(r"\b(find_package|pkg_check_modules|find_library|find_path)\s*\(([^)]*)\)", re.I)
_SKIPPED_DIRS = {"build", ".git", "spack", "out"}


def cmake_files(root: Path):
    """Every CMakeLists.txt and *.cmake of the project, skipping build trees and the Spack repo."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts and (rel.parts[0] in _SKIPPED_DIRS or rel.parts[0].startswith(".")):
            continue
        if path.is_file() and (path.name == "CMakeLists.txt" or path.suffix == ".cmake"):
            yield path


def _strip_comments(text: str) -> str:
    """Drops # comments (outside quoted strings), keeping line breaks so line numbers hold."""
    lines = []
    for line in text.splitlines():
        quoted = False
        for i, char in enumerate(line):
            if char == '"':
                quoted = not quoted
            elif char == "#" and not quoted:
                line = line[:i]
                break
        lines.append(line)
    return "\n".join(lines)


def _names_after(args, start):
    """find_library(VAR name ...) or find_library(VAR NAMES a b ...): the names searched for."""
    if len(args) <= start:
        return []
    if args[start].upper() == "NAMES":
        names = []
        for arg in args[start + 1:]:
            if arg.upper() in _KEYWORDS:
                break
            names.append(arg)
        return names
    return [args[start]]


def _keys(command: str, args):
    command = command.lower()
    if command == "find_package":
        return [("package", args[0])]
    if command == "pkg_check_modules":
        modules = [a for a in args[1:] if a.upper() not in _KEYWORDS]
        return [("pkg-config", re.split(r"[<>=]", m)[0]) for m in modules]
    kind = "library" if command == "find_library" else "header"
    return [(kind, name) for name in _names_after(args, 1)]


def find_dependencies(root: Path):
    """[(key, where)] for everything CMake looks for; key is (kind, name), where is 'file:line'."""
    found = []
    for path in cmake_files(root):
        text = _strip_comments(path.read_text(encoding="utf-8"))
        for match in _COMMAND.finditer(text):
            args = [a.strip('"') for a in match.group(2).split()]
            if not args:
                continue
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(root)}:{line}"
            found.extend((key, where) for key in _keys(match.group(1), args))
    return found


def _top_level(root: Path, pattern: str, what: str) -> str:
    """The first group of pattern in the top CMakeLists.txt; what names the call in the error."""
    match = re.search(pattern, (root / "CMakeLists.txt").read_text(encoding="utf-8"))
    if not match:
        raise ValueError(f"CMakeLists.txt: no {what}")
    return match.group(1)


def project_version(root: Path) -> str:
    return _top_level(root, r"project\s*\(\s*\w+[^)]*?\bVERSION\s+([0-9][0-9.]*)", "project(... VERSION x.y.z)")


def minimum_cmake_version(root: Path) -> str:
    return _top_level(root, r"cmake_minimum_required\s*\(\s*VERSION\s+([0-9][0-9.]*)",
                      "cmake_minimum_required(VERSION ...)")


def _names_matching(root: Path, patterns):
    """Every name the regular expressions `patterns` capture in the project's CMake files."""
    names = set()
    for path in cmake_files(root):
        text = _strip_comments(path.read_text(encoding="utf-8"))
        for pattern in patterns:
            names.update(re.findall(pattern, text))
    return names


def cache_variables(root: Path):
    """Names the user (or Spack) can set with -D: option(...) and set(... CACHE ...)."""
    return _names_matching(root, [r"\boption\s*\(\s*(\w+)", r"\bset\s*\(\s*(\w+)\b[^)]*\bCACHE\b"])


def variables_read(root: Path):
    """Every variable a CMake file of the project reads (${NAME}, or if(NAME ...)): the -D settings a
    recipe may pass beyond the options and cache variables (CUDAToolkit_ROOT)."""
    return _names_matching(root, [r"\$\{(\w+)\}", r"\bif\s*\(\s*(?:NOT\s+)?(\w+)"])
