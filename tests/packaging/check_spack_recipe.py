#!/usr/bin/env python3
"""The Spack environment (spack.yaml) and recipe (spack/repo/...) against the CMake build.

This checks what can be checked without Spack (spack_real.sh runs a real one):
spack.yaml is valid YAML with the C4130 specs; package.py compiles with Python 3 and declares every
dependency CMake looks for, with the right types and conditions; the versions agree; the CMake options
the recipe sets exist. Every problem is reported with what to change.

Usage: check_spack_recipe.py SOURCE_DIR
"""

import py_compile
import re
import sys
import tempfile
from pathlib import Path

import cmake_dependencies as cmake
from recipe_ast import read_recipe
from spack_spec import admits_major, parse_spec

# What CMake looks for -> the Spack packages that provide it (depending on any one of them will do).
# None: comes with the compiler or the C library, nothing to depend on. A CMake dependency missing
# here fails the test: add it here and a depends_on to package.py.
CMAKE_TO_SPACK = {
    ("package", "MPI"): {"mpi", "openmpi"},
    ("package", "HDF5"): {"hdf5"},
    ("package", "CLI11"): {"cli11"},
    ("package", "nlohmann_json"): {"nlohmann-json"},
    ("package", "ZLIB"): {"zlib-api", "zlib", "zlib-ng"},
    ("package", "Catch2"): {"catch2"},
    ("package", "CUDAToolkit"): {"cuda"},
    ("package", "PkgConfig"): {"pkgconfig"},
    ("package", "Threads"): None,
    ("package", "OpenMP"): None,
    ("pkg-config", "libturbojpeg"): {"libjpeg-turbo"},
    ("pkg-config", "libjpeg"): {"libjpeg-turbo"},
    ("library", "dnnl"): {"onednn"},
    ("header", "oneapi/dnnl/dnnl.hpp"): {"onednn"},
    ("library", "cudnn"): {"cudnn"},
    ("header", "cudnn.h"): {"cudnn"},
    ("library", "nccl"): {"nccl"},
    ("header", "nccl.h"): {"nccl"},
}

# Dependencies CMake only looks for under an option: the recipe must tie them to the variant.
CONDITIONAL = {"cuda": "+cuda", "cudnn": "+cuda", "nccl": "+cuda", "catch2": "+tests"}

# Dependency types, by what the dependency is to us.
BUILD_ONLY = {"cmake", "pkgconfig", "cli11", "nlohmann-json", "catch2"}  # tools and header-only
LINKED = {"mpi", "hdf5", "onednn", "libjpeg-turbo", "zlib-api", "cuda", "cudnn", "nccl"}
AT_RUN_TIME = {"mpi"}  # jobs launch through the MPI's own launcher and PMIx

# Major versions whose API the code is written against (a newer major changed it).
PINNED_MAJOR = {"onednn": 2, "catch2": 2}

# The C4130 P100 environment the issue asks for.
ENV_SPECS = ["dptrain", "cuda", "cudnn", "nccl", "openmpi", "hdf5", "onednn", "libjpeg-turbo", "cli11", "catch2"]
RECIPE_DEFINES = {"DPTRAIN_CUDA", "DPTRAIN_BUILD_TESTS", "DPTRAIN_BUILT_BY", "DPTRAIN_SPACK_SPEC", "DPTRAIN_CCACHE",
                  "CMAKE_CUDA_ARCHITECTURES", "CMAKE_CUDA_COMPILER", "CUDAToolkit_ROOT", "CUDNN_ROOT", "NCCL_ROOT"}

# The one environment users and tests use: at the top level, beside CMakeLists.txt. Spack's writes
# there (spack.lock, the view, build-* links) are ignored by git, and so by the recipe's
# detect_dev_src_change().
ENV_FILE = Path("spack.yaml")
# The example for centres: every dependency an external. Same recipe repository, same clone.
SITE_ENV_FILE = Path("spack") / "site-externals" / "spack.yaml"
# The guide's page that tells users how to install with Spack (its section "Install with Spack").
INSTALL_PAGE = Path("docs") / "installing.md"

