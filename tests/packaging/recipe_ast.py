"""Reads a Spack package.py without Spack: its syntax tree gives the directives (version, variant,
depends_on, conflicts, with when(...)), the base classes, the imports and the CMake definitions that
cmake_args passes. Nothing is imported or executed.
"""

import ast
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DEPTYPES = ("build", "link")  # Spack's default for depends_on without type=


@dataclass
class Dependency:
    spec: str          # the spec text; f-string holes become {}
    types: tuple
    when: str          # the `when=` and enclosing `with when(...)` conditions, joined by spaces
    line: int

    @property
    def name(self) -> str:
        return self.spec.split()[0].split("@")[0].split("+")[0].split("~")[0]


@dataclass
class Recipe:
    class_name: str = ""
    bases: list = field(default_factory=list)
    imports: set = field(default_factory=set)
    versions: list = field(default_factory=list)
    variants: set = field(default_factory=set)
    dependencies: list = field(default_factory=list)
    methods: set = field(default_factory=set)
    cmake_defines: dict = field(default_factory=dict)  # CMake variable -> variant name or None
    conflicts: list = field(default_factory=list)  # Dependency-like: spec, when (types empty), line
    which_without_required: list = field(default_factory=list)  # lines of which(...) lacking required=True


def _text(node, names=None) -> str:
    """A string literal or f-string as text; a hole is the value of its name in `names` (a loop
    variable over a module-level tuple of strings) or {}; '' for anything else."""
    names = names or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        def hole(v):
            if isinstance(v, ast.Constant):
                return str(v.value)
            if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in names:
                return names[v.value.id]
            return "{}"
        return "".join(hole(v) for v in node.values)
    return ""


def _string_tuple(node):
    """The strings of a tuple or list literal of strings, or None."""
    if isinstance(node, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _types(node) -> tuple:
    if node is None:
        return DEFAULT_DEPTYPES
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_text(e) for e in node.elts)
    return (_text(node),)


class _ClassVisitor(ast.NodeVisitor):
    """Walks the package class body, keeping the stack of `with when(...)` conditions."""

    def __init__(self, recipe: Recipe, constants: dict):
        self.recipe = recipe
        self.constants = constants  # module-level tuples of strings
        self.names = {}  # loop variable -> its value in the pass being visited
        self.when = []

    def visit_For(self, node: ast.For):
        """`for x in NAME:` over a module-level tuple of strings: the body once per value, so f-strings
        in it read as what Spack sees; any other loop: the body once, holes as {}."""
        values = self.constants.get(node.iter.id) if isinstance(node.iter, ast.Name) else None
        if values is None or not isinstance(node.target, ast.Name):
            self.generic_visit(node)
            return
        for value in values:
            self.names[node.target.id] = value
            for statement in node.body:
                self.visit(statement)
        del self.names[node.target.id]

    def visit_With(self, node: ast.With):
        conditions = [_text(item.context_expr.args[0], self.names) for item in node.items
                      if isinstance(item.context_expr, ast.Call) and _call_name(item.context_expr) == "when"]
        self.when.extend(conditions)
        self.generic_visit(node)
        del self.when[len(self.when) - len(conditions):]

    def visit_FunctionDef(self, node: ast.FunctionDef):
        self.recipe.methods.add(node.name)
        if node.name == "cmake_args":
            self._cmake_args(node)
        # In a test, a missing binary must fail the test with a message, not as a TypeError on None.
        # Elsewhere the recipe may handle None itself (detect_dev_src_change without git).
        tests = node.name == "check" or node.name.startswith("test_")
        for call in ast.walk(node) if tests else ():
            if isinstance(call, ast.Call) and _call_name(call) == "which":
                required = _keyword(call, "required")
                if not (isinstance(required, ast.Constant) and required.value is True):
                    self.recipe.which_without_required.append(call.lineno)
        # Directives live in the class body, not in methods: do not descend.

    def visit_Call(self, node: ast.Call):
        name = _call_name(node)
        first = _text(node.args[0], self.names) if node.args else ""
        if name == "version" and first:
            self.recipe.versions.append(first)
        elif name == "variant" and first:
            self.recipe.variants.add(first)
        elif name in ("depends_on", "conflicts") and first:
            when = " ".join(self.when + [_text(_keyword(node, "when"), self.names)]).strip()
            if name == "depends_on":
                self.recipe.dependencies.append(Dependency(first, _types(_keyword(node, "type")), when, node.lineno))
            else:
                self.recipe.conflicts.append(Dependency(first, (), when, node.lineno))
        self.generic_visit(node)

    def _cmake_args(self, node: ast.FunctionDef):
        for call in ast.walk(node):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            name = _call_name(call)
            if name == "define":
                self.recipe.cmake_defines[_text(call.args[0])] = None
            elif name == "define_from_variant":
                variant = _text(call.args[1]) if len(call.args) > 1 else _text(call.args[0]).lower()
                self.recipe.cmake_defines[_text(call.args[0])] = variant


def read_recipe(path: Path) -> Recipe:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    recipe = Recipe()
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values = _string_tuple(node.value)
            if values is not None:
                constants[node.targets[0].id] = values
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            recipe.imports.add(node.module)
        elif isinstance(node, ast.ClassDef):
            recipe.class_name = node.name
            recipe.bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
            visitor = _ClassVisitor(recipe, constants)
            for statement in node.body:
                visitor.visit(statement)
    return recipe