# The GPUs CUDA 13 no longer reaches: the recipe itself must keep them on CUDA 12.
CUDA_12_ARCHS = ("60", "70")


class Problems(list):
    def check(self, condition, message):
        if not condition:
            self.append(message)
        return condition


def load_yaml(path: Path):
    try:
        import yaml
    except ImportError:
        sys.exit("FAIL: this test needs PyYAML: apt-get install python3-yaml (scripts/install-deps.sh does)")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        sys.exit(f"FAIL: {path} is not valid YAML: {error}")


def resolve(path_text: str, env_dir: Path) -> Path:
    """A path in spack.yaml: $env is the environment's directory, relative paths start there."""
    path_text = path_text.replace("${env}", str(env_dir)).replace("$env", str(env_dir))
    path = Path(path_text)
    return (path if path.is_absolute() else env_dir / path).resolve()


def check_environment(env: dict, root: Path, version: str, problems: Problems):
    """spack.yaml: the specs, Slurm external, unify, view, repos and develop. Returns the repo dir."""
    env_dir = (root / ENV_FILE).parent
    specs = {}
    for text in env.get("specs") or []:
        spec = parse_spec(str(text))
        specs[spec.name] = spec
    for name in ENV_SPECS:
        problems.check(name in specs, f"spack.yaml: specs lacks {name}")
    if "dptrain" in specs:
        dptrain = specs["dptrain"]
        problems.check(dptrain.flags.get("cuda") is True, "spack.yaml: the dptrain spec must have +cuda")
        problems.check(dptrain.values.get("cuda_arch") == ["60"],
                       "spack.yaml: the dptrain spec must have cuda_arch=60 (the C4130's P100)")
    if "cuda" in specs:
        problems.check(re.fullmatch(r"=?12(\.[\d.]*)?", specs["cuda"].version or "") is not None,
                       f"spack.yaml: cuda must be a 12.x release (cuda_arch=60 needs CUDA <= 12.9), "
                       f"found '{specs['cuda'].version or 'any version'}'")
    if "openmpi" in specs:
        openmpi = specs["openmpi"]
        problems.check(openmpi.flags.get("cuda") is not True,
                       "spack.yaml: openmpi must not have +cuda (dptrain stages gradients through host memory; "
                       "+cuda does not make UCX CUDA-aware either)")
        problems.check(openmpi.flags.get("fortran") is False,
                       "spack.yaml: openmpi must have ~fortran (its default +fortran wants a Fortran compiler)")
        problems.check(openmpi.has("fabrics", "ucx"), "spack.yaml: openmpi must have fabrics=ucx")
        problems.check(openmpi.has("schedulers", "slurm"), "spack.yaml: openmpi must have schedulers=slurm")
    if "catch2" in specs:
        problems.check(admits_major(specs["catch2"].version, 2) and specs["catch2"].version != "",
                       "spack.yaml: catch2 must be pinned to 2 (the tests use the Catch2 v2 API)")

    packages = env.get("packages") or {}
    slurm = packages.get("slurm") or {}
    problems.check(slurm.get("buildable") is False,
                   "spack.yaml: packages:slurm:buildable must be false (sites run their own Slurm)")
    externals = slurm.get("externals") or []
    problems.check(externals and all(str(e.get("spec", "")).startswith("slurm")
                                     and ("prefix" in e or "modules" in e) for e in externals),
                   "spack.yaml: packages:slurm:externals needs an entry with a slurm spec and a prefix")
    problems.check((env.get("concretizer") or {}).get("unify") is True, "spack.yaml: concretizer:unify must be true")
    problems.check(bool(env.get("view")), "spack.yaml: the environment must have a view")

    return check_clone_paths(env, ENV_FILE, root, version, problems)


def check_clone_paths(env: dict, env_file: Path, root: Path, version: str, problems: Problems):
    """repos: and develop: of an environment in this clone. Returns the recipe repository's dir."""
    env_dir = (root / env_file).parent
    repos = env.get("repos") or []
    repo_paths = list(repos.values()) if isinstance(repos, dict) else list(repos)
    ours = [str(p) for p in repo_paths if "repo/spack_repo" in str(p)]
    if not problems.check(ours, f"{env_file}: repos must include the recipe repository under spack/repo"):
        return None
    # `spack env create NAME <clone>/spack.yaml` makes relative paths absolute, into the clone;
    # $env would name the new environment's own directory, where there is no recipe.
    problems.check("$env" not in ours[0] and not Path(ours[0]).is_absolute(),
                   f"{env_file}: the recipe repository's path must be relative to the file (not $env/..., "
                   f"which `spack env create` resolves in the new environment; not absolute), found '{ours[0]}'")
    develop = ((env.get("develop") or {}).get("dptrain")) or {}
    problems.check(resolve(str(develop.get("path", "")), env_dir) == root.resolve(),
                   f"{env_file}: develop:dptrain:path must be the repository root, found '{develop.get('path')}'")
    develop_version = parse_spec(str(develop.get("spec", "dptrain"))).version
    problems.check(develop_version == f"={version}",
                   f"{env_file}: develop:dptrain:spec must be dptrain@={version} (CMakeLists.txt's version), "
                   f"found '{develop.get('spec')}'")
    return resolve(ours[0], env_dir)


def check_site_environment(root: Path, version: str, problems: Problems, repo_dir):
    """spack/site-externals/spack.yaml: the same recipe and clone; every package an external."""
    if not problems.check((root / SITE_ENV_FILE).is_file(), f"{SITE_ENV_FILE} is missing (the example for centres)"):
        return
    env = (load_yaml(root / SITE_ENV_FILE) or {}).get("spack") or {}
    site_repo = check_clone_paths(env, SITE_ENV_FILE, root, version, problems)
    problems.check(site_repo is None or site_repo == repo_dir,
                   f"{SITE_ENV_FILE}: repos must name the same recipe repository as {ENV_FILE}")
    for name, entry in (env.get("packages") or {}).items():
        if name == "all":
            continue
        problems.check(entry.get("buildable") is False and entry.get("externals"),
                       f"{SITE_ENV_FILE}: packages:{name} must be an external with buildable: false")


def check_readme(env: dict, root: Path, problems: Problems):
    """The guide's Spack section (docs/installing.md) says what the environment does: where it is, and
    the MPI spec."""
    page = root / INSTALL_PAGE
    readme = page.read_text(encoding="utf-8") if page.is_file() else ""
    activate = "spack env activate ."
    problems.check(activate in readme, f"{INSTALL_PAGE} must tell users to run '{activate}' (spack.yaml is at the top)")
    problems.check("spack/env" not in readme, f"{INSTALL_PAGE} still names spack/env (the environment is spack.yaml)")
    problems.check(SITE_ENV_FILE.as_posix() in readme, f"{INSTALL_PAGE} must point centres to {SITE_ENV_FILE}")
    for text in env.get("specs") or []:
        if str(text).startswith("openmpi"):
            problems.check(str(text) in readme, f"{INSTALL_PAGE} must name the environment's MPI spec '{text}'")


def check_repository(repo_dir: Path, problems: Problems):
    """The Package API v2 layout: .../spack_repo/<namespace>/{repo.yaml,packages/dptrain/package.py}."""
    config = load_yaml(repo_dir / "repo.yaml") if (repo_dir / "repo.yaml").is_file() else None
    if not problems.check(config, f"{repo_dir}/repo.yaml is missing"):
        return None
    repo = config.get("repo") or {}
    problems.check(re.fullmatch(r"v2\.\d+", str(repo.get("api", ""))),
                   f"{repo_dir}/repo.yaml: api must be v2.x (the Spack v1 layout)")
    problems.check(repo_dir.parent.name == "spack_repo",
                   f"{repo_dir}: a v2 repository must sit in a directory named spack_repo")
    problems.check(repo.get("namespace", repo_dir.name) == repo_dir.name,
                   f"{repo_dir}/repo.yaml: namespace must be '{repo_dir.name}', the directory's name")
    recipe = repo_dir / "packages" / "dptrain" / "package.py"
    return recipe if problems.check(recipe.is_file(), f"{recipe} is missing") else None


def check_compiles(path: Path, problems: Problems) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            py_compile.compile(str(path), cfile=str(Path(tmp) / "package.pyc"), doraise=True)
        except py_compile.PyCompileError as error:
            problems.append(f"{path} does not compile with Python 3: {error.msg}")
            return False
    return True


def check_dependencies(recipe, root: Path, problems: Problems) -> int:
    """Every CMake dependency has a depends_on, with the right type and condition."""
    by_name = {}
    for dep in recipe.dependencies:
        by_name.setdefault(dep.name, []).append(dep)

    needed = {}  # spack name -> where CMake asks for it
    for key, where in cmake.find_dependencies(root):
        if key[0] == "pkg-config":
            needed.setdefault("pkgconfig", f"pkg_check_modules at {where}")
        if not problems.check(key in CMAKE_TO_SPACK,
                              f"{where}: CMake looks for {key[0]} '{key[1]}', which the packaging test does not "
                              f"know: add it to CMAKE_TO_SPACK in tests/packaging/check_spack_recipe.py and a "
                              f"depends_on to package.py"):
            continue
        candidates = CMAKE_TO_SPACK[key]
        if candidates is None:
            continue
        present = [name for name in sorted(candidates) if name in by_name]
        if problems.check(present, f"package.py lacks depends_on({'|'.join(sorted(candidates))}), which CMake "
                                   f"requires ({key[0]} '{key[1]}' at {where})"):
            needed.setdefault(present[0], where)
    problems.check("pkgconfig" not in needed or "pkgconfig" in by_name,
                   "package.py lacks depends_on('pkgconfig', type='build'), which pkg_check_modules needs")
    needed["cmake"] = "cmake_minimum_required"

    for name in needed:
        for dep in by_name.get(name, []):
            check_dependency(dep, problems)
        condition = CONDITIONAL.get(name)
        if condition is None:
            problems.check(any(not dep.when for dep in by_name.get(name, [])),
                           f"package.py: {name} is always required by CMake, but every depends_on of it has a when=")
    minimum = cmake.minimum_cmake_version(root)
    problems.check(any(dep.spec == f"cmake@{minimum}:" for dep in by_name.get("cmake", [])),
                   f"package.py needs depends_on('cmake@{minimum}:', type='build') (cmake_minimum_required)")
    return len(needed)


def check_dependency(dep, problems: Problems):
    where = f"package.py:{dep.line} depends_on('{dep.spec}')"
    types = set(dep.types)
    if dep.name in BUILD_ONLY:
        problems.check(types == {"build"}, f"{where}: must be type='build' (a tool or header-only), not {dep.types}")
    if dep.name in LINKED:
        problems.check("link" in types, f"{where}: a linked library must include type 'link', not {dep.types}")
    if dep.name in AT_RUN_TIME:
        problems.check("run" in types, f"{where}: must include type 'run' (jobs launch through it)")
    if dep.name in CONDITIONAL:
        problems.check(CONDITIONAL[dep.name] in dep.when.split(),
                       f"{where}: must only apply when {CONDITIONAL[dep.name]}, found when='{dep.when}'")
    if dep.name in PINNED_MAJOR and "@" in dep.spec:
        constraint = parse_spec(dep.spec).version
        major = PINNED_MAJOR[dep.name]
        problems.check(admits_major(constraint, major) and not admits_major(constraint, major + 1),
                       f"{where}: must stay on {dep.name} {major}.x (the code uses its {major}.x API)")


def check_recipe(recipe, root: Path, version: str, problems: Problems):
    problems.check("spack_repo.builtin.build_systems.cmake" in recipe.imports and "spack.package" in recipe.imports,
                   "package.py must import CMakePackage from spack_repo.builtin.build_systems.cmake and "
                   "the directives from spack.package (the Spack v1 layout)")
    problems.check({"CMakePackage", "CudaPackage"} <= set(recipe.bases),
                   f"package.py: {recipe.class_name} must derive from CMakePackage and CudaPackage")
    problems.check("tests" in recipe.variants, "package.py must declare the variant 'tests'")
    for pinned in PINNED_MAJOR:
        problems.check(any("@" in d.spec for d in recipe.dependencies if d.name == pinned),
                       f"package.py must pin {pinned} to {PINNED_MAJOR[pinned]}.x")

    numeric = [v for v in recipe.versions if re.fullmatch(r"[\d.]+", v)]
    problems.check(version in numeric, f"package.py lacks version('{version}') (CMakeLists.txt's project version)")
    if numeric:
        newest = max(numeric, key=lambda v: tuple(int(p) for p in v.split(".")))
        problems.check(newest == version,
                       f"package.py's newest version is {newest} but CMakeLists.txt says {version}")

    missing = RECIPE_DEFINES - set(recipe.cmake_defines)
    problems.check(not missing, f"package.py: cmake_args must set {', '.join(sorted(missing))}")
    options = cmake.cache_variables(root)
    read = cmake.variables_read(root)
    for name, variant in recipe.cmake_defines.items():
        if not name.startswith("CMAKE_"):
            problems.check(name in options or name in read,
                           f"package.py sets -D{name}, which no option()/set(CACHE) in CMake defines and no "
                           f"CMake file reads")
        if variant is not None:
            problems.check(variant in recipe.variants | {"cuda"},
                           f"package.py maps -D{name} from the variant '{variant}', which it does not declare")
    for arch in CUDA_12_ARCHS:
        problems.check(any(d.name == "cuda" and parse_spec(d.spec).version == ":12" and f"cuda_arch={arch}" in d.when.split()
                           and "+cuda" in d.when.split() for d in recipe.dependencies),
                       f"package.py must say depends_on('cuda@:12', when='cuda_arch={arch}') under +cuda "
                       f"(CUDA 13 dropped sm_{arch})")
    problems.check(any("nccl" in c.spec and "%gcc@14:" in c.spec.replace(" ", "")
                       for c in recipe.conflicts)
                   or any(d.name == "nccl" and "%gcc@:13" in d.spec for d in recipe.dependencies),
                   "package.py must keep NCCL <= 2.27.5 away from GCC 14 (NVIDIA/nccl#1743): "
                   "conflicts('^nccl@:2.27.5 %gcc@14:') or nccl with %gcc@:13")
    for line in recipe.which_without_required:
        problems.append(f"package.py:{line}: which(...) without required=True (a missing binary would be a "
                        f"TypeError instead of a failed test)")
    problems.check("check" in recipe.methods, "package.py needs a check() method (build-time unit tests)")
    problems.check(any(m.startswith("test_") for m in recipe.methods),
                   "package.py needs test_* methods (spack test run)")


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = Path(argv[1]).resolve()
    problems = Problems()
    version = cmake.project_version(root)
    if (root / "spack" / "env" / "spack.yaml").exists():
        problems.append("spack/env/spack.yaml: a second environment; the one environment is spack.yaml at the top")
    if not (root / ENV_FILE).is_file():
        print(f"FAIL: {ENV_FILE} is missing")
        return 1
    env = load_yaml(root / ENV_FILE)
    if not isinstance(env, dict) or not isinstance(env.get("spack"), dict):
        print(f"FAIL: {ENV_FILE} must be a mapping with a top-level 'spack:' key")
        return 1
    repo_dir = check_environment(env["spack"], root, version, problems)
    check_readme(env["spack"], root, problems)
    check_site_environment(root, version, problems, repo_dir)
    recipe_path = check_repository(repo_dir, problems) if repo_dir else None
    count = 0
    if recipe_path and check_compiles(recipe_path, problems):
        recipe = read_recipe(recipe_path)
        count = check_dependencies(recipe, root, problems)
        check_recipe(recipe, root, version, problems)
    if problems:
        print(f"FAIL: {len(problems)} problem(s) with the Spack environment or recipe:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    print(f"PASS: {ENV_FILE} ({len(env['spack']['specs'])} specs), {recipe_path.relative_to(root)} "
          f"({len(recipe.dependencies)} depends_on covering {count} packages CMake needs), version {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
